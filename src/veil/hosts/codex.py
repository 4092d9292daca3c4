"""Codex (npm ``@openai/codex``), as Veil serves it.

Facts observed on the pinned 0.171.0 (the binaries report of this round):

- **Expand.** Veil's MCP server ``veil`` is a tool namespace ``mcp__veil`` holding ``expand``,
  deferred behind Codex's tool search for the models it knows (found by a ``tool_search_call``);
  in code mode (its default ``gpt-6.2-sol``) the model calls ``tools.mcp__veil__expand(…)`` from
  its ``exec`` tool. Either way the name to give the model is ``mcp__veil__expand``.
- **Fixed part.** About 9,000 tokens before any message with ``gpt-5.5``, about 15,000 with
  ``gpt-6.2-sol``.
- **Its own compaction.** At 90 % of the window (``model_auto_compact_token_limit`` in its
  ``config.toml`` can only lower that; ``model_context_window`` lowers the window). For a custom
  provider the compaction is an ordinary request whose last input is a user message "You are
  performing a CONTEXT CHECKPOINT COMPACTION…".
- **Model.** ``gpt-6.2-sol`` unless ``-m``/``--model`` (or ``model`` in its configuration) say
  otherwise.
"""

from __future__ import annotations

from veil.hosts.host import Env, Host

COMPACT_SHARE = 0.9


def window(model: str, known: int, env: Env) -> int:
    """The window Codex uses for ``model`` (its ``model_context_window`` setting, passed here
    as ``CODEX_MODEL_CONTEXT_WINDOW`` by the caller that read its configuration, lowers it)."""
    configured = env.get("CODEX_MODEL_CONTEXT_WINDOW", "")
    return min(known, int(configured)) if configured.isdigit() else known


def compaction(model: str, window: int, env: Env) -> int | None:
    """Where Codex compacts on its own: 90 % of the window, or its configured limit below it."""
    threshold = int(window * COMPACT_SHARE)
    configured = env.get("CODEX_AUTO_COMPACT_TOKEN_LIMIT", "")
    return min(threshold, int(configured)) if configured.isdigit() else threshold


HOST = Host(
    name="codex",
    title="Codex",
    expand_tool="mcp__veil__expand",
    fixed_tokens=15_000,
    window=window,
    compaction=compaction,
    default_model="gpt-6.2-sol",
    compaction_markers=("CONTEXT CHECKPOINT COMPACTION",),
    model_variable="CODEX_CONFIG_MODEL",
)
