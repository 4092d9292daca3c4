"""A request Veil's bookkeeping would not change goes out ahead of it
(:mod:`veil.proxy.conversation`): the same bytes as if it had waited, the same figures once
settled, and every case that changes what the prompt shows waits as before."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.proxy.conftest import raw
from tests.proxy.test_server import Rig, conversation, make_rig, stubs
from tests.proxy.test_session import body
from veil.proxy import conversation as conversation_module
from veil.proxy.reading import Reader, parse
from veil.proxy.session import Prepared

ITEM_ID = re.compile(rb"ci_[0-9a-f]{32}")


def same(a: bytes, b: bytes) -> bool:
    """Two bodies alike but for the item ids in their pointers (two stores make their own)."""
    return ITEM_ID.sub(b"ci_", a) == ITEM_ID.sub(b"ci_", b)


class Ahead:
    """A conversation whose requests may go ahead of their bookkeeping, each settled right
    after it, as the proxy server does once the answer is relayed."""

    def __init__(self, run: Any) -> None:
        self.run = run
        self.reader = Reader()
        self.prepared: list[Prepared] = []

    def send(self, data: dict[str, Any], *, settle: bool = True) -> Prepared:
        payload = raw(data)
        request = parse(self.run.api, payload, {}, self.reader)
        early = self.run.conversations.prepare(request, payload, ahead=True)
        settled = self.run.conversations.settle(early) if settle else early
        self.prepared.append(settled)
        self.run.clock.advance(seconds=20)
        return settled


def test_a_request_that_changes_nothing_goes_ahead_and_comes_to_the_same_bytes(
    make: Any,
) -> None:
    waits, ahead = make(budget=8_000), Ahead(make(budget=8_000))
    for steps in range(1, 60):
        one, other = waits.send(body(steps)), ahead.send(body(steps))
        assert same(one.body, other.body), steps
        figures = ("tokens_before", "tokens_sent", "stubbed", "evicted", "batch", "exact")
        assert [getattr(one, f) for f in figures] == [getattr(other, f) for f in figures]
        assert not other.diverged
    went = [p for p in ahead.prepared if p.ahead]
    batches = [p for p in ahead.prepared if p.batch]
    assert len(batches) >= 2 and not any(p.ahead for p in batches)  # a batch always waits
    assert len(went) >= len(ahead.prepared) // 2  # most requests between batches go ahead
    assert not ahead.prepared[0].ahead  # a conversation's first request waits


def _expand_step(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` and a call of Veil's expand, with its result."""
    data = json.loads(json.dumps(data))
    data["messages"] += [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_x",
         "name": "mcp__veil__expand", "input": {"pointer": "veil://warm/ci_" + "0" * 32}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_x", "content": "unknown pointer"}]},
    ]  # fmt: skip
    return data


def _rewound(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with a step the last request had taken back and another in its place."""
    data = json.loads(json.dumps(data))
    data["messages"][-3]["content"][0]["content"] = "another answer"
    return data


def _retooled(data: dict[str, Any]) -> dict[str, Any]:
    data = json.loads(json.dumps(data))
    data["tools"].append({"name": "Grep", "input_schema": {"type": "object"}})
    return data


@pytest.mark.parametrize(
    ("change", "goes_ahead"),
    [
        pytest.param(lambda d: d, True, id="nothing"),
        pytest.param(_expand_step, False, id="an-expansion"),
        pytest.param(_rewound, False, id="a-rewind"),
        pytest.param(_retooled, False, id="new-tools"),
    ],
)
def test_what_may_change_the_prompt_waits_for_the_bookkeeping(
    make: Any, change: Any, goes_ahead: bool
) -> None:
    run = Ahead(make(budget=200_000))
    tools = ["Read", "mcp__veil__expand"]
    for steps in range(1, 4):
        run.send(body(steps, tools=tools))
    assert run.send(change(body(4, tools=tools))).ahead == goes_ahead


def test_an_overflow_retry_never_goes_ahead(make: Any) -> None:
    run = make(budget=200_000)
    for steps in range(1, 4):
        run.send(body(steps))
    payload = raw(body(4))
    request = parse("anthropic", payload, {}, Reader())
    assert not run.conversations.prepare(request, payload, ahead=True, overflow=True).ahead


def test_a_request_that_went_ahead_is_settled_before_its_conversation_is_read_again(
    make: Any,
) -> None:
    run = Ahead(make(budget=200_000))
    run.send(body(1))
    early = run.send(body(2), settle=False)
    assert early.ahead and early.pending is not None and early.pending.result is None
    conversations = run.run.conversations
    known = conversations.known(parse("anthropic", raw(body(2)), {}))
    assert known is not None
    assert len(known.engine.items_for_call("toolu_001")) == 0  # not captured yet
    run.send(body(3), settle=False)  # the next request settles the one before it first
    assert early.pending.result is not None
    assert len(known.engine.items_for_call("toolu_001")) == 1
    assert conversations.settle(early) is early.pending.result
    late = run.send(body(4), settle=False)
    conversations.record(late)  # the usage's record settles it too
    assert late.pending is not None and late.pending.result is not None


def test_bookkeeping_that_comes_to_other_bytes_is_caught(
    make: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no margin left (anything goes ahead), the request whose batch was due is sent
    without it: the bookkeeping says so, and the next request sends what it decided."""
    monkeypatch.setattr(conversation_module, "AHEAD_MARGIN", -10.0)
    run = Ahead(make(budget=5_000))
    for steps in range(1, 30):
        run.send(body(steps))
    diverged = [k for k, p in enumerate(run.prepared) if p.diverged]
    assert diverged and all(run.prepared[k].ahead for k in diverged)
    k = diverged[0]
    assert run.prepared[k].batch and "veil://" in run.prepared[k + 1].body.decode()


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    yield from make_rig(tmp_path)


def test_through_the_server_requests_go_ahead_and_are_recorded(rig: Rig) -> None:
    for steps in range(1, 25):
        status, _ = rig.post("/v1/messages", conversation(steps))
        assert status == 200
    assert rig.proxy.wait_idle(10)  # every answer relayed and its bookkeeping done
    conversations = rig.conversations
    known = conversations.known(parse("anthropic", raw(conversation(24)), {}))
    assert known is not None
    assert all(known.engine.items_for_call(f"toolu_s1_{k}") for k in range(24))
    known.engine.wait()
    events = [
        e.payload for e in conversations.store.read(conversations.scope, kinds=["proxy.request"])
    ]
    assert len(events) == 24
    assert 0 < sum(1 for e in events if e.get("ahead")) < 24
    assert not any(e.get("diverged") for e in events)
    assert "bookkeeping" not in rig.log.getvalue()


def test_a_bookkeeping_that_fails_is_said_and_the_next_request_waits_for_its_own(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request that went ahead was forwarded already; its bookkeeping failing afterwards is
    one log line, never an error to the agent, and the conversation's next request waits for
    its bookkeeping (which runs again from what the conversation has)."""
    assert rig.post("/v1/messages", conversation(1))[0] == 200
    assert rig.post("/v1/messages", conversation(2))[0] == 200
    assert rig.proxy.wait_idle(10)  # the second one's bookkeeping done before the failure is set
    conversations = rig.conversations
    real = conversations._prepared  # pyright: ignore[reportPrivateUsage]
    calls: list[bool] = []

    def failing(*args: Any, **kwargs: Any) -> Any:
        calls.append(True)
        if len(calls) == 1:
            raise RuntimeError("disk I/O error")
        return real(*args, **kwargs)

    monkeypatch.setattr(conversations, "_prepared", failing)
    status, data = rig.post("/v1/messages", conversation(3))
    assert status == 200 and data == rig.upstream.answers[-1]  # went ahead, answered
    assert rig.proxy.wait_idle(10)
    assert "bookkeeping failed (RuntimeError: disk I/O error)" in rig.log.getvalue()
    assert rig.post("/v1/messages", conversation(4))[0] == 200
    assert rig.proxy.wait_idle(10)
    recorded = conversations.store.read(conversations.scope, kinds=["proxy.request"])
    assert [bool(e.payload.get("ahead")) for e in recorded] == [False, True, True, False]
    known = conversations.known(parse("anthropic", raw(conversation(4)), {}))
    assert known is not None
    assert all(known.engine.items_for_call(f"toolu_s1_{k}") for k in range(4))
    assert rig.log.getvalue().count("bookkeeping failed") == 1


def _recorded(conversations: Any) -> list[dict[str, Any]]:
    events = conversations.store.read(conversations.scope, kinds=["proxy.request"])
    return [dict(e.payload) for e in events]


def test_a_secret_in_a_result_that_went_ahead_is_never_stored_or_logged(rig: Rig) -> None:
    """The new result of a request that goes ahead reaches the model as the agent sent it; its
    capture, after the answer, redacts it like any other before anything is stored."""
    canary = "AKIA" + "Q3VEILCANARY7XQZ"  # an AWS access key id's shape, not a real key
    rig.post("/v1/messages", conversation(1))
    assert rig.proxy.wait_idle(10)
    body = conversation(2)
    body["messages"][-1]["content"][0]["content"] = f"aws_access_key_id = {canary}\n"
    assert rig.post("/v1/messages", body)[0] == 200
    assert rig.proxy.wait_idle(10)
    assert canary.encode() in rig.upstream.bodies[-1]  # live: as the agent sent it
    assert [r.get("ahead", False) for r in _recorded(rig.conversations)] == [False, True]
    known = rig.conversations.known(parse("anthropic", raw(body), {}))
    assert known is not None
    known.engine.wait()
    stored = b"".join(p.read_bytes() for p in (rig.root / ".veil").iterdir() if p.is_file())
    assert canary.encode() not in stored and canary not in rig.log.getvalue()
    assert b"[secret:aws-access-key" in stored


def test_a_refusal_as_too_long_of_a_request_that_went_ahead_is_retried_from_its_bookkeeping(
    rig: Rig,
) -> None:
    """The provider counts more than Veil did: the refused request had gone ahead; its
    bookkeeping runs first, then the retry's batch, and the client gets one answer."""
    for steps in range(1, 9):
        rig.post("/v1/messages", conversation(steps))
    assert rig.proxy.wait_idle(10)
    rig.upstream.overflow_once = True
    seen: list[Prepared] = []
    rig.proxy.on_prepared = seen.append
    status, data = rig.post("/v1/messages", conversation(9))
    assert [p.ahead for p in seen] == [True]  # the refused request had gone ahead
    assert status == 200 and data == rig.upstream.answers[-1]
    assert rig.proxy.wait_idle(10)
    refused, retried = rig.upstream.bodies[-2:]
    assert len(stubs(retried)) > len(stubs(refused))
    recorded = _recorded(rig.conversations)
    assert recorded[-1].get("batch") and not recorded[-1].get("ahead")  # the retry's record
    assert any(r.get("ahead") for r in recorded[:-1])
