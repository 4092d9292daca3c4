"""Veil as ``veil claude`` / ``veil codex`` run it: the proxy's own code on each request.

Each step's request is what a Claude Code-like agent sends — an Anthropic Messages body: the
trajectory's system prompt, its instance as the first user message, then for every earlier
step the assistant message (the thought as text, the action as one ``tool_use``: ``Bash``
with the command, or ``Read`` with the path for SWE-agent's file-window commands) and its
observation as a ``tool_result`` — compact JSON, as the agents write it. The request goes
through :func:`veil.proxy.reading.parse` and
:meth:`veil.proxy.session.Conversations.prepare` on an in-memory store with a fake clock (30 s
a step: bit-reproducible), and the prompt is the forwarded body as the provider gets it: what
changed is a result sent as a stub or a head-and-tail excerpt, or an old tool input elided
(:mod:`veil.proxy.inputs`).

The differences from :func:`benchmarks.replay.policies.veil` (the harness) are the proxy's:
no turn items (only tool results are evicted: the agent's text goes as it is), no manifest and
no collapsed notes in the request. Both run the same batch rule (:mod:`veil.context.batching`).
The budget is the one every policy gets, given to the proxy directly (``budget=``; it
subtracts the fixed part itself).
"""

from __future__ import annotations

from dataclasses import replace

from benchmarks.replay.load import Trajectory
from benchmarks.replay.policies import Run, call_for, thought_of
from veil.context import ContextConfig
from veil.embed.protocol import Embedder
from veil.replay import proxy


def as_agent_calls(t: Trajectory) -> Trajectory:
    """``t`` with each step as a Claude Code-like agent sends it: its thought as the text, its
    action as one ``tool_use`` — ``Read`` with the path for SWE-agent's file-window commands,
    else ``Bash`` with the command (:func:`~benchmarks.replay.policies.call_for`)."""
    steps = []
    for s in t.steps:
        name, arguments = call_for(s)
        tool, given = (
            ("Read", {"file_path": arguments["path"]})
            if name == "read"
            else ("Bash", {"command": arguments["command"]})
        )
        steps.append(replace(s, tool=tool, input=given, thought=thought_of(t, s)))
    return replace(t, steps=tuple(steps))


def veil_proxy(
    t: Trajectory, budget: int, embedder: Embedder, config: ContextConfig | None = None
) -> Run:
    """Veil through its proxy (:func:`veil.replay.proxy.veil_proxy`, what ``veil replay``
    runs) over ``t``'s steps as agent calls."""
    return proxy.veil_proxy(as_agent_calls(t), budget, embedder, config)
