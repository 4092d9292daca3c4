"""What a tool call of Claude Code or Codex addressed, for working memory (the engine knows no
tool by name; the proxy does). Pure.

Claude Code: ``Read`` (a file, a range of it with ``offset``/``limit``), ``Write``/``Edit``/
``MultiEdit``/``NotebookEdit`` (a file written), ``Bash``/``PowerShell`` (a command), ``Grep``,
``Glob``, ``WebFetch``, ``WebSearch``. Codex: ``exec_command``/``shell``/``local_shell`` (a
command), ``apply_patch`` (the files its patch names). Any other tool: its arguments name it
(the engine's generic target). Veil's own ``expand`` (``mcp__veil__expand`` in Claude Code,
``mcp__veil.expand`` in Codex) is an expansion: its result is the item it restores.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from veil.context.transcript import Addressed, Call

EXPAND_TOOLS = ("mcp__veil__expand", "mcp__veil.expand", "veil_expand")
_PATCHED = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$", re.MULTILINE)


def _text(args: Mapping[str, Any], *keys: str) -> str:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value:
            return " ".join(str(v) for v in value)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return ""


def describe(call: Call) -> Addressed:
    args = call.arguments
    name = call.name.rsplit(".", 1)[-1] if call.name.startswith("mcp__") else call.name
    if name == "Read":
        path = _text(args, "file_path", "path")
        offset, limit = args.get("offset"), args.get("limit")
        partial = offset is not None or limit is not None
        where = f"{path}#{offset or 1}+{limit}" if partial else path
        return Addressed(target=where or None, reads=path or None, partial=partial)
    if name in ("Write", "Edit", "MultiEdit", "NotebookEdit"):
        path = _text(args, "file_path", "notebook_path", "path")
        return Addressed(target=path or None, writes=path or None)
    if name in ("Bash", "PowerShell", "exec_command", "shell", "local_shell", "container.exec"):
        command = _text(args, "command", "cmd")
        return Addressed(target=command or None)
    if name == "apply_patch":
        patch = _text(args, "input", "patch", "command")
        files = list(dict.fromkeys(_PATCHED.findall(patch)))
        return Addressed(
            target=("apply_patch " + " ".join(files)) if files else "apply_patch",
            writes=files[0] if len(files) == 1 else None,
        )
    if name == "Grep":
        return Addressed(target=f"grep {_text(args, 'pattern')} {_text(args, 'path')}".strip())
    if name == "Glob":
        return Addressed(target=f"glob {_text(args, 'pattern')} {_text(args, 'path')}".strip())
    if name in ("WebFetch", "WebSearch"):
        return Addressed(target=_text(args, "url", "query") or None)
    return Addressed()
