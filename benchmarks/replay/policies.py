"""Eviction policies replayed over a trajectory: at every step, which earlier observations are
in the prompt in full, and what the prompt costs.

Every policy returns a :class:`Run`: for each step ``k`` the prompt tokens when the model chose
action ``k`` (system + instance message + the earlier assistant messages and observations as the
policy left them) and the set of earlier observations still there verbatim. A stubbed, cleared,
summarised or dropped observation is not verbatim. Budgets are prompt-token budgets (window −
reserve); every budgeted policy gets the same budget.

Cost with prompt caching (:func:`run_cost`): every model call is priced per input token — the
prefix it shares with the previous call (:attr:`Run.cached`) is a cache read at
:data:`PRICE_CACHE_READ` (0.1×), the rest a cache write at :data:`PRICE_CACHE_WRITE` (1.25×) of
the base input price 1.0 (Anthropic's 5-minute cache prices). A policy that rewrites the middle
of the prompt pays for the whole tail again. Compaction's summarising calls (:func:`compact_at`)
are priced the same way and added as :attr:`Run.extra_cost`; the summary they write (output
tokens) is not priced. The host agents' own policies are in :mod:`benchmarks.replay.host_policies`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from benchmarks.replay.load import Step, Trajectory
from benchmarks.replay.needs import Need
from veil.agent.tool import ToolResult
from veil.context import ContextConfig
from veil.embed.protocol import Embedder
from veil.llm.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from veil.replay.policies import (
    OBSERVATION_KINDS,
    PRICE_CACHE_READ,
    PRICE_CACHE_WRITE,
    PRICE_INPUT,
    PrefixTracker,
    Run,
    Segment,
    Shape,
    cached_prefix,
    call_cost,
    compact_at,
    compaction_params,
    keep_all,
    observations,
    prompt_of,
    run_cost,
    run_of,
    shape,
)
from veil.replay.proxy import REPLAY_START
from veil.tape.sqlite import SQLiteStore
from veil.tokens import estimate_tokens

__all__ = [
    "OBSERVATION_KINDS",
    "OPENCODE_STUB",
    "PRICE_CACHE_READ",
    "PRICE_CACHE_WRITE",
    "PRICE_INPUT",
    "REPLAY_START",
    "PrefixTracker",
    "Run",
    "Segment",
    "Shape",
    "cached_prefix",
    "call_cost",
    "call_for",
    "compact_at",
    "compaction",
    "compaction_params",
    "keep_all",
    "lru",
    "mask_last_n",
    "observations",
    "opencode_prune",
    "prompt_of",
    "recency_batch",
    "run_cost",
    "run_of",
    "shape",
    "thought_of",
    "truncate_oldest",
    "truncate_oldest_observations",
    "veil",
]
"""The shared values and pricing are :mod:`veil.replay.policies`' (one implementation for the
benchmark and ``veil replay``); the baselines the benchmark alone compares are here."""

OPENCODE_STUB = "[Old tool result content cleared]"
OPENCODE_STUB_TOKENS = estimate_tokens(OPENCODE_STUB)


def _masked_stub(observation: str) -> int:
    """SWE-agent's ``LastNObservations`` placeholder."""
    lines = observation.count("\n") + 1
    return estimate_tokens(f"Old environment output: ({lines} lines omitted)")


def _lru_stub(action: str, tokens: int) -> int:
    return estimate_tokens(f"[evicted: output of `{action[:80]}` — {tokens:,} tokens]")


def mask_last_n(t: Trajectory, n: int) -> Run:
    """SWE-agent ``LastNObservations``: observations older than the last ``n`` become a
    one-line placeholder; assistant messages stay."""
    steps = t.steps
    stub = [_masked_stub(s.observation) for s in steps]
    prompts: list[list[Segment]] = []
    live: list[frozenset[int]] = []
    for k in range(len(steps)):
        first_full = max(0, k - n)
        obs: list[Segment | None] = [
            (("o", j), steps[j].obs_tokens) if j >= first_full else (("m", j), stub[j])
            for j in range(k)
        ]
        prompts.append(prompt_of(t, k, obs))
        live.append(frozenset(range(first_full, k)))
    return run_of(t, prompts, live)


def truncate_oldest(t: Trajectory, budget: int) -> Run:
    """Drop the oldest (assistant, observation) pairs until the prompt fits; the newest pair
    always stays. Dropped pairs never come back."""
    steps = t.steps
    start = 0
    prompts: list[list[Segment]] = []
    live: list[frozenset[int]] = []
    for k in range(len(steps)):
        cost = t.fixed_tokens + sum(s.assistant_tokens + s.obs_tokens for s in steps[start:k])
        while cost > budget and start < k - 1:
            cost -= steps[start].assistant_tokens + steps[start].obs_tokens
            start += 1
        obs: list[Segment | None] = [
            (("o", j), steps[j].obs_tokens) if j >= start else None for j in range(k)
        ]
        prompts.append(prompt_of(t, k, obs))
        live.append(frozenset(range(start, k)))
    return run_of(t, prompts, live)


def truncate_oldest_observations(t: Trajectory, budget: int) -> Run:
    """Drop the oldest observations (the assistant messages stay) until the prompt fits; the
    newest observation always stays. Dropped observations never come back."""
    steps = t.steps
    start = 0
    prompts: list[list[Segment]] = []
    live: list[frozenset[int]] = []
    for k in range(len(steps)):
        cost = t.fixed_tokens + sum(s.assistant_tokens for s in steps[:k])
        cost += sum(s.obs_tokens for s in steps[start:k])
        while cost > budget and start < k - 1:
            cost -= steps[start].obs_tokens
            start += 1
        obs: list[Segment | None] = [
            (("o", j), steps[j].obs_tokens) if j >= start else ("gone", 0) for j in range(k)
        ]
        prompts.append(prompt_of(t, k, obs))
        live.append(frozenset(range(start, k)))
    return run_of(t, prompts, live)


def _anchor_stub(action: str, tokens: int) -> int:
    """A stub as large as Veil's (what it did, its size, a pointer and the tool restoring it)."""
    return estimate_tokens(
        f"[veil: Bash {action[:80]} — {tokens:,} tokens moved out of the prompt; "
        "mcp__veil__expand veil://warm/ci_0123456789abcdef0123456789abcdef restores it]"
    )


def recency_batch(t: Trajectory, budget: int, depth: float) -> Run:
    """The cache-paying recency anchor: nothing changes while the prompt fits; over the budget,
    one batch stubs the oldest observations (never the newest, which the model has not read;
    never one whose stub is not smaller) until the prompt is at ``(1 − depth) × budget``, and
    a stub stays the same until the end. Oldest first is truncation's choice; ``depth`` is
    what makes a batch pay for the cache it breaks (the replay reports the smallest depth
    whose cost with caching is at most keep-all's)."""
    steps = t.steps
    stub = [_anchor_stub(s.action, s.obs_tokens) for s in steps]
    full = [True] * len(steps)
    prompts: list[list[Segment]] = []
    live: list[frozenset[int]] = []
    for k in range(len(steps)):
        cost = t.fixed_tokens + sum(
            s.assistant_tokens + (s.obs_tokens if full[j] else stub[j])
            for j, s in enumerate(steps[:k])
        )
        if cost > budget:
            goal = (1.0 - depth) * budget
            for j in range(k - 1):
                if cost <= goal:
                    break
                if full[j] and stub[j] < steps[j].obs_tokens:
                    full[j] = False
                    cost -= steps[j].obs_tokens - stub[j]
        obs: list[Segment | None] = [
            (("o", j), steps[j].obs_tokens) if full[j] else (("s", j), stub[j]) for j in range(k)
        ]
        prompts.append(prompt_of(t, k, obs))
        live.append(frozenset(j for j in range(k) if full[j]))
    return run_of(t, prompts, live)


def opencode_prune(t: Trajectory, protect: int, minimum: int, skip_turns: int = 2) -> Run:
    """opencode's ``SessionCompaction.prune`` after every step: walking back from the newest
    message, skipping the last ``skip_turns`` turns (here: steps; a SWE-bench run is a single
    user turn) and stopping at the first already-cleared output, tool outputs beyond the newest
    ``protect`` tokens are cleared — only if together they exceed ``minimum`` tokens."""
    steps = t.steps
    cleared = [False] * len(steps)
    prompts: list[list[Segment]] = []
    live: list[frozenset[int]] = []
    for k in range(len(steps)):
        total = 0
        pruned = 0
        to_prune: list[int] = []
        for j in range(k - 1 - skip_turns, -1, -1):
            if cleared[j]:
                break
            total += steps[j].obs_tokens
            if total > protect:
                pruned += steps[j].obs_tokens
                to_prune.append(j)
        if pruned > minimum:
            for j in to_prune:
                cleared[j] = True
        obs: list[Segment | None] = [
            (("c", j), OPENCODE_STUB_TOKENS) if cleared[j] else (("o", j), steps[j].obs_tokens)
            for j in range(k)
        ]
        prompts.append(prompt_of(t, k, obs))
        live.append(frozenset(j for j in range(k) if not cleared[j]))
    return run_of(t, prompts, live, {"cleared": float(sum(cleared))})


def compaction(t: Trajectory, budget: int) -> Run:
    """pi / Claude Code compaction at the budget (the generic model, not a host's exact rule —
    those are in :mod:`benchmarks.replay.host_policies`): when the prompt exceeds the budget,
    every message before the newest ``keep_recent`` tokens (whole steps, at least the newest)
    is replaced by one summary (:func:`compaction_params`). Summarised observations are gone
    verbatim. The summary's tokens are in every later prompt; ``info["summarise_tokens"]`` is
    what the summarising calls read (the prompt at each compaction), a cost the agent pays
    besides its own prompts (priced in :attr:`Run.extra_cost`)."""
    keep_recent, summary = compaction_params(t, budget)
    return compact_at(t, budget, keep_recent, summary)


def lru(t: Trajectory, budget: int, needs: Sequence[Need]) -> Run:
    """Least recently used: an observation is used when it is created and whenever a later
    step needs it (the detector's rules) while it is verbatim. Over budget, the least recently
    used observations become stubs (never the newest); stubs never come back."""
    steps = t.steps
    last_use = list(range(len(steps)))
    stub = [_lru_stub(s.action, s.obs_tokens) for s in steps]
    full = [True] * len(steps)
    by_step: dict[int, list[Need]] = {}
    for need in needs:
        by_step.setdefault(need.step, []).append(need)
    prompts: list[list[Segment]] = []
    live: list[frozenset[int]] = []
    for k in range(len(steps)):
        cost = t.fixed_tokens + sum(
            s.assistant_tokens + (s.obs_tokens if full[j] else stub[j])
            for j, s in enumerate(steps[:k])
        )
        if cost > budget:
            order = sorted((j for j in range(k - 1) if full[j]), key=lambda j: (last_use[j], j))
            for j in order:
                if cost <= budget:
                    break
                full[j] = False
                cost -= steps[j].obs_tokens - stub[j]
        obs: list[Segment | None] = [
            (("o", j), steps[j].obs_tokens) if full[j] else (("s", j), stub[j]) for j in range(k)
        ]
        prompts.append(prompt_of(t, k, obs))
        now = frozenset(j for j in range(k) if full[j])
        live.append(now)
        for need in by_step.get(k, []):
            for j in need.sources:
                if j in now:
                    last_use[j] = k
    return run_of(t, prompts, live)


_SWE_WINDOW = re.compile(r"^(\d+):", re.MULTILINE)


def call_for(s: Step) -> tuple[str, dict[str, Any]]:
    """The Veil tool call a trajectory step is: SWE-agent's file-window commands (``open``,
    ``goto``, ``scroll_*``) read a window of the open file, so they are ``read`` calls with
    that window; every other action is a ``bash`` command (whose tool declares a plain ``cat``
    or ``sed -n`` of one file as a read)."""
    if s.tool in ("open", "goto", "scroll_up", "scroll_down") and s.open_file:
        first = _SWE_WINDOW.search(s.observation)
        path = s.open_file
        if s.tool == "open":
            parts = s.action.split()
            path = parts[1] if len(parts) > 1 else path
        if first is not None:
            return "read", {"path": path, "offset": int(first.group(1)), "limit": 100}
        return "read", {"path": path}
    return "bash", {"command": s.action}


def thought_of(t: Trajectory, s: Step) -> str:
    """A step's assistant message without its action (which becomes the tool call)."""
    return f"THOUGHT: {s.thought}" if t.set == "A" else s.thought


"""The replay's clock starts here and advances 30 s a step: bit-reproducible runs."""


def veil(
    t: Trajectory,
    budget: int,
    embedder: Embedder,
    config: ContextConfig | None = None,
) -> Run:
    """Veil as the harness runs it: :class:`veil.agent.harness.VeilHarness`'s own hooks on the
    trajectory's messages, and the prompt counted exactly as ``transform_context`` and
    ``transform_system`` render it (the system prompt with its manifest, the conversation with
    stubs and collapsed runs' notes).

    Each step is an assistant message — the thought as its text, the action as one tool call
    (a ``bash`` call ``{"command": action}``, or a ``read``), as a tool-calling agent sends it —
    and its observation as the tool result: ``on_message`` then ``after_tool_call`` (capture,
    attempt), and the next request's ``transform_context`` (the turn boundary: score, evict,
    render). Every message costs what is sent: its text plus its tool calls as the harness
    counts them (a stubbed turn's calls without their arguments) — about what every other
    policy counts for the trajectory's own message, which holds the thought and the fenced
    action as text. The harness is given the budget every policy gets (``budget=``) and
    subtracts the system prompt and its manifest from it itself. A fake clock (30 s per step)
    makes a run bit-reproducible.

    ``info``: ``regrets``, ``fresh_evicted`` (steps whose newest observation was not in the
    prompt verbatim when the model was to read it: must be 0), ``clipped`` (newest results
    shown as head and tail because they could not fit), ``threshold_end``.
    """
    from veil.agent.harness import VeilHarness
    from veil.testing import FakeClock

    cfg = config or ContextConfig()
    clock = FakeClock(REPLAY_START)
    store = SQLiteStore(":memory:", embedder=embedder, clock=clock)
    harness = VeilHarness(
        store=store,
        scope=f"replay:{t.id}",
        session_id="replay",
        embedder=embedder,
        clock=clock,
        config=cfg,
        budget=budget,
    )
    harness.use_tools([], system_prompt=t.system)
    messages: list[Message] = [UserMessage(t.instance)]
    harness.start(t.instance, messages)
    tracker = PrefixTracker()
    tokens: list[int] = []
    live: list[frozenset[int]] = []
    shown: list[dict[int, object]] = []
    tails: list[int] = []
    fresh_evicted = clipped = 0
    originals: dict[str, int] = {}  # tool-call id → step
    for k, s in enumerate(t.steps):
        view = harness.transform_context(messages)
        system = harness.transform_system(t.system)
        segments: list[Segment] = [(("system", system), estimate_tokens(system))]
        now: set[int] = set()
        for m in view:
            if isinstance(m, AssistantMessage) and m.tool_calls:
                # What is sent: the text and the tool calls (a stubbed turn's without their
                # arguments), counted as the harness counts them.
                calls = "\n".join(
                    f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in m.tool_calls
                )
                cost = estimate_tokens(m.content) + estimate_tokens(calls)
                segments.append((("assistant", m.content, calls), cost))
            elif isinstance(m, ToolResultMessage):
                j = originals[m.tool_call_id]
                if m.content == t.steps[j].observation:
                    now.add(j)
                elif "characters of this output are left out" in m.content:
                    clipped += 1
                segments.append((("tool", j, m.content), estimate_tokens(m.content)))
            else:
                segments.append(((m.kind, m.content), estimate_tokens(m.content)))
        rendered = harness.rendered
        tails.append(rendered.tail_tokens if rendered is not None else 0)
        tracker.add(segments)
        tokens.append(sum(x[1] for x in segments))
        live.append(frozenset(now))
        shown.append(observations(segments))
        if k and k - 1 not in now:
            fresh_evicted += 1
        name, arguments = call_for(s)
        call = ToolCall(f"call_{k}", name, arguments)
        originals[call.id] = k
        # A tool-calling agent: the thought is the message's text, the action its tool call
        # (the trajectory's own message holds both as text, which every other policy counts).
        assistant = AssistantMessage(thought_of(t, s), (call,))
        messages.append(assistant)
        harness.on_message(assistant)
        result = ToolResult(s.observation)
        patched = harness.after_tool_call(call, result)
        messages.append(ToolResultMessage(call.id, name, (patched or result).content))
        clock.advance(seconds=30)
    # counted by the engine as it decides (the tape's events may still be in its background
    # writes here)
    regrets = harness.engine.expansions + harness.engine.returns
    store.close()
    return Run(
        tokens,
        live,
        {
            "regrets": float(regrets),
            "fresh_evicted": float(fresh_evicted),
            "clipped": float(clipped),
            "threshold_end": harness.engine.threshold,
        },
        tracker.cached,
        tails=tails,
        shown=shown,
    )
