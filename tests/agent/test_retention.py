"""Retention (issue 25): sessions untouched for `max_age_days` go, then the oldest while all of
them take more than `max_megabytes`; the running session never; the attempt record and
long-term memory stay. With a fake clock, on a real store."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from veil.agent.retention import Retention, apply_retention, expired
from veil.agent.sessions import Sessions
from veil.context import ContextEngine
from veil.convergence.record import AttemptLog
from veil.llm.messages import UserMessage
from veil.tape.sqlite import SQLiteStore
from veil.testing import FakeClock, HashEmbedder

SCOPE = "project:retention"


def session(store: SQLiteStore, clock: FakeClock, title: str, size: int) -> str:
    """A session with a transcript, a working-memory item of about ``size`` bytes and an
    attempt; returns its id."""
    sessions = Sessions(store, scope=SCOPE, clock=clock)
    sid = sessions.start(title=title, model="scripted")
    sessions.append(sid, 0, [UserMessage(title)])
    engine = ContextEngine(store, session_id=sid, scope=SCOPE, embedder=HashEmbedder(), clock=clock)
    engine.capture_tool_result(tool_call_id=f"c-{sid}", tool_name="read", output="x " * (size // 2))
    engine.step()
    engine.close()
    log = AttemptLog(store, SCOPE, sid, clock)
    log.begin(title)
    log.record_call(
        action="command", target="make", tool_name="bash", arguments={"command": "make"},
        output="ok", exit_code=0, is_error=False, tool_call_id=f"a-{sid}", files=[],
    )  # fmt: skip
    sessions.end(sid, status="done", summary="ok")
    return sid


def test_old_sessions_go_then_the_oldest_while_too_large(tmp_path: Path) -> None:
    clock = FakeClock()
    store = SQLiteStore(tmp_path / "context.db", embedder=HashEmbedder(), clock=clock)
    old = session(store, clock, "the old one", 20_000)
    clock.advance(days=40)
    big = session(store, clock, "a big one", 900_000)
    clock.advance(days=1)
    recent = session(store, clock, "a recent one", 300_000)
    clock.advance(days=1)
    running = session(store, clock, "the running one", 10_000)
    sessions = Sessions(store, scope=SCOPE, clock=clock)
    sizes = store.sizes(SCOPE, field="session_id")
    policy = Retention(max_age_days=30, max_megabytes=1)
    assert expired(sessions.list(), sizes, now=clock.now(), policy=policy, keep=running) == [
        old,
        big,
    ]
    assert expired(sessions.list(), sizes, now=clock.now(), policy=Retention(0, 0)) == []
    # the running session is kept even when it alone is over the size
    assert running not in expired(
        sessions.list(), sizes, now=clock.now(), policy=Retention(0, 1), keep=running
    )
    receipt = apply_retention(store, sessions, policy=policy, now=clock.now(), keep=running)
    assert receipt is not None and receipt.events > 0 and "the old one" not in repr(receipt)
    left = {s.id for s in sessions.list()}
    assert left == {recent, running}
    # the attempt records of every goal stay
    kinds = {e.kind.split(".")[0] for e in store.read(SCOPE)}
    assert "convergence" in kinds
    assert AttemptLog(store, SCOPE, "s_new", clock).begin("the old one") is not None
    assert store.check().ok
    assert apply_retention(store, sessions, policy=policy, now=clock.now(), keep=running) is None
    clock.advance(days=31)
    late = apply_retention(store, sessions, policy=policy, now=clock.now(), keep=running)
    assert late is not None and {s.id for s in sessions.list()} == {running}
    store.close()


def test_settings_are_checked() -> None:
    assert Retention.from_mapping({"max_age_days": 7}) == Retention(7, 256)
    with pytest.raises(ValueError, match="max_megabytes"):
        Retention.from_mapping({"max_megabytes": -1})
    with pytest.raises(ValueError, match="unknown key 'days'"):
        Retention.from_mapping({"days": 3})
    assert timedelta(days=Retention().max_age_days) == timedelta(days=30)
