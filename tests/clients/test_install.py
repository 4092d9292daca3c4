"""``veil install claude-code|codex`` on temporary projects and homes with existing settings,
then the installed entries used the way the agents use them."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.clients.conftest import VEIL, payload
from veil.agent.project import project_scope

EXISTING_SETTINGS = {
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "PostToolUse": [
            {
                "matcher": "Write|Edit",
                "hooks": [{"type": "command", "command": "prettier --write .", "timeout": 30}],
            }
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}
EXISTING_MCP = {"mcpServers": {"github": {"command": "npx", "args": ["-y", "server-github"]}}}
EVENTS = {
    "SessionStart": None,
    "UserPromptSubmit": None,
    "PreToolUse": "Bash|PowerShell|Edit|Write|MultiEdit|NotebookEdit|Read",
    "PostToolUse": "Bash|PowerShell|Edit|Write|MultiEdit|NotebookEdit|Read",
    "PostToolUseFailure": "Bash|PowerShell|Edit|Write|MultiEdit|NotebookEdit|Read",
    "PreCompact": None,
}


def veil(*args: str, cwd: Path, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")}
    environ.update({"HOME": str(home), **env})
    return subprocess.run([*VEIL, *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                          check=False, env=environ)  # fmt: skip


def veil_handlers(settings: dict[str, Any]) -> dict[str, tuple[str | None, str]]:
    """Event → (matcher, command) of the handlers that run ``hook claude-code``."""
    found: dict[str, tuple[str | None, str]] = {}
    for event, groups in settings["hooks"].items():
        for group in groups:
            for handler in group["hooks"]:
                if "hook claude-code" in handler["command"]:
                    assert event not in found, f"two Veil handlers for {event}"
                    found[event] = (group.get("matcher"), handler["command"])
    return found


def without_veil(settings: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(settings)
    for event in list(out.get("hooks", {})):
        groups = [
            g for g in out["hooks"][event]
            if not any("hook claude-code" in h["command"] for h in g["hooks"])
        ]  # fmt: skip
        if groups:
            out["hooks"][event] = groups
        else:
            del out["hooks"][event]
    return out


def test_claude_code_project_install_merges_is_idempotent_and_works(
    project: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    settings_file = project / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    settings_file.write_text(json.dumps(EXISTING_SETTINGS))
    (project / ".mcp.json").write_text(json.dumps(EXISTING_MCP))

    first = veil("install", "claude-code", cwd=project / "tests", home=home)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"wrote Veil's hooks in {settings_file}")
    settings = json.loads(settings_file.read_text())
    assert without_veil(settings) == EXISTING_SETTINGS
    handlers = veil_handlers(settings)
    assert {e: m for e, (m, _) in handlers.items()} == EVENTS
    assert all(c.endswith(f"hook claude-code {e}") for e, (_, c) in handlers.items())
    # ours come after the user's own hook for the same event
    assert settings["hooks"]["PostToolUse"][0] == EXISTING_SETTINGS["hooks"]["PostToolUse"][0]
    mcp = json.loads((project / ".mcp.json").read_text())
    assert mcp["mcpServers"]["github"] == EXISTING_MCP["mcpServers"]["github"]
    entry = mcp["mcpServers"]["veil"]
    scope = project_scope(project)
    assert entry["type"] == "stdio"
    assert entry["args"][-6:] == ["mcp", "--project", "--scope", scope, "--authority", "user"]

    before = (settings_file.read_bytes(), (project / ".mcp.json").read_bytes())
    again = veil("install", "claude-code", "--project", cwd=project, home=home)
    assert again.returncode == 0 and again.stdout.startswith("unchanged: Veil's hooks")
    assert (settings_file.read_bytes(), (project / ".mcp.json").read_bytes()) == before

    # the installed hook, run the way Claude Code runs a command hook: sh -c, JSON on stdin
    command = handlers["PostToolUseFailure"][1]
    body = payload("post_tool_use_failure_bash", project)
    ran = subprocess.run(["sh", "-c", command], input=body, cwd=project, capture_output=True,
                         text=True, timeout=60, check=False,
                         env={**os.environ, "CLAUDE_PROJECT_DIR": str(project)})  # fmt: skip
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr

    # the installed MCP server, started the way Claude Code starts it, sees that attempt
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], cwd=str(project),
        env={**os.environ, "CLAUDE_PROJECT_DIR": str(project)},
    )  # fmt: skip

    async def attempts() -> dict[str, Any]:
        async with Client(params) as client:
            found = await client.call_tool("attempts", {})
            assert found.structured_content is not None
            return found.structured_content

    listed = asyncio.run(asyncio.wait_for(attempts(), 60))
    assert [g["attempts"] for g in listed["goals"]] == [1]

    removed = veil("install", "claude-code", "--uninstall", cwd=project, home=home)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(settings_file.read_text()) == EXISTING_SETTINGS
    assert json.loads((project / ".mcp.json").read_text()) == EXISTING_MCP
    nothing = veil("install", "claude-code", "--uninstall", cwd=project, home=home)
    assert nothing.returncode == 0 and nothing.stdout.startswith("nothing of Veil's")


def test_claude_code_user_install_keeps_the_users_files(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    state = {"numStartups": 12, "projects": {"/x": {"allowedTools": []}}, "mcpServers": {}}
    (home / ".claude.json").write_text(json.dumps(state))
    done = veil("install", "claude-code", "--user", cwd=project, home=home)
    assert done.returncode == 0, done.stderr
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert set(veil_handlers(settings)) == set(EVENTS)
    claude = json.loads((home / ".claude.json").read_text())
    assert {k: v for k, v in claude.items() if k != "mcpServers"} == {
        k: v for k, v in state.items() if k != "mcpServers"
    }
    assert claude["mcpServers"]["veil"]["args"][-4:] == ["mcp", "--project", "--authority", "user"]
    assert not (project / ".claude").exists() and not (project / ".mcp.json").exists()
    config = tmp_path / "config"
    moved = veil("install", "claude-code", "--user", "--authority", "tool", cwd=project,
                 home=home, CLAUDE_CONFIG_DIR=str(config))  # fmt: skip
    assert moved.returncode == 0, moved.stderr
    assert (config / "settings.json").exists()
    assert json.loads((config / ".claude.json").read_text())["mcpServers"]["veil"]["args"][-1] == (
        "tool"
    )


def test_claude_code_install_refuses_files_it_cannot_merge(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    settings_file = project / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    settings_file.write_text('{"hooks": {"PostToolUse": [}')
    broken = veil("install", "claude-code", cwd=project, home=home)
    assert broken.returncode == 2 and broken.stdout == ""
    assert broken.stderr.strip().splitlines() == [
        f"veil install: {settings_file}: not valid JSON (line 1, column 28: Expecting value); "
        "fix it and install again — Veil does not rewrite a file it cannot read"
    ]
    assert settings_file.read_text() == '{"hooks": {"PostToolUse": [}'
    assert not (project / ".mcp.json").exists()

    settings_file.write_text(json.dumps(EXISTING_SETTINGS))
    foreign = {"mcpServers": {"veil": {"command": "node", "args": ["my-veil.js"]}}}
    (project / ".mcp.json").write_text(json.dumps(foreign))
    refused = veil("install", "claude-code", cwd=project, home=home)
    assert refused.returncode == 2 and "does not run `veil mcp`" in refused.stderr
    assert json.loads(settings_file.read_text()) == EXISTING_SETTINGS  # nothing half-written
    assert json.loads((project / ".mcp.json").read_text()) == foreign
    uninstalled = veil("install", "claude-code", "--uninstall", cwd=project, home=home)
    assert uninstalled.returncode == 0
    assert json.loads((project / ".mcp.json").read_text()) == foreign  # not ours: kept

    settings_file.write_text('{"hooks": []}')
    (project / ".mcp.json").unlink()
    shape = veil("install", "claude-code", cwd=project, home=home)
    assert shape.returncode == 2 and '"hooks" is not an object' in shape.stderr


EXISTING_TOML = """\
# my Codex settings
model = "gpt-5-codex"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]

[mcp_servers.docs.env]
TOKEN = "x"
"""


def test_codex_install_adds_one_table_and_uninstall_restores_the_file(
    project: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    codex_home = tmp_path / "codex"
    codex_home.mkdir(parents=True)
    config = codex_home / "config.toml"
    config.write_text(EXISTING_TOML)
    done = veil("install", "codex", cwd=project, home=home, CODEX_HOME=str(codex_home))
    assert done.returncode == 0, done.stderr
    text = config.read_text()
    assert text.startswith(EXISTING_TOML)  # every byte of the user's file kept
    parsed = tomllib.loads(text)
    assert parsed["model"] == "gpt-5-codex" and parsed["mcp_servers"]["docs"]["env"] == {
        "TOKEN": "x"
    }
    server = parsed["mcp_servers"]["veil"]
    assert server["args"][-4:] == ["mcp", "--project", "--authority", "user"]
    assert "VEIL_MODEL" in server["env_vars"] and server["startup_timeout_sec"] == 30
    again = veil("install", "codex", cwd=project, home=home, CODEX_HOME=str(codex_home))
    assert again.returncode == 0 and again.stdout.startswith("unchanged:")
    assert config.read_text() == text

    # the installed server, started as Codex starts it (in the project directory)
    params = StdioServerParameters(command=server["command"], args=server["args"], cwd=str(project))

    async def tools() -> set[str]:
        async with Client(params) as client:
            return {t.name for t in (await client.list_tools()).tools}

    assert {"facts", "recall", "attempts", "record_attempt"} <= asyncio.run(
        asyncio.wait_for(tools(), 60)
    )
    removed = veil("install", "codex", "--uninstall", cwd=project, home=home,
                   CODEX_HOME=str(codex_home))  # fmt: skip
    assert removed.returncode == 0 and config.read_text() == EXISTING_TOML
    fresh = veil("install", "codex", cwd=project, home=home)  # default ~/.codex/config.toml
    assert (
        fresh.returncode == 0
        and "veil" in tomllib.loads((home / ".codex" / "config.toml").read_text())["mcp_servers"]
    )


def test_codex_install_refuses_a_foreign_table_and_bad_toml(project: Path, tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    config = codex_home / "config.toml"
    foreign = '[mcp_servers.veil]\ncommand = "something-else"\n'
    config.write_text(foreign)
    env = {"CODEX_HOME": str(codex_home)}
    refused = veil("install", "codex", cwd=project, home=tmp_path, **env)
    assert refused.returncode == 2 and "not by `veil install codex`" in refused.stderr
    assert config.read_text() == foreign
    config.write_text("model = \n")
    bad = veil("install", "codex", cwd=project, home=tmp_path, **env)
    assert bad.returncode == 2 and "not valid TOML" in bad.stderr
    project_flag = veil("install", "codex", "--project", cwd=project, home=tmp_path, **env)
    assert project_flag.returncode == 2 and "no --project install" in project_flag.stderr
