"""Claude Code (npm ``@anthropic-ai/claude-code``), as Veil serves it.

Facts observed on the pinned 2.1.332 (``../shared/notes``, the binaries report of this round):

- **Expand.** Veil's MCP server ``veil`` gives the model ``mcp__veil__expand``; by default the
  tool is deferred behind Claude Code's tool search (named in a system message, loaded by a
  ``ToolSearch`` call), and sent directly with ``ENABLE_TOOL_SEARCH=false``. Veil's Claude
  Code plugin (``plugins/veil``) runs the same server as ``plugin:veil:veil``: its expand is
  ``mcp__plugin_veil_veil__expand`` (:data:`PLUGIN_EXPAND`).
- **Fixed part.** About 12,000 tokens before any message (system prompt, 12 tools, a system
  message of the environment and the deferred tools); about 19,000 with tool search off.
- **Its own compaction.** At ``(W − min(max output, 20,000)) − 13,000`` input tokens, ``W`` the
  window: 967,000 for its default ``claude-opus-5-5`` (a native 1M window).
  ``CLAUDE_CODE_DISABLE_1M_CONTEXT`` caps ``W`` at 200,000; ``CLAUDE_CODE_AUTO_COMPACT_WINDOW``
  (tokens, ``200k``, ``1m``) lowers it, never below 100,000; ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE``
  (0 < p ≤ 100) lowers the threshold to ``p`` % of ``W − min(max output, 20,000)``;
  ``DISABLE_AUTO_COMPACT`` or ``DISABLE_COMPACT`` switch it off. Its compaction request carries
  the tools as usual and adds "CRITICAL: Respond with TEXT ONLY…" to the last user message.
- **Model.** ``claude-opus-5-5`` unless ``--model`` or ``ANTHROPIC_MODEL`` say otherwise.
- **Tools** (:func:`describe`; the same names and inputs reach its hooks): ``Read``
  (``file_path``, ``offset``: the first line, ``limit``: how many), ``Write``/``Edit``/
  ``MultiEdit`` (``file_path``) and ``NotebookEdit`` (``notebook_path``), ``Bash``/
  ``PowerShell`` (``command``), ``Grep``/``Glob`` (``pattern``, ``path``), ``WebFetch``
  (``url``), ``WebSearch`` (``query``). Paths are absolute.
- **Versions.** :data:`TESTED`, from 2.1.197 (what a plain ``npm install
  @anthropic-ai/claude-code`` installs on Node 20; ``tests/hosts/binaries.py`` pins it beside
  the newest and the key sessions run on both) to 2.1.332 (the pin the real-binary suites
  run). 2.1.197 ends a run on ``continue: false`` from PostToolBatch and PostToolUse but not
  beside a PreToolUse deny, does not restart a dead MCP server, answers a re-read of an
  unchanged file with "Wasted call — file unchanged since your last Read" and defaults to
  ``claude-opus-4-8`` (docs/claude-code.md, "Claude Code versions").
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from veil.hosts.host import Env, Host, Use, command, read, relative, text, whole

PLUGIN_EXPAND = "mcp__plugin_veil_veil__expand"
"""Veil's expand as the plugin gives it (observed on 2.1.332, ``tests/hosts/
test_claude_code_plugin.py``); ``veil claude`` adds the server ``veil`` beside the plugin's,
so a stub names ``mcp__veil__expand`` and the model may call either."""
TESTED = ("2.1.197", "2.1.332")
"""The oldest and the newest Claude Code Veil is tested with (``veil doctor`` warns outside)."""
WRITES = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
COMMANDS = frozenset({"Bash", "PowerShell"})
SEARCHES = {"Grep": "grep", "Glob": "glob"}
WEB = {"WebFetch": "url", "WebSearch": "query"}

BUFFER = 13_000
OUTPUT_CAP = 20_000
MIN_WINDOW = 100_000
ONE_M_OFF = 200_000
TRUE = frozenset({"1", "true", "yes", "on"})


def _tokens(text: str) -> int | None:
    """``200000``, ``200k`` or ``1m`` as tokens (None: not a size)."""
    text = text.strip().lower()
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    number = text[:-1] if scale > 1 else text
    try:
        return int(float(number) * scale)
    except ValueError:
        return None


def window(model: str, known: int, env: Env) -> int:
    """The window Claude Code uses for ``model``."""
    if env.get("CLAUDE_CODE_DISABLE_1M_CONTEXT", "").lower() in TRUE:
        known = min(known, ONE_M_OFF)
    configured = _tokens(env.get("CLAUDE_CODE_AUTO_COMPACT_WINDOW", ""))
    if configured is not None:
        known = min(known, max(MIN_WINDOW, configured))
    return known


def compaction(model: str, window: int, env: Env) -> int | None:
    """Where Claude Code compacts on its own (None: switched off)."""
    if (
        env.get("DISABLE_AUTO_COMPACT", "").lower() in TRUE
        or env.get("DISABLE_COMPACT", "").lower() in TRUE
    ):
        return None
    from veil.llm.catalog import max_output_tokens

    effective = window - min(max_output_tokens(model), OUTPUT_CAP)
    threshold = effective - BUFFER
    try:
        percent = float(env.get("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "") or 0)
    except ValueError:
        percent = 0.0
    if 0 < percent <= 100:
        threshold = min(int(effective * percent / 100), threshold)
    return threshold


def describe(name: str, arguments: Mapping[str, Any], root: Path | None = None) -> Use | None:
    """What a call of Claude Code's tool ``name`` addresses (see :class:`~veil.hosts.host.Use`),
    or None: not one of its tools, or a call without the path or command its tool needs."""
    if name == "Read":
        path = text(arguments, "file_path")
        if not path:
            return None
        rel = relative(path, root)
        first, count = whole(arguments.get("offset")), whole(arguments.get("limit"))
        return read(rel, first, count)
    if name in WRITES:
        path = text(arguments, "notebook_path" if name == "NotebookEdit" else "file_path")
        rel = relative(path, root) if path else ""
        return Use("write", rel, (rel,)) if rel else None
    if name in COMMANDS:
        return command(text(arguments, "command"))
    if name in SEARCHES:
        path = text(arguments, "path")
        words = (SEARCHES[name], text(arguments, "pattern"), relative(path, root) if path else "")
        return Use("look", " ".join(w for w in words if w))
    if name in WEB:
        found = text(arguments, WEB[name])
        return Use("look", found) if found else None
    return None


HOST = Host(
    name="claude",
    title="Claude Code",
    expand_tool="mcp__veil__expand",
    fixed_tokens=19_000,
    window=window,
    compaction=compaction,
    default_model="claude-opus-5-5",
    compaction_markers=("CRITICAL: Respond with TEXT ONLY",),
    model_variable="ANTHROPIC_MODEL",
    describe=describe,
    expand_calls=("mcp__veil__expand", PLUGIN_EXPAND),
    resume="--resume {session}",
    package="@anthropic-ai/claude-code",
    tested=TESTED,
)
