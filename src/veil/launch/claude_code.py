"""``veil claude``: Claude Code through Veil's proxy.

The upstream is ``$ANTHROPIC_BASE_URL``, else Anthropic's API; the agent gets
``ANTHROPIC_BASE_URL`` pointing at the proxy and — unless the project or the user already has
them (``veil install claude-code``, or Veil's plugin enabled: it brings both) — Veil's hooks and
MCP server on its command line (``--settings``, ``--mcp-config``): nothing is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from veil.clients import settings
from veil.hosts import claude_code
from veil.launch.launcher import Env, Launch, Launcher, Started

ANTHROPIC_API = "https://api.anthropic.com"


def upstream(env: Env) -> str:
    return env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_API


def start(launch: Launch) -> Started:
    env = {**launch.env, "ANTHROPIC_BASE_URL": launch.base}
    extra: list[str] = []
    shared = [
        settings.claude_dir(launch.env) / "settings.json",
        launch.root / ".claude" / "settings.json",
        launch.root / ".claude" / "settings.local.json",
    ]
    if plugin_enabled(shared):  # the plugin brings the hooks and the server
        return Started([launch.binary, *launch.args], env)
    if not any(has_veil_hooks(path) for path in shared):
        hooks = settings.merge_permissions(settings.merge_hooks({}, list(launch.veil)))
        extra += ["--settings", json.dumps(hooks)]
    servers = [launch.root / ".mcp.json", settings.claude_json(launch.env)]
    if not any(has_veil_server(path, launch.root) for path in servers):
        entry = settings.mcp_entry(list(launch.veil), ["--project"])
        extra += ["--mcp-config", json.dumps({"mcpServers": {settings.MCP_NAME: entry}})]
    return Started([launch.binary, *extra, *launch.args], env)


def plugin_enabled(paths: list[Path]) -> bool:
    """Whether Veil's Claude Code plugin (``veil@<marketplace>``) is enabled by the settings
    files ``paths``, in Claude Code's order of precedence (user, project, local: a later file's
    ``enabledPlugins`` entry overrides an earlier one's)."""
    enabled = False
    for path in paths:
        try:
            table = settings.read_json(path).get("enabledPlugins")
        except settings.SettingsError:
            continue
        if not isinstance(table, dict):
            continue
        for key, value in cast(dict[str, Any], table).items():
            if key.split("@", 1)[0] == settings.MCP_NAME and isinstance(value, bool):
                enabled = value
    return enabled


def has_veil_hooks(path: Path) -> bool:
    """Whether the Claude Code settings file at ``path`` already runs Veil's hooks."""
    try:
        data = settings.read_json(path)
    except settings.SettingsError:
        return False
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False
    return any(
        settings.is_veil_hook(h)
        for groups in cast(dict[str, Any], hooks).values()
        if isinstance(groups, list)
        for g in cast(list[Any], groups)
        if isinstance(g, dict)
        for h in cast(list[Any], cast(dict[str, Any], g).get("hooks") or [])
    )


def has_veil_server(path: Path, root: Path) -> bool:
    """Whether the MCP configuration at ``path`` (``.mcp.json``, ``~/.claude.json`` with its
    per-project tables) already has Veil's server."""
    try:
        data = settings.read_json(path)
    except settings.SettingsError:
        return False
    tables = [data.get("mcpServers")]
    project = cast(dict[str, Any], data.get("projects") or {}).get(str(root))
    if isinstance(project, dict):
        tables.append(cast(dict[str, Any], project).get("mcpServers"))
    return any(
        isinstance(t, dict) and settings.is_veil_server(cast(dict[str, Any], t).get("veil"))
        for t in tables
    )


LAUNCHER = Launcher(
    host=claude_code.HOST, binary_variable="VEIL_CLAUDE", upstream=upstream, start=start
)
