"""Veil as ``veil claude`` / ``veil codex`` run it: the proxy's own code on each request.

Each step's request is what a Claude Code-like agent sends — an Anthropic Messages body: the
trajectory's system prompt, its instance as the first user message, then for every earlier
step the assistant message (the thought as text, the action as one ``tool_use``: ``Bash``
with the command, or ``Read`` with the path for SWE-agent's file-window commands) and its
observation as a ``tool_result`` — compact JSON, as the agents write it. The request goes
through :func:`veil.proxy.reading.parse` and
:meth:`veil.proxy.session.Conversations.prepare` on an in-memory store with a fake clock (30 s
a step: bit-reproducible), and the prompt is the forwarded body as the provider gets it: what
changed is a result sent as a stub or a head-and-tail excerpt.

The differences from :func:`benchmarks.replay.policies.veil` (the harness) are the proxy's:
no turn items (only tool results are evicted: the agent's text goes as it is), no manifest and
no collapsed notes in the request. Both run the same batch rule (:mod:`veil.context.batching`).
The budget is the one every policy gets, given to the proxy directly (``budget=``; it
subtracts the fixed part itself).
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.replay.load import Trajectory
from benchmarks.replay.policies import (
    REPLAY_START,
    PrefixTracker,
    Run,
    Segment,
    call_for,
    observations,
    thought_of,
)
from veil.context import ContextConfig
from veil.embed.protocol import Embedder
from veil.proxy.reading import Reader, parse
from veil.proxy.session import Conversations
from veil.tape.sqlite import SQLiteStore
from veil.testing import FakeClock
from veil.tokens import estimate_tokens


def _call(k: int, t: Trajectory) -> dict[str, Any]:
    name, arguments = call_for(t.steps[k])
    if name == "read":
        return {"type": "tool_use", "id": f"toolu_{k:05d}", "name": "Read",
                "input": {"file_path": arguments["path"]}}  # fmt: skip
    return {"type": "tool_use", "id": f"toolu_{k:05d}", "name": "Bash",
            "input": {"command": arguments["command"]}}  # fmt: skip


def veil_proxy(
    t: Trajectory, budget: int, embedder: Embedder, config: ContextConfig | None = None
) -> Run:
    clock = FakeClock(REPLAY_START)
    store = SQLiteStore(":memory:", embedder=embedder, clock=clock)
    conversations = Conversations(
        store, scope=f"replay:{t.id}", root=None, window=None, clock=clock, embedder=embedder,
        budget=budget, config=config,
    )  # fmt: skip
    reader = Reader()
    messages: list[dict[str, Any]] = [{"role": "user", "content": t.instance}]
    body: dict[str, Any] = {"model": "replay", "max_tokens": 4096, "stream": True,
                            "system": t.system, "messages": messages,
                            "metadata": {"user_id": json.dumps({"session_id": t.id})}}  # fmt: skip
    tracker = PrefixTracker()
    tokens: list[int] = []
    live: list[frozenset[int]] = []
    shown: list[dict[int, object]] = []
    try:
        for k, s in enumerate(t.steps):
            raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
            prepared = conversations.prepare(parse("anthropic", raw, {}, reader), raw)
            sent = json.loads(prepared.body)
            segments: list[Segment] = [(("system", t.system), estimate_tokens(t.system))]
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
            tracker.add(segments)
            tokens.append(sum(x[1] for x in segments))
            live.append(frozenset(now))
            shown.append(observations(segments))
            messages.append(
                {"role": "assistant",
                 "content": [{"type": "text", "text": thought_of(t, s)}, _call(k, t)]}
            )  # fmt: skip
            messages.append(
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_{k:05d}",
                     "content": s.observation}]}
            )  # fmt: skip
            clock.advance(seconds=30)
    finally:
        conversations.close()
        store.close()
    return Run(tokens, live, {}, tracker.cached, shown=shown)
