"""Veil's entries in Claude Code's JSON settings: merged in, never clobbering. Pure functions
over parsed JSON, plus reading and writing the files.

``merge_hooks`` adds one matcher group per event to ``settings["hooks"]`` (the documented
three levels: event → matcher group → handlers), after removing any handler of Veil's from an
earlier install; everything else — other keys, other events, other groups, other handlers —
stays as it was, in its order. Running it twice gives the same settings (idempotent), and
``remove_hooks`` takes out only Veil's handlers (a group that held only Veil's goes too).
A handler is Veil's when it is a command that runs ``veil hook claude-code`` (or
``python -m veil.cli.main hook claude-code``).

``merge_mcp`` / ``remove_mcp`` do the same for the ``veil`` entry of ``mcpServers`` (in a
project's ``.mcp.json`` or the user's ``~/.claude.json``); an entry named ``veil`` that runs
something else is refused, not replaced.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

MCP_NAME = "veil"
_HOOK = re.compile(
    r"(^|[\s/\\\"'])veil(\.exe)?[\"']?\s+hook\s+claude-code\b|veil\.cli\.main\s+hook\s+claude-code\b"
)
_MCP_COMMAND = re.compile(r"(^|[/\\])veil(\.exe)?$")

TRACKED_TOOLS = "Bash|PowerShell|Edit|Write|MultiEdit|NotebookEdit|Read"
EDIT_TOOLS = "Edit|Write|MultiEdit|NotebookEdit"


class SettingsError(ValueError):
    """A settings file Veil will not change (unreadable, not JSON, an unexpected shape, a
    foreign ``veil`` entry); the message names the file and what is wrong."""


@dataclass(frozen=True)
class HookSpec:
    """One hook Veil installs: the event, its matcher (``None``: every occurrence) and the
    timeout in seconds Claude Code gives it."""

    event: str
    matcher: str | None
    timeout: int


HOOKS: tuple[HookSpec, ...] = (
    HookSpec("SessionStart", None, 15),
    HookSpec("UserPromptSubmit", None, 15),
    HookSpec("PreToolUse", TRACKED_TOOLS, 10),
    HookSpec("PostToolUse", TRACKED_TOOLS, 10),
    HookSpec("PostToolUseFailure", TRACKED_TOOLS, 10),
    HookSpec("PreCompact", None, 60),
)


def is_veil_hook(handler: object) -> bool:
    if not isinstance(handler, dict):
        return False
    h = cast(dict[str, Any], handler)
    command = h.get("command")
    return h.get("type") == "command" and isinstance(command, str) and bool(_HOOK.search(command))


def hook_command(veil: Sequence[str], event: str) -> str:
    """The shell command of one hook: the veil invocation, ``hook claude-code EVENT``."""
    import shlex

    return shlex.join([*veil, "hook", "claude-code", event])


def _hooks_table(settings: Mapping[str, Any], where: str) -> dict[str, Any]:
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError(f'{where}: "hooks" is not an object; Veil will not change it')
    return cast(dict[str, Any], hooks)


def remove_hooks(settings: Mapping[str, Any], where: str = "settings") -> dict[str, Any]:
    """``settings`` without Veil's hook handlers (see the module docstring)."""
    out = dict(settings)
    if "hooks" not in settings:
        return out
    hooks: dict[str, Any] = {}
    for event, groups in _hooks_table(settings, where).items():
        if not isinstance(groups, list):
            hooks[event] = groups
            continue
        kept: list[Any] = []
        removed = False
        for group in cast(list[Any], groups):
            handlers = cast(dict[str, Any], group).get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list):
                kept.append(group)
                continue
            mine = [h for h in cast(list[Any], handlers) if is_veil_hook(h)]
            if not mine:
                kept.append(group)
                continue
            removed = True
            others = [h for h in cast(list[Any], handlers) if not is_veil_hook(h)]
            if others:
                kept.append({**cast(dict[str, Any], group), "hooks": others})
        if kept or not removed:
            hooks[event] = kept
    if hooks or not settings.get("hooks"):
        out["hooks"] = hooks
    else:
        del out["hooks"]
    return out


def merge_hooks(
    settings: Mapping[str, Any], veil: Sequence[str], where: str = "settings"
) -> dict[str, Any]:
    """``settings`` with Veil's hooks (:data:`HOOKS`) run by the ``veil`` invocation."""
    out = remove_hooks(settings, where)
    hooks = dict(_hooks_table(out, where))
    for spec in HOOKS:
        existing = hooks.get(spec.event, [])
        if not isinstance(existing, list):
            raise SettingsError(
                f"{where}: hooks.{spec.event} is not a list; Veil will not change it"
            )
        group: dict[str, Any] = {}
        if spec.matcher is not None:
            group["matcher"] = spec.matcher
        group["hooks"] = [
            {"type": "command", "command": hook_command(veil, spec.event), "timeout": spec.timeout}
        ]
        hooks[spec.event] = [*cast(list[Any], existing), group]
    out["hooks"] = hooks
    return out


def _servers(config: Mapping[str, Any], where: str) -> dict[str, Any]:
    servers = config.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise SettingsError(f'{where}: "mcpServers" is not an object; Veil will not change it')
    return cast(dict[str, Any], servers)


def is_veil_server(entry: object) -> bool:
    """Whether an ``mcpServers`` entry runs ``veil mcp`` (or ``python -m veil.cli.main mcp``)."""
    if not isinstance(entry, dict):
        return False
    e = cast(dict[str, Any], entry)
    command, args = e.get("command"), e.get("args")
    if not isinstance(command, str) or not isinstance(args, list):
        return False
    words = [command, *(str(a) for a in cast(list[Any], args))]
    if "mcp" not in words:
        return False
    return bool(_MCP_COMMAND.search(command)) or "veil.cli.main" in words


def mcp_entry(veil: Sequence[str], args: Sequence[str]) -> dict[str, Any]:
    """A stdio ``mcpServers`` entry running ``veil mcp ARGS``."""
    return {"type": "stdio", "command": veil[0], "args": [*veil[1:], "mcp", *args], "env": {}}


def merge_mcp(config: Mapping[str, Any], entry: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``config`` with ``mcpServers.veil`` set to ``entry``; a foreign ``veil`` entry is a
    :class:`SettingsError`."""
    servers = dict(_servers(config, where))
    current = servers.get(MCP_NAME)
    if current is not None and not is_veil_server(current):
        raise SettingsError(
            f"{where}: an MCP server named {MCP_NAME!r} that does not run `veil mcp` is already "
            "configured; rename or remove it, then install again"
        )
    servers[MCP_NAME] = dict(entry)
    return {**config, "mcpServers": servers}


def remove_mcp(config: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``config`` without Veil's ``mcpServers.veil`` (a foreign entry of that name stays)."""
    if "mcpServers" not in config:
        return dict(config)
    servers = dict(_servers(config, where))
    if is_veil_server(servers.get(MCP_NAME)):
        del servers[MCP_NAME]
    return {**config, "mcpServers": servers}


# ---- files ---------------------------------------------------------------------------------


def read_json(path: Path) -> dict[str, Any]:
    """A JSON settings file as an object (``{}`` when the file does not exist)."""
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if not text.strip():
        return {}
    try:
        data: object = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "fix it and install again — Veil does not rewrite a file it cannot read"
        ) from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: holds a JSON {type(data).__name__}, not an object")
    return cast(dict[str, Any], data)


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Write atomically (a temporary file renamed over the old one), 2-space indented."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.veil-tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def update_json(path: Path, change: Callable[[dict[str, Any]], dict[str, Any]]) -> bool:
    """Apply ``change`` (parsed JSON → parsed JSON) to the file; write only when it changed.
    Returns whether it did."""
    before = read_json(path)
    after = change(before)
    if after == before and path.exists():
        return False
    if not after and not path.exists():
        return False
    write_json(path, after)
    return True
