"""Veil as ``veil claude`` / ``veil codex`` run it: the proxy's own code on each request.

Each step's request is what a Claude Code-like agent sends — an Anthropic Messages body: the
trajectory's system prompt (with as many placeholder characters as the inferred fixed part
stands for, :attr:`~veil.replay.trajectory.Trajectory.extra_fixed`), its first message, then
for every earlier step the user's prompt before it (if any), the assistant message (the
thought as text, the call as a ``tool_use`` with the step's tool and input; parallel calls in
one message) and its observation as a ``tool_result`` — compact JSON, as the agents write it.
The request goes through :func:`veil.proxy.reading.parse` and
:meth:`veil.proxy.session.Conversations.prepare` on an in-memory store with a fake clock (30 s
a step: bit-reproducible), and the prompt is the forwarded body as the provider gets it: what
changed is a result sent as a stub or a head-and-tail excerpt. A Codex session goes through
the same Anthropic body: the proxy's rule is one for every dialect.

The differences from Veil in its own harness (``benchmarks/replay/policies.py``): no turn
items (only tool results are evicted: the agent's text goes as it is), no manifest and no
collapsed notes in the request. Both run the same batch rule (:mod:`veil.context.batching`).
The budget is given to the proxy directly (``budget=``; it subtracts the fixed part itself).
Nothing is sent anywhere.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, cast

from veil.clock import FakeClock
from veil.context import ContextConfig
from veil.embed.protocol import Embedder
from veil.proxy.reading import Reader, parse
from veil.proxy.session import Conversations
from veil.proxy.wire import Request
from veil.replay.policies import PrefixTracker, Run, Segment, observations
from veil.replay.trajectory import Step, Trajectory
from veil.tape.sqlite import SQLiteStore
from veil.tokens import estimate_tokens

REPLAY_START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
"""The replay's clock starts here and advances 30 s a step: bit-reproducible runs."""


def call_id(k: int) -> str:
    return f"toolu_{k:05d}"


def system_text(t: Trajectory) -> str:
    """The system prompt as sent: the trajectory's, and for an inferred fixed part one word of
    as many characters as its tokens stand for (:func:`veil.tokens.estimate_tokens` counts it
    so)."""
    return t.system + "x" * (4 * t.extra_fixed) if t.extra_fixed else t.system


def _append_step(messages: list[dict[str, Any]], k: int, s: Step) -> None:
    """Step ``k`` after its request: the user's prompt, the assistant message, the result."""
    if s.prompt:
        last = messages[-1]
        last_content: object = last["content"]
        if last["role"] == "user" and isinstance(last_content, list):
            cast(list[Any], last_content).append({"type": "text", "text": s.prompt})
        else:
            messages.append({"role": "user", "content": [{"type": "text", "text": s.prompt}]})
    use = {"type": "tool_use", "id": call_id(k), "name": s.tool, "input": dict(s.input or {})}
    result = {"type": "tool_result", "tool_use_id": call_id(k), "content": s.observation}
    if s.parallel and len(messages) >= 2 and messages[-2]["role"] == "assistant":
        messages[-2]["content"].append(use)
        messages[-1]["content"].append(result)
        return
    content: list[dict[str, Any]] = [{"type": "text", "text": s.thought}]
    if s.tool:
        content.append(use)
    messages.append({"role": "assistant", "content": content})
    if s.tool:
        messages.append({"role": "user", "content": [result]})


def _segments(t: Trajectory, system: str, sent: dict[str, Any]) -> tuple[list[Segment], set[int]]:
    """The forwarded body as segments (comparable between requests), and the observations in
    it verbatim."""
    segments: list[Segment] = [(("system", system), estimate_tokens(system))]
    now: set[int] = set()
    for index, message in enumerate(sent["messages"]):
        content = message["content"]
        if isinstance(content, str):
            segments.append((("user", content), estimate_tokens(content)))
            continue
        for block in content:
            if block["type"] == "tool_result":
                j = int(block["tool_use_id"].split("_")[1])
                text = block["content"]
                if text == t.steps[j].observation:
                    now.add(j)
                segments.append((("tool", j, text), estimate_tokens(text)))
            elif block["type"] == "text":
                cost = estimate_tokens(block["text"])
                segments.append((("text", index, block["text"]), cost))
            else:  # the tool call as sent
                call = json.dumps(block["input"], ensure_ascii=False)
                segments.append(
                    (("call", block["id"], call), estimate_tokens(block["name"] + call))
                )
    return segments, now


def veil_proxy(
    t: Trajectory,
    budget: int,
    embedder: Embedder | None,
    config: ContextConfig | None = None,
    *,
    expand_tool: str | None = None,
) -> Run:
    """Veil through its proxy over ``t`` at ``budget`` (the trajectory's tokens). Each step's
    call is ``(step.tool, step.input)`` and its text ``step.thought``. ``expand_tool``: how the
    stubs name Veil's expand (default: as the request offers it — none here)."""
    clock = FakeClock(REPLAY_START)
    store = SQLiteStore(":memory:", embedder=embedder, clock=clock)
    named = expand_tool

    def expand(_request: Request) -> str | None:
        return named

    conversations = Conversations(
        store, scope=f"replay:{t.id}", root=None, window=None, clock=clock, embedder=embedder,
        budget=budget, config=config, expand=expand if named is not None else None,
    )  # fmt: skip
    reader = Reader()
    system = system_text(t)
    messages: list[dict[str, Any]] = [{"role": "user", "content": t.instance}]
    body: dict[str, Any] = {"model": "replay", "max_tokens": 4096, "stream": True,
                            "system": system, "messages": messages,
                            "metadata": {"user_id": json.dumps({"session_id": t.id})}}  # fmt: skip
    tracker = PrefixTracker()
    tokens: list[int] = []
    cached: list[int] = []
    live: list[frozenset[int]] = []
    shown: list[dict[int, object]] = []
    try:
        for k, s in enumerate(t.steps):
            if s.parallel and k:  # no request between the calls of one message
                tokens.append(tokens[-1])
                cached.append(tokens[-1])
                live.append(live[-1])
                shown.append(shown[-1])
            else:
                raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
                prepared = conversations.prepare(parse("anthropic", raw, {}, reader), raw)
                segments, now = _segments(t, system, json.loads(prepared.body))
                tracker.add(segments)
                tokens.append(sum(x[1] for x in segments))
                cached.append(tracker.cached[-1])
                live.append(frozenset(now))
                shown.append(observations(segments))
            _append_step(messages, k, s)
            clock.advance(seconds=30)
    finally:
        conversations.close()
        store.close()
    return Run(tokens, live, {}, cached, shown=shown)
