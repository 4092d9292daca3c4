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
- **Tools** (:func:`describe`): ``exec_command`` (``cmd``), ``shell`` (``command``, a list:
  ``["bash", "-lc", "…"]``), ``local_shell`` (its ``action``'s ``command``), ``apply_patch``
  (the patch text: ``input`` to the model, ``command`` in its hooks; its ``*** Update/Add/Delete
  File:`` lines name the files, relative to its working directory). Its hooks name every shell
  command ``Bash`` (``command``, a string). Veil's expand arrives as ``mcp__veil__expand`` or,
  in its MCP namespace, ``mcp__veil.expand``.
- **Versions.** :data:`TESTED`: only the pin of ``tests/hosts/binaries.py``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from veil.hosts.host import Env, Host, Use, command, relative, text

TESTED = ("0.171.0", "0.171.0")
"""The oldest and the newest Codex Veil is tested with (``veil doctor`` warns outside)."""
COMMANDS = frozenset({"exec_command", "shell", "local_shell", "local_shell_call", "container.exec"})
HOOK_COMMAND = "Bash"
"""What Codex's hooks call a shell command."""
PATCHED = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$", re.MULTILINE)
"""A file an ``apply_patch`` patch changes."""

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


def _command_line(arguments: Mapping[str, Any]) -> str:
    """The command of a shell call: ``cmd`` or ``command``, a string or a list (the command
    the model wrote when the list is ``[shell, "-c"/"-lc", command]``)."""
    for key in ("cmd", "command"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value:
            words = [str(v) for v in value]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            if len(words) == 3 and words[1] in ("-c", "-lc"):
                return words[2]
            return " ".join(words)
    return ""


def describe(name: str, arguments: Mapping[str, Any], root: Path | None = None) -> Use | None:
    """What a call of Codex's tool ``name`` (as its model or its hooks name it) addresses (see
    :class:`~veil.hosts.host.Use`), or None: not one of its tools, or a call without the
    command or patch its tool needs. A patch is a ``write`` of the files it names (its target
    ``apply_patch`` when it names none)."""
    if name in COMMANDS or name == HOOK_COMMAND:
        return command(_command_line(arguments))
    if name == "apply_patch":
        patch = text(arguments, "input", "command", "patch")
        if not patch.strip():
            return None
        files = tuple(dict.fromkeys(relative(f, root) for f in PATCHED.findall(patch)))
        return Use("write", " ".join(files) or "apply_patch", files)
    return None


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
    describe=describe,
    expand_calls=("mcp__veil__expand", "mcp__veil.expand"),
    deferred_expand=("- mcp__veil\n", "- mcp__veil\\n"),
    resume="resume {session}",
    package="@openai/codex",
    tested=TESTED,
)
