"""The host agents' own context policies, replayed like the baselines of
:mod:`benchmarks.replay.policies` (same prompts, same tokens, same :class:`~benchmarks.replay.
policies.Run`), each at the trajectory's budget ``B``.

Scaling. A host's constants are written for its model's window ``W``; here the budget ``B``
plays the window's part, so every constant ``c`` becomes ``c × B / W`` (:func:`scaled`): the
rule keeps its shape — protect the newest 20 % of the window, cap one output at 3.7 % of it —
while the window shrinks to what these short trajectories need. ``W`` is 200,000 for Claude
Code (its default window), opencode and pi (a Claude model's window; both are multi-provider)
and 272,000 for Codex (``CONTEXT_WINDOW_272K``, the gpt-5.x-codex models). Fractions of the
window (Codex's 90 %) apply to ``B`` as they are.

The rules, and where they come from:

- **Claude Code, API context editing** (:func:`claude_context_editing`) — Anthropic's
  ``clear_tool_uses_20250919`` strategy (https://docs.claude.com/en/docs/build-with-claude/
  context-editing): "once the prompt exceeds" the ``trigger`` (default 100,000 input tokens)
  the API "clears the oldest tool results in chronological order, replacing them with
  placeholder text", keeping the ``keep`` most recent tool uses (default 3); ``clear_at_least``
  defaults to none. It runs server-side on every request while the client keeps the full
  history, so once the full history passes the trigger it stays past it and every result but
  the 3 newest is cleared from then on. Claude Code sends this strategy from
  ``services/compact/apiMicrocompact.ts`` (``getAPIContextManagement``, in the source
  reconstructed from its npm source map) only for Anthropic-internal users and behind the
  ``USE_API_CLEAR_TOOL_RESULTS`` / ``USE_API_CLEAR_TOOL_USES`` flags; the rule below is the
  API's documented one. Here: ``trigger`` = ``B``, ``keep`` = 3, the placeholder
  ``[Old tool result content cleared]`` (the API's text is not documented; this is Claude
  Code's own client-side placeholder and opencode's).
- **Claude Code compaction** (:func:`claude_compaction`) — auto-compact near the end of the
  window replaces the conversation with a structured summary
  (https://code.claude.com/docs/en/how-claude-code-works, "When context fills up"; the
  trigger is the effective window less a 13,000-token buffer, ``AUTOCOMPACT_BUFFER_TOKENS`` in
  ``services/compact/autoCompact.ts``). Here: when the prompt exceeds ``B`` every step but the
  newest becomes one summary (the shared model: :func:`~benchmarks.replay.policies.
  compaction_params`, at most 2,000 tokens, a tenth of the room above the fixed prompt for
  small budgets). Keeping the newest step verbatim favours the host: Claude Code summarises
  it too and re-attaches up to 5 recently read files instead (``POST_COMPACT_MAX_FILES_TO_
  RESTORE``).
- **Codex** (:func:`codex`) — auto-compaction at 90 % of the window:
  ``ModelInfo::auto_compact_token_limit()`` = ``(context_window * 9) / 10`` in
  ``codex-rs/protocol/src/openai_models.rs`` (a configured ``model_auto_compact_token_limit``
  can only lower it). The compacted history (``codex-rs/core/src/compact.rs``) is the initial
  context, the newest user messages up to ``COMPACT_USER_MESSAGE_MAX_TOKENS`` = 20,000 (here
  the task, which is in the fixed prompt) and the summary — no tool output; the newest step is
  kept, as for Claude Code. Every tool output is cut to ``TruncationPolicy::Tokens(10_000)``
  (``tool_output_token_limit``) by keeping its head and tail around ``…N tokens truncated…``
  (``truncate_middle`` in ``codex-rs/core/src/truncate.rs``); a cut output is never verbatim.
  Here: compaction at ``0.9 × B``, the cap ``10,000 × B / 272,000`` (``scale_cap=False``: the
  10,000 tokens as they are, a sensitivity check — outputs do not shrink with the window).
- **opencode prune, scaled** (:func:`opencode_scaled`) — ``SessionCompaction.prune`` in
  ``packages/opencode/src/session/compaction.ts``: walking back from the newest message, past
  the newest turns, stopping at the first output already pruned, tool outputs beyond the
  newest ``PRUNE_PROTECT`` = 40,000 tokens are replaced by ``[Old tool result content
  cleared]``, only if together they exceed ``PRUNE_MINIMUM`` = 20,000 (strictly:
  ``pruned > PRUNE_MINIMUM``) — exactly :func:`~benchmarks.replay.policies.opencode_prune`,
  which reads a turn as a step (a SWE-bench run is one user turn, and opencode skips the
  newest 2 user turns, so as written it would never prune one; recent opencode also prunes
  only when ``compaction.prune`` is set). Here: protect
  ``40,000 × B / 200,000``, minimum ``20,000 × B / 200,000``.
- **pi** (:func:`pi`) — ``packages/coding-agent/src/core/compaction/compaction.ts`` in
  pi-mono: ``DEFAULT_COMPACTION_SETTINGS`` = {reserveTokens: 16384, keepRecentTokens: 20000},
  ``shouldCompact``: ``contextTokens > contextWindow − reserveTokens`` (checked between tool
  rounds as well as after a run), ``findCutPoint`` keeps the newest ``keepRecentTokens`` from
  an assistant or user message on, never cutting at a tool result. Here: compaction at
  ``B − 16,384 × B / 200,000``, keeping ``20,000 × B / 200,000`` (pi's cut rule:
  :func:`~benchmarks.replay.policies.compact_at` with ``cut_rule="pi"``), the shared summary.
"""

from __future__ import annotations

from benchmarks.replay.load import Trajectory
from benchmarks.replay.policies import (
    Run,
    Segment,
    compact_at,
    compaction_params,
    opencode_prune,
    prompt_of,
    run_of,
)
from veil.replay import host_rules
from veil.replay.host_rules import (
    CLEARED_STUB_TOKENS,
    CODEX_TOOL_OUTPUT_TOKENS,
    CONTEXT_EDITING_KEEP,
)

CLAUDE_WINDOW = 200_000
CODEX_WINDOW = 272_000
OPENCODE_WINDOW = 200_000
PI_WINDOW = 200_000

CODEX_COMPACT_FRACTION = 0.9
OPENCODE_PRUNE_PROTECT = 40_000
OPENCODE_PRUNE_MINIMUM = 20_000
PI_RESERVE_TOKENS = 16_384
PI_KEEP_RECENT_TOKENS = 20_000


def scaled(tokens: int, window: int, budget: int) -> int:
    """A host constant written for ``window`` at this trajectory's ``budget``: the same
    fraction of it."""
    return max(1, round(tokens * budget / window))


def claude_context_editing(t: Trajectory, budget: int, keep: int = CONTEXT_EDITING_KEEP) -> Run:
    """``clear_tool_uses_20250919`` with ``trigger`` = ``budget``
    (:func:`veil.replay.host_rules.claude_context_editing`)."""
    return host_rules.claude_context_editing(t, budget, keep)


CLEAR_AT_LEAST_SHARE = 1 / 6
"""``clear_at_least`` as a share of the trigger: 5,000 of 30,000 in Anthropic's own example
(``examples/memory/basic.py`` in anthropic-sdk-python)."""


def context_editing_clear_at_least(
    t: Trajectory, budget: int, keep: int = CONTEXT_EDITING_KEEP
) -> Run:
    """``clear_tool_uses_20250919`` with ``trigger`` = ``budget``, ``keep`` = 3 and
    ``clear_at_least`` = a sixth of the trigger — the cache-aware setting users can switch on
    today. The API edits each request on its own (the client sends the whole history every
    time): when the full prompt exceeds the trigger, every tool result but the ``keep`` newest
    is cleared, *if* that clears at least ``clear_at_least`` tokens; otherwise none is."""
    steps = t.steps
    at_least = int(budget * CLEAR_AT_LEAST_SHARE)
    full = t.fixed_tokens
    prompts: list[list[Segment]] = []
    live: list[frozenset[int]] = []
    applied = 0
    for k in range(len(steps)):
        if k:
            full += steps[k - 1].assistant_tokens + steps[k - 1].obs_tokens
        first_kept = max(0, k - keep) if full > budget else 0
        freed = sum(steps[j].obs_tokens - CLEARED_STUB_TOKENS for j in range(first_kept))
        if freed < at_least:
            first_kept = 0
        applied += first_kept > 0
        obs: list[Segment | None] = [
            (("o", j), steps[j].obs_tokens) if j >= first_kept else (("c", j), CLEARED_STUB_TOKENS)
            for j in range(k)
        ]
        prompts.append(prompt_of(t, k, obs))
        live.append(frozenset(range(first_kept, k)))
    return run_of(t, prompts, live, {"applied": float(applied)})


def claude_compaction(t: Trajectory, budget: int) -> Run:
    """Auto-compact when the prompt exceeds the budget: every step but the newest becomes the
    summary (:func:`veil.replay.host_rules.claude_compaction`)."""
    return host_rules.claude_compaction(t, budget)


def codex(t: Trajectory, budget: int, *, scale_cap: bool = True) -> Run:
    """Codex (:func:`veil.replay.host_rules.codex`): every tool output cut to the (scaled)
    10,000-token cap, compaction at 90 % of the budget keeping only the newest step and the
    summary."""
    cap = (
        scaled(CODEX_TOOL_OUTPUT_TOKENS, CODEX_WINDOW, budget)
        if scale_cap
        else CODEX_TOOL_OUTPUT_TOKENS
    )
    _, summary = compaction_params(t, budget)
    return host_rules.codex(t, int(CODEX_COMPACT_FRACTION * budget), cap, summary)


def opencode_scaled(t: Trajectory, budget: int) -> Run:
    """opencode's prune with its 40,000 / 20,000 constants scaled to the budget."""
    return opencode_prune(
        t,
        scaled(OPENCODE_PRUNE_PROTECT, OPENCODE_WINDOW, budget),
        scaled(OPENCODE_PRUNE_MINIMUM, OPENCODE_WINDOW, budget),
    )


def pi(t: Trajectory, budget: int) -> Run:
    """pi: compaction when the prompt exceeds the budget less the scaled 16,384-token reserve,
    keeping the scaled 20,000 newest tokens from a step boundary on."""
    _, summary = compaction_params(t, budget)
    trigger = budget - scaled(PI_RESERVE_TOKENS, PI_WINDOW, budget)
    keep = scaled(PI_KEEP_RECENT_TOKENS, PI_WINDOW, budget)
    return compact_at(t, trigger, keep, summary, cut_rule="pi")
