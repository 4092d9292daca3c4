"""``veil install claude-code|codex [--uninstall]``: register Veil with a coding agent.

``claude-code`` writes Veil's hooks (:data:`veil.clients.settings.HOOKS`) into Claude Code's
settings and ``veil mcp`` into its MCP configuration:

- ``--project`` (default): ``<repo>/.claude/settings.json`` and ``<repo>/.mcp.json``, the
  server bound to the project's scope;
- ``--user``: ``~/.claude/settings.json`` and ``~/.claude.json``, the server bound to
  whichever project Claude Code runs in (``$CLAUDE_CONFIG_DIR`` replaces ``~/.claude`` and
  then holds ``.claude.json``).

``codex`` adds ``[mcp_servers.veil]`` to ``$CODEX_HOME/config.toml`` (``~/.codex``).

Both merge: other settings are kept byte for byte in meaning, a second install changes
nothing, ``--uninstall`` removes only Veil's entries. A file Veil cannot read (not JSON/TOML,
an unexpected shape, a foreign ``veil`` entry) is reported in one line on stderr with status 2
and is not written. The command the agents run is ``veil`` when the ``veil`` on ``PATH`` is
this one, else this interpreter's ``python -m veil.cli.main`` (``--command`` overrides).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from veil.clients.settings import HOOKS, SettingsError

Where = Literal["project", "user"]


@dataclass(frozen=True)
class InstallOptions:
    agent: Literal["claude-code", "codex"]
    where: Where = "project"
    uninstall: bool = False
    authority: Literal["user", "assistant", "tool"] = "user"
    command: str | None = None
    cwd: Path | None = None


def veil_command(override: str | None = None) -> list[str]:
    """How the agent starts Veil: ``override`` split like a shell would, else ``veil`` when the
    ``veil`` found on ``PATH`` is the running one, else the running script by its absolute
    path, else ``<this python> -m veil.cli.main``."""
    if override:
        words = shlex.split(override)
        if not words:
            raise SettingsError("--command is empty")
        return words
    running = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    on_path = shutil.which("veil")
    if running is not None and running.name in ("veil", "veil.exe"):
        if on_path and Path(on_path).resolve() == running.resolve():
            return ["veil"]
        return [str(running.resolve())]
    if on_path:
        return ["veil"]
    return [sys.executable, "-m", "veil.cli.main"]


def claude_dir(env: Mapping[str, str]) -> Path:
    configured = env.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


def run_install(options: InstallOptions, env: Mapping[str, str] = os.environ) -> int:
    try:
        lines = _install(options, env)
    except SettingsError as exc:
        print(f"veil install: {exc}", file=sys.stderr)
        return 2
    for line in lines:
        print(line)
    return 0


def _install(options: InstallOptions, env: Mapping[str, str]) -> list[str]:
    veil = veil_command(options.command)
    if options.agent == "codex":
        return _codex(options, veil, env)
    return _claude_code(options, veil, env)


def _claude_code(options: InstallOptions, veil: list[str], env: Mapping[str, str]) -> list[str]:
    from veil.agent.project import project_root, project_scope
    from veil.clients import settings

    if options.where == "project":
        root = project_root(options.cwd or Path.cwd())
        settings_file = root / ".claude" / "settings.json"
        mcp_file = root / ".mcp.json"
        scope = project_scope(root)
        mcp_args = ["--project", "--scope", scope, "--authority", options.authority]
        bound = f"scope {scope}"
    else:
        base = claude_dir(env)
        settings_file = base / "settings.json"
        mcp_file = (
            base / ".claude.json" if env.get("CLAUDE_CONFIG_DIR") else Path.home() / ".claude.json"
        )
        mcp_args = ["--project", "--authority", options.authority]
        bound = "the project Claude Code runs in"
    # both files are read and changed in memory first: a file Veil cannot read or merge
    # stops the install before anything is written
    current_settings = settings.read_json(settings_file)
    current_mcp = settings.read_json(mcp_file)
    if options.uninstall:
        new_settings = settings.remove_hooks(current_settings, str(settings_file))
        new_mcp = settings.remove_mcp(current_mcp, str(mcp_file))
    else:
        new_settings = settings.merge_hooks(current_settings, veil, str(settings_file))
        entry = settings.mcp_entry(veil, mcp_args)
        new_mcp = settings.merge_mcp(current_mcp, entry, str(mcp_file))
    hooks = settings.update_json(settings_file, lambda _: new_settings)
    server = settings.update_json(mcp_file, lambda _: new_mcp)
    if options.uninstall:
        if not (hooks or server):
            return [f"nothing of Veil's in {settings_file} or {mcp_file}"]
        return [
            f"removed Veil's hooks from {settings_file}"
            if hooks
            else f"no Veil hooks in {settings_file}",
            f"removed the MCP server {settings.MCP_NAME!r} from {mcp_file}"
            if server
            else f"no Veil MCP server in {mcp_file}",
        ]
    events = ", ".join(spec.event for spec in HOOKS)
    return [
        f"{'wrote' if hooks else 'unchanged:'} Veil's hooks in {settings_file} ({events})",
        f"{'wrote' if server else 'unchanged:'} MCP server {settings.MCP_NAME!r} in {mcp_file} "
        f"({bound}, authority {options.authority})",
        f"command: {shlex.join(veil)}",
        "Restart Claude Code here; /hooks and /mcp list what was installed.",
    ]


def _codex(options: InstallOptions, veil: list[str], env: Mapping[str, str]) -> list[str]:
    from veil.clients import codex

    path = codex.config_path(env)
    if options.uninstall:
        changed = codex.update(path, lambda text: codex.uninstall(text, str(path)))
        return [
            f"removed [mcp_servers.veil] from {path}" if changed else f"nothing of Veil's in {path}"
        ]
    new = codex.block(veil, ["--project", "--authority", options.authority])
    changed = codex.update(path, lambda text: codex.install(text, new, str(path)))
    return [
        f"{'wrote' if changed else 'unchanged:'} [mcp_servers.veil] in {path} "
        f"(the project Codex runs in, authority {options.authority})",
        f"command: {shlex.join(veil)}",
        "Restart Codex; /mcp lists the server.",
    ]
