"""Veil's entries in Claude Code's JSON settings: merged in, never clobbering. Pure functions
over parsed JSON, plus reading and writing the files.

``merge_hooks`` adds one matcher group per event to ``settings["hooks"]`` (the documented
three levels: event → matcher group → handlers), after removing any handler of Veil's from an
earlier install; everything else — other keys, other events, other groups, other handlers —
stays as it was, in its order. Running it twice gives the same settings (idempotent), and
``remove_hooks`` takes out only Veil's handlers (a group that held only Veil's goes too).

Which handler is Veil's: a command that runs ``veil hook claude-code`` (or ``python -m
veil.cli.main hook claude-code``), or an ``mcp_tool`` handler calling the ``hook`` tool of the
MCP server ``veil``. The tool-call and prompt hooks are ``mcp_tool`` calls into the ``veil mcp``
the agent already runs (a few milliseconds; :mod:`veil.clients.hook_service`), with a 1 s
timeout on tool calls so that anything wrong on Veil's side costs at most that. No SessionStart
hook (Claude Code allows no ``mcp_tool`` one there, and a process per session start costs
200 ms): the briefing comes with the first prompt, the record after a compaction with the next
hook. PreCompact, once per compaction, is a command; Codex's hooks file
(``$CODEX_HOME/hooks.json``, the same three levels) holds only ``mcp_tool`` hooks, each with
the fields its event has (Codex skips an ``mcp_tool`` hook whose input names a field the event
lacks).

``merge_permissions`` allows Veil's read-only MCP tools (the model may call them without
asking) and denies the ``hook`` tool to the model (hooks still call it); ``merge_mcp`` /
``remove_mcp`` do the same for the ``veil`` entry of ``mcpServers`` (in a project's
``.mcp.json`` or ``~/.claude.json``); an entry named ``veil`` that runs something else is
refused, not replaced.

The Claude Code plugin of this repository (``plugins/veil``) carries the same hooks and server
(:func:`plugin_hooks`, :func:`plugin_mcp`; ``tests/hosts/test_claude_code_plugin.py`` keeps
its files equal to them), its ``mcp_tool`` hooks naming the server as Claude Code names a
plugin's (:data:`PLUGIN_SERVER`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

MCP_NAME = "veil"
PLUGIN = "veil"
"""The Claude Code plugin's name (``plugins/veil`` of this repository, in its marketplace
``veil``: ``claude plugin install veil@veil``); its MCP server is ``veil`` too."""
PLUGIN_SERVER = f"plugin:{PLUGIN}:{MCP_NAME}"
"""The plugin's MCP server as Claude Code names it (observed on 2.1.332): what its
``mcp_tool`` hooks call (``veil`` names no server there) and, as ``mcp__plugin_veil_veil__``,
the prefix of its tools' names."""
_HOOK = re.compile(
    r"(^|[\s/\\\"'])veil(\.exe)?[\"']?\s+hook\s+claude-code\b|veil\.cli\.main\s+hook\s+claude-code\b"
)
_MCP_COMMAND = re.compile(r"(^|[/\\])veil(\.exe)?$")

TRACKED_TOOLS = "Bash|PowerShell|Edit|Write|MultiEdit|NotebookEdit|Read"
EDIT_TOOLS = "Edit|Write|MultiEdit|NotebookEdit"


class SettingsError(ValueError):
    """A settings file Veil will not change (unreadable, not JSON, an unexpected shape, a
    foreign ``veil`` entry); the message names the file and what is wrong."""


CODEX_TRACKED_TOOLS = "Bash|apply_patch"

Agent = Literal["claude-code", "codex"]


@dataclass(frozen=True)
class HookSpec:
    """One hook Veil installs: the event, its matcher (``None``: every occurrence), whether it
    is a command or a call of the ``veil`` MCP server's ``hook`` tool, and the timeout in
    seconds the agent gives it."""

    event: str
    matcher: str | None
    kind: Literal["command", "mcp_tool"]
    timeout: int


HOOKS: tuple[HookSpec, ...] = (
    HookSpec("UserPromptSubmit", None, "mcp_tool", 5),
    HookSpec("PreToolUse", TRACKED_TOOLS, "mcp_tool", 1),
    HookSpec("PostToolUse", TRACKED_TOOLS, "mcp_tool", 1),
    HookSpec("PostToolUseFailure", TRACKED_TOOLS, "mcp_tool", 1),
    HookSpec("PostToolBatch", None, "mcp_tool", 1),
    HookSpec("PreCompact", None, "command", 60),
)
"""Claude Code's hooks. PostToolBatch (once per batch of tool calls, before the next model
request) is where a level-3 stop ends the run in every supported version: 2.1.197 obeys
``continue: false`` there and from PostToolUse, but not beside a PreToolUse deny."""
CODEX_HOOKS: tuple[HookSpec, ...] = (
    HookSpec("UserPromptSubmit", None, "mcp_tool", 5),
    HookSpec("PreToolUse", CODEX_TRACKED_TOOLS, "mcp_tool", 1),
    HookSpec("PostToolUse", CODEX_TRACKED_TOOLS, "mcp_tool", 1),
)
"""Codex's hooks (it has no PostToolUseFailure: a failed command is a PostToolUse; no
PreCompact, so nothing for SessionStart to report either)."""
HOOK_TOOL = "hook"
HOOK_INPUT: dict[str, str] = {
    "client": "claude-code",
    "event": "${hook_event_name}",
    "session_id": "${session_id}",
    "cwd": "${cwd}",
    "transcript_path": "${transcript_path}",
    "prompt": "${prompt}",
    "tool_name": "${tool_name}",
    "tool_input": "${tool_input}",
    "tool_response": "${tool_response}",
    "tool_use_id": "${tool_use_id}",
    "error": "${error}",
}
"""What Claude Code passes the ``hook`` tool: the hook input's fields (objects arrive as JSON
text, a field an event lacks as ``""``)."""
_CODEX_FIELDS: dict[str, tuple[str, ...]] = {
    "SessionStart": ("source",),
    "UserPromptSubmit": ("prompt",),
    "PreToolUse": ("tool_name", "tool_input", "tool_use_id"),
    "PostToolUse": ("tool_name", "tool_input", "tool_response", "tool_use_id", "transcript_path"),
}


def hook_input(agent: Agent, event: str) -> dict[str, str]:
    """The ``hook`` tool's input template of one event: Claude Code's names every field (it
    fills a missing one with ``""``), Codex's only the fields its event has (it skips a hook
    whose template names a missing one); objects arrive as objects in Codex."""
    if agent == "claude-code":
        return dict(HOOK_INPUT)
    fields = ("session_id", "cwd", *_CODEX_FIELDS.get(event, ()))
    return {
        "client": "codex",
        "event": "${hook_event_name}",
        **{name: "${" + name + "}" for name in fields},
    }


READ_ONLY_TOOLS = ("recall", "facts", "history", "attempts", "expand")
"""Veil's MCP tools the model may call without asking (nothing they do changes memory)."""


def is_veil_hook(handler: object) -> bool:
    if not isinstance(handler, dict):
        return False
    h = cast(dict[str, Any], handler)
    if h.get("type") == "mcp_tool":
        return h.get("server") in (MCP_NAME, PLUGIN_SERVER) and h.get("tool") == HOOK_TOOL
    command = h.get("command")
    return h.get("type") == "command" and isinstance(command, str) and bool(_HOOK.search(command))


def hook_command(veil: Sequence[str], event: str) -> str:
    """The shell command of one hook: the veil invocation, ``hook claude-code EVENT``."""
    import shlex

    return shlex.join([*veil, "hook", "claude-code", event])


def handler(
    spec: HookSpec, veil: Sequence[str], agent: Agent = "claude-code", server: str = MCP_NAME
) -> dict[str, Any]:
    """The handler of one hook, as the agent's settings hold it; an ``mcp_tool`` handler calls
    the MCP server named ``server`` (the plugin's: :data:`PLUGIN_SERVER`)."""
    if spec.kind == "mcp_tool":
        return {
            "type": "mcp_tool",
            "server": server,
            "tool": HOOK_TOOL,
            "input": hook_input(agent, spec.event),
            "timeout": spec.timeout,
        }
    return {"type": "command", "command": hook_command(veil, spec.event), "timeout": spec.timeout}


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
    settings: Mapping[str, Any],
    veil: Sequence[str],
    where: str = "settings",
    agent: Agent = "claude-code",
    server: str = MCP_NAME,
) -> dict[str, Any]:
    """``settings`` with Veil's hooks for ``agent`` (:data:`HOOKS`, :data:`CODEX_HOOKS`) run
    by the ``veil`` invocation, the ``mcp_tool`` ones calling the MCP server ``server``."""
    out = remove_hooks(settings, where)
    hooks = dict(_hooks_table(out, where))
    for spec in HOOKS if agent == "claude-code" else CODEX_HOOKS:
        existing = hooks.get(spec.event, [])
        if not isinstance(existing, list):
            raise SettingsError(
                f"{where}: hooks.{spec.event} is not a list; Veil will not change it"
            )
        group: dict[str, Any] = {}
        if spec.matcher is not None:
            group["matcher"] = spec.matcher
        group["hooks"] = [handler(spec, veil, agent, server)]
        hooks[spec.event] = [*cast(list[Any], existing), group]
    out["hooks"] = hooks
    return out


def merge_permissions(settings: Mapping[str, Any], where: str = "settings") -> dict[str, Any]:
    """``settings`` allowing Veil's read-only MCP tools and denying the ``hook`` tool to the
    model (its write tools still ask)."""
    out = remove_permissions(settings, where)
    permissions = dict(_table(out, "permissions", where))
    allow = _list(permissions, "allow", where)
    deny = _list(permissions, "deny", where)
    permissions["allow"] = [*allow, *_allowed()]
    permissions["deny"] = [*deny, _tool_name(HOOK_TOOL)]
    out["permissions"] = permissions
    return out


def merge_approval(settings: Mapping[str, Any], where: str = "settings") -> dict[str, Any]:
    """``settings`` approving the project's ``.mcp.json`` server ``veil``
    (``enabledMcpjsonServers``: a person's own choice, so it goes to their local settings)."""
    out = dict(settings)
    servers = _list(out, "enabledMcpjsonServers", where)
    if MCP_NAME not in servers:
        out["enabledMcpjsonServers"] = [*servers, MCP_NAME]
    return out


def remove_permissions(settings: Mapping[str, Any], where: str = "settings") -> dict[str, Any]:
    """``settings`` without the permission entries and the server approval Veil adds."""
    out = dict(settings)
    mine = {*_allowed(), _tool_name(HOOK_TOOL)}
    if "permissions" in out:
        permissions = dict(_table(out, "permissions", where))
        for key in ("allow", "deny"):
            if key in permissions:
                kept = [r for r in _list(permissions, key, where) if r not in mine]
                if kept:
                    permissions[key] = kept
                else:
                    del permissions[key]
        if permissions:
            out["permissions"] = permissions
        else:
            del out["permissions"]
    if "enabledMcpjsonServers" in out:
        kept_servers = [n for n in _list(out, "enabledMcpjsonServers", where) if n != MCP_NAME]
        if kept_servers:
            out["enabledMcpjsonServers"] = kept_servers
        else:
            del out["enabledMcpjsonServers"]
    return out


def _tool_name(tool: str) -> str:
    return f"mcp__{MCP_NAME}__{tool}"


def _allowed() -> list[str]:
    return [_tool_name(t) for t in READ_ONLY_TOOLS]


def _table(config: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    value = config.get(key, {})
    if not isinstance(value, dict):
        raise SettingsError(f'{where}: "{key}" is not an object; Veil will not change it')
    return cast(dict[str, Any], value)


def _list(config: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = config.get(key, [])
    if not isinstance(value, list):
        raise SettingsError(f'{where}: "{key}" is not a list; Veil will not change it')
    return list(cast(list[Any], value))


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


MCP_ARGS = ("--project", "--authority", "user")
"""``veil mcp``'s arguments as ``veil install claude-code`` gives them by default and the
plugin always: the project's stores, writes counted as the person's."""


def plugin_hooks() -> dict[str, Any]:
    """The plugin's ``hooks/hooks.json``: the hooks ``veil install claude-code`` writes with
    ``veil`` on PATH, calling the plugin's server (:data:`PLUGIN_SERVER`)."""
    return merge_hooks({}, ["veil"], "plugins/veil/hooks/hooks.json", server=PLUGIN_SERVER)


def plugin_mcp() -> dict[str, Any]:
    """The plugin's ``.mcp.json``: the server ``veil install claude-code`` writes into a
    project's ``.mcp.json`` with ``veil`` on PATH."""
    return {"mcpServers": {MCP_NAME: mcp_entry(["veil"], MCP_ARGS)}}


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


def merge_local_mcp(
    config: Mapping[str, Any], root: str, entry: Mapping[str, Any], where: str
) -> dict[str, Any]:
    """``~/.claude.json`` with ``veil`` as a local-scope server of the project at ``root``
    (``projects[root].mcpServers``: this machine only, never in the repository)."""
    projects = dict(_table(config, "projects", where))
    project = projects.get(root, {})
    if not isinstance(project, dict):
        raise SettingsError(f"{where}: projects[{root!r}] is not an object")
    projects[root] = merge_mcp(cast(dict[str, Any], project), entry, f"{where} projects[{root!r}]")
    return {**config, "projects": projects}


def remove_local_mcp(config: Mapping[str, Any], root: str | None, where: str) -> dict[str, Any]:
    """``config`` without Veil's local-scope server of ``root`` (``None``: of every project)."""
    if not isinstance(config.get("projects"), dict):
        return dict(config)
    projects = dict(_table(config, "projects", where))
    for name, project in list(projects.items()):
        if root is not None and name != root:
            continue
        if isinstance(project, dict):
            p = cast(dict[str, Any], project)
            if isinstance(p.get("mcpServers"), dict):
                projects[name] = remove_mcp(p, f"{where} projects[{name!r}]")
    return {**config, "projects": projects}


# ---- files ---------------------------------------------------------------------------------


def dump_json(data: Mapping[str, Any]) -> bytes:
    """The bytes Veil writes for a JSON settings file: 2-space indented, one final newline."""
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def parse_json(data: bytes, where: str) -> dict[str, Any]:
    """A settings file's bytes as an object (``{}`` for an empty file)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SettingsError(f"{where}: not UTF-8 text") from None
    if not text.strip():
        return {}
    try:
        parsed: object = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(
            f"{where}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "fix it and install again — Veil does not rewrite a file it cannot read"
        ) from None
    if not isinstance(parsed, dict):
        raise SettingsError(f"{where}: holds a JSON {type(parsed).__name__}, not an object")
    return cast(dict[str, Any], parsed)


def read_json(path: Path) -> dict[str, Any]:
    """A JSON settings file as an object (``{}`` when the file does not exist)."""
    if not path.exists():
        return {}
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    return parse_json(data, str(path))


def claude_dir(env: Mapping[str, str]) -> Path:
    """Claude Code's user directory: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    configured = env.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() if configured else _home(env) / ".claude"


def claude_json(env: Mapping[str, str]) -> Path:
    """Claude Code's user state file (MCP servers per user and per project):
    ``$CLAUDE_CONFIG_DIR/.claude.json``, else ``~/.claude.json``."""
    configured = env.get("CLAUDE_CONFIG_DIR")
    return (
        Path(configured).expanduser() / ".claude.json"
        if configured
        else _home(env) / ".claude.json"
    )


def _home(env: Mapping[str, str]) -> Path:
    return Path(env["HOME"]).expanduser() if env.get("HOME") else Path.home()
