"""Every writer builds its events through a Recorder; the events are the ones it wrote by hand
before, field for field, so existing tapes rebuild identically. One representative kind per
writer, compared with an ``Event`` spelled out the way the old code built it (the id aside,
which is random: only its prefix is fixed)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from veil.agent.sessions import Sessions
from veil.clients.claude_code_state import HookState
from veil.convergence.goals import goal_for
from veil.convergence.record import AttemptLog
from veil.integrations.openai_agents import VeilSession
from veil.llm.messages import UserMessage
from veil.memory import Memory, MemoryConfig
from veil.server.keys import KEYS_SCOPE, KeyRing, digest_of
from veil.tape import Event, Store, open_store
from veil.testing import FakeClock, HashEmbedder, ScriptedModel

NOW = FakeClock().now()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(tmp_path / "shapes.db", embedder=HashEmbedder())
    yield opened
    opened.close()


def on_tape(store: Store, scope: str, kind: str) -> Event:
    """The one event of ``kind`` in ``scope``, as a writer builds it (before the store's seq)."""
    (event,) = store.read(scope, kinds=[kind])
    return replace(event, seq=None, recorded_at=None)


def test_keys(store: Store) -> None:
    new = KeyRing(store, clock=FakeClock()).create(["u1"], label="ci")
    event = on_tape(store, KEYS_SCOPE, "server.key_created")
    payload: dict[str, Any] = {
        "key_id": new.key.key_id,
        "digest": digest_of(new.token),
        "scopes": ["u1"],
        "authority": "user",
        "admin": False,
        "label": "ci",
    }
    assert event == Event(event.id, KEYS_SCOPE, "server.key_created", NOW, "admin", payload)
    assert event.id.startswith("ky_") and new.key.created_at == NOW


def test_sessions(store: Store) -> None:
    sessions = Sessions(store, scope="project:p", clock=FakeClock())
    sid = sessions.start(title="fix", model="m", session_id="s1")
    sessions.append(sid, 0, [UserMessage("hello")])
    event = on_tape(store, "project:p", "session.message")
    payload: dict[str, Any] = {
        "session_id": "s1",
        "idx": 0,
        "message": {"role": "user", "content": "hello"},
    }
    assert event == Event(event.id, "project:p", "session.message", NOW, "veil", payload)
    assert event.id.startswith("se_")


def test_attempt_log(store: Store) -> None:
    log = AttemptLog(store, "project:p", "s1", FakeClock())
    goal = log.begin("Make the test pass")
    event = on_tape(store, "project:p", "convergence.goal")
    payload: dict[str, Any] = {
        "goal_id": goal.id,
        "intent": "Make the test pass",
        "project": "project:p",
        "session_id": "s1",
        "at": "2026-01-05T09:00:00.000000+00:00",
    }
    provenance: dict[str, Any] = {"session_id": "s1"}
    expected = Event(event.id, "project:p", "convergence.goal", NOW, "harness", payload, provenance)
    assert event == expected and goal == goal_for("Make the test pass", "project:p")
    assert event.id.startswith("goal_")


def test_claude_code_hooks(store: Store) -> None:
    HookState(store, "project:p", FakeClock()).add_step("s1", "bash", "ok", False)
    event = on_tape(store, "project:p", "claude_code.step")
    payload: dict[str, Any] = {
        "id": event.id,
        "session_id": "s1",
        "at": "2026-01-05T09:00:00.000000+00:00",
        "action": "bash",
        "observation": "ok",
        "is_error": False,
    }
    provenance: dict[str, Any] = {"session_id": "s1"}
    assert event == Event(
        event.id, "project:p", "claude_code.step", NOW, "claude-code-hook", payload, provenance
    )
    assert event.id.startswith("cc_")


def test_openai_agents_session(store: Store) -> None:
    session = VeilSession("chat-1", db=store, embedder=HashEmbedder(), clock=FakeClock())
    item: Any = {"role": "user", "content": "hi"}
    asyncio.run(session.add_items([item]))
    event = on_tape(store, "openai-agents", "agents.item")
    payload: dict[str, Any] = {"session_id": "chat-1", "item": item}
    assert event == Event(event.id, "openai-agents", "agents.item", NOW, "openai-agents", payload)
    assert event.id.startswith("ag_")


def memory_on(store: Store, *responses: Any, **config: Any) -> Memory:
    return Memory(
        store,
        complete=ScriptedModel(list(responses)),
        embedder=HashEmbedder(),
        config=MemoryConfig(**config),
        clock=FakeClock(),
    )


PREFERS_VIM = {
    "facts": [
        {
            "subject": "user",
            "relation": "prefers",
            "object": "vim",
            "statement": "The user prefers vim.",
            "volatility": "durable",
            "claimant": "user",
            "supersedes": None,
        }
    ],
    "episodes": [],
}


def test_remember(store: Store) -> None:
    """The write path: the evidence by its author, the fact by the evidence's author with the
    evidence as provenance, the extraction record by Veil; all at the evidence's time."""
    memory = memory_on(store, PREFERS_VIM)
    report = memory.remember("I prefer vim.", user_id="u1", session_id="s1")
    provenance: dict[str, Any] = {"session_id": "s1", "tool_call_id": None, "source": None}
    evidence = on_tape(store, "u1", "memory.evidence")
    assert evidence == Event(
        report.evidence_id,
        "u1",
        "memory.evidence",
        NOW,
        "user",
        {"text": "I prefer vim.", "author": "user", **provenance, "derived_from": []},
        provenance,
    )
    fact = on_tape(store, "u1", "memory.fact")
    (fact_id,) = report.facts
    at = "2026-01-05T09:00:00.000000+00:00"
    row: dict[str, Any] = {
        "fact_id": fact_id,
        "subject": "user",
        "subject_key": "user",
        "relation": "prefers",
        "relation_class": "registered",
        "object": "vim",
        "object_key": "vim",
        "statement": "The user prefers vim.",
        "volatility": "durable",
        "valid_from": at,
        "valid_to": None,
        "state": "current",
        "superseded_by": None,
        "reason": None,
        "author": "user",
        "disclosure": "first_hand",
        "claimant": "user",
        "event_id": report.evidence_id,
        "derived_from": [],
        "session_id": "s1",
        "tool_call_id": None,
        "source": None,
        "trust": 3,
        "last_confirmed_at": at,
        "flags": [],
        "contested_with": [],
        "times_used": 0,
        "last_outcome": None,
    }
    assert fact == Event(
        fact.id,
        "u1",
        "memory.fact",
        NOW,
        "user",
        {"fact": row},
        {"evidence_id": report.evidence_id},
    )
    outcome = on_tape(store, "u1", "memory.extraction")
    payload: dict[str, Any] = {
        "evidence_id": report.evidence_id,
        "status": "ok",
        "error": None,
        "llm_calls": 1,
        "invalid": [],
        "notes": [],
    }
    assert outcome == Event(outcome.id, "u1", "memory.extraction", NOW, "veil", payload)
    assert {e.id[:3] for e in (evidence, fact, outcome)} == {"ev_"}


def test_feedback_and_audit(store: Store) -> None:
    memory = memory_on(store, PREFERS_VIM, audit=True)
    (fact_id,) = memory.remember("I prefer vim.", user_id="u1").facts
    memory.confirm(fact_id, user_id="u1", actor="assistant")
    event = on_tape(store, "u1", "memory.confirmed")
    payload: dict[str, Any] = {
        "fact_id": fact_id,
        "at": "2026-01-05T09:00:00.000000+00:00",
        "state": "current",
        "reason": None,
    }
    assert event == Event(event.id, "u1", "memory.confirmed", NOW, "assistant", payload)
    audit = [replace(e, seq=None, recorded_at=None) for e in store.read("u1", kinds=["audit.op"])]
    counts: dict[str, Any] = {
        "facts": 1,
        "superseded": 0,
        "reinforced": 0,
        "quarantined": 0,
        "episodes": 0,
        "contested": 0,
        "invalid": 0,
        "llm_calls": 1,
    }
    first = audit[0]
    expected = Event(
        first.id, "u1", "audit.op", NOW, "library", {"op": "remember", "counts": counts}
    )
    assert first == expected and first.id.startswith("au_")


def test_maintain(store: Store) -> None:
    memory = memory_on(store, PREFERS_VIM)
    (fact_id,) = memory.remember("I prefer vim.", user_id="u1").facts
    memory.maintain("u1")
    event = on_tape(store, "u1", "memory.wiki")
    section: dict[str, Any] = {
        "section": "user",
        "title": "The user",
        "text": "### The user\n- The user prefers vim.",
        "fact_ids": [fact_id],
    }
    payload: dict[str, Any] = {
        "sections": [section],
        "removed": [],
        "compiled_at": "2026-01-05T09:00:00.000000+00:00",
    }
    assert event == Event(event.id, "u1", "memory.wiki", NOW, "veil", payload)
    assert event.id.startswith("ev_")
