"""The host agents' own context rules, replayed like every policy of :mod:`veil.replay.policies`
(same prompts, same tokens, same :class:`~veil.replay.policies.Run`). Pure.

Each rule takes the point where it acts in the trajectory's tokens: ``veil replay`` passes the
host's real threshold (:mod:`veil.hosts`), the benchmark the trajectory's budget with the
constants scaled to it (``benchmarks/replay/host_policies.py``).

- **Claude Code compaction** (:func:`claude_compaction`) — auto-compact near the end of the
  window replaces the conversation with a structured summary
  (https://code.claude.com/docs/en/how-claude-code-works, "When context fills up"; the
  trigger is the effective window less a 13,000-token buffer, ``AUTOCOMPACT_BUFFER_TOKENS`` in
  ``services/compact/autoCompact.ts``; :func:`veil.hosts.claude_code.compaction`). Here: when
  the prompt exceeds the trigger every step but the newest becomes one summary
  (:func:`~veil.replay.policies.compaction_params`: at most 2,000 tokens, a tenth of the room
  above the fixed prompt for small budgets). Keeping the newest step verbatim favours the
  host: Claude Code summarises it too and re-attaches up to 5 recently read files instead
  (``POST_COMPACT_MAX_FILES_TO_RESTORE``).
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
  ``USE_API_CLEAR_TOOL_RESULTS`` / ``USE_API_CLEAR_TOOL_USES`` flags; the rule here is the
  API's documented one, with the placeholder ``[Old tool result content cleared]`` (the API's
  text is not documented; this is Claude Code's own client-side placeholder and opencode's).
- **Codex** (:func:`codex`) — auto-compaction at 90 % of the window:
  ``ModelInfo::auto_compact_token_limit()`` = ``(context_window * 9) / 10`` in
  ``codex-rs/protocol/src/openai_models.rs`` (a configured ``model_auto_compact_token_limit``
  can only lower it; :func:`veil.hosts.codex.compaction`). The compacted history
  (``codex-rs/core/src/compact.rs``) is the initial context, the newest user messages up to
  ``COMPACT_USER_MESSAGE_MAX_TOKENS`` = 20,000 and the summary — no tool output; the newest
  step is kept, as for Claude Code. Every tool output is cut to
  ``TruncationPolicy::Tokens(10_000)`` (``tool_output_token_limit``) by keeping its head and
  tail around ``…N tokens truncated…`` (``truncate_middle`` in
  ``codex-rs/core/src/truncate.rs``); a cut output is never verbatim.
"""

from __future__ import annotations

from veil.replay.policies import (
    Run,
    Segment,
    compact_at,
    compaction_params,
    prompt_of,
    run_of,
)
from veil.replay.trajectory import Trajectory
from veil.tokens import estimate_tokens

CLEARED_STUB = "[Old tool result content cleared]"
CLEARED_STUB_TOKENS = estimate_tokens(CLEARED_STUB)
CONTEXT_EDITING_KEEP = 3
"""``clear_tool_uses_20250919``'s default ``keep``: 3 tool uses."""
CODEX_TOOL_OUTPUT_TOKENS = 10_000


def claude_compaction(t: Trajectory, trigger: int, summary: int | None = None) -> Run:
    """Auto-compact when the prompt exceeds ``trigger``: every step but the newest becomes the
    summary (``summary`` tokens; default :func:`~veil.replay.policies.compaction_params`'s at
    the trigger)."""
    if summary is None:
        _, summary = compaction_params(t, trigger)
    return compact_at(t, trigger, 0, summary)


def claude_context_editing(t: Trajectory, trigger: int, keep: int = CONTEXT_EDITING_KEEP) -> Run:
    """``clear_tool_uses_20250919`` at ``trigger``: from the first step whose full prompt (what
    the client sends) exceeds it, every observation but the ``keep`` newest is a placeholder,
    and stays one."""
    steps = t.steps
    full = t.fixed_tokens
    triggered = False
    prompts: list[list[Segment]] = []
    live: list[frozenset[int]] = []
    for k in range(len(steps)):
        if k:
            full += steps[k - 1].assistant_tokens + steps[k - 1].obs_tokens
        triggered = triggered or full > trigger
        first_kept = max(0, k - keep) if triggered else 0
        obs: list[Segment | None] = [
            (("o", j), steps[j].obs_tokens) if j >= first_kept else (("c", j), CLEARED_STUB_TOKENS)
            for j in range(k)
        ]
        prompts.append(prompt_of(t, k, obs))
        live.append(frozenset(range(first_kept, k)))
    cleared = max(0, len(steps) - 1 - keep) if triggered else 0
    return run_of(t, prompts, live, {"cleared": float(cleared)})


def codex_truncated(obs_tokens: int, cap: int) -> int:
    """Tokens of an output cut to ``cap`` by ``truncate_middle``: head + marker + tail."""
    if obs_tokens <= cap:
        return obs_tokens
    return cap + estimate_tokens(f"…{obs_tokens - cap} tokens truncated…\n")


def codex(t: Trajectory, trigger: int, cap: int, summary: int) -> Run:
    """Codex: every tool output cut to ``cap`` tokens, compaction when the prompt exceeds
    ``trigger``, keeping only the newest step and a summary of ``summary`` tokens."""
    shown = [codex_truncated(s.obs_tokens, cap) for s in t.steps]
    clipped = frozenset(j for j, s in enumerate(t.steps) if shown[j] != s.obs_tokens)
    run = compact_at(t, trigger, 0, summary, shown=shown, clipped=clipped)
    run.info["truncated"] = float(len(clipped))
    return run
