"""``veil install claude-code|codex`` on temporary projects and homes with existing settings,
then the installed entries used the way the agents use them."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.clients.conftest import FIXTURES, VEIL, McpProcess, hook_arguments, payload

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
    "UserPromptSubmit": (None, "mcp_tool"),
    "PreToolUse": ("Bash|PowerShell|Edit|Write|MultiEdit|NotebookEdit|Read", "mcp_tool"),
    "PostToolUse": ("Bash|PowerShell|Edit|Write|MultiEdit|NotebookEdit|Read", "mcp_tool"),
    "PostToolUseFailure": ("Bash|PowerShell|Edit|Write|MultiEdit|NotebookEdit|Read", "mcp_tool"),
    "PostToolBatch": (None, "mcp_tool"),
    "PreCompact": (None, "command"),
}
READ_ONLY = [f"mcp__veil__{t}" for t in ("recall", "facts", "history", "attempts", "expand")]
VEIL_DIR = str(Path(sys.executable).parent)


def veil(*args: str, cwd: Path, home: Path, on_path: bool = False,
         **env: str) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``veil ARGS`` as a person runs it; ``on_path``: ``veil`` is on their PATH."""
    environ = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")}
    path = [p for p in environ.get("PATH", "").split(os.pathsep) if p and p != VEIL_DIR]
    environ["PATH"] = os.pathsep.join([VEIL_DIR, *path] if on_path else path)
    environ.update({"HOME": str(home), "VEIL_STATE_DIR": str(home / "state"), **env})
    command = [str(Path(VEIL_DIR) / "veil")] if on_path else VEIL
    return subprocess.run([*command, *args], cwd=cwd, capture_output=True, text=True, timeout=60,
                          check=False, env=environ)  # fmt: skip


def veil_handlers(settings: dict[str, Any]) -> dict[str, tuple[str | None, str]]:
    """Event → (matcher, kind) of Veil's handlers."""
    found: dict[str, tuple[str | None, str]] = {}
    for event, groups in settings["hooks"].items():
        for group in groups:
            for handler in group["hooks"]:
                if handler.get("server") == "veil" or "hook claude-code" in handler.get(
                    "command", ""
                ):
                    assert event not in found, f"two Veil handlers for {event}"
                    found[event] = (group.get("matcher"), handler["type"])
    return found


def installed_input(settings: dict[str, Any], event: str) -> dict[str, Any]:
    group = next(g for g in settings["hooks"][event] if g["hooks"][0].get("server") == "veil")
    return dict(group["hooks"][0]["input"])


def test_project_install_with_veil_on_path_writes_portable_files_and_gives_them_back(
    project: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    settings_file = project / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    settings_file.write_text(json.dumps(EXISTING_SETTINGS))
    (project / ".mcp.json").write_text(json.dumps(EXISTING_MCP))
    exclude = project / ".git" / "info" / "exclude"
    originals = {p: p.read_bytes() for p in (settings_file, project / ".mcp.json", exclude)}

    first = veil("install", "claude-code", cwd=project / "tests", home=home, on_path=True)
    assert first.returncode == 0, first.stderr
    assert "commit them: the command is `veil`" in first.stdout
    settings = json.loads(settings_file.read_text())
    assert veil_handlers(settings) == EVENTS
    # the person's own entries stay, in their order, before Veil's
    assert settings["hooks"]["PostToolUse"][0] == EXISTING_SETTINGS["hooks"]["PostToolUse"][0]
    assert settings["hooks"]["Stop"] == EXISTING_SETTINGS["hooks"]["Stop"]
    assert settings["permissions"]["allow"] == ["Bash(npm test)", *READ_ONLY]
    assert settings["permissions"]["deny"] == ["mcp__veil__hook"]
    commands = [h["command"] for g in settings["hooks"]["PreCompact"] for h in g["hooks"]]
    assert commands == ["veil hook claude-code PreCompact"]  # works on every clone
    mcp = json.loads((project / ".mcp.json").read_text())
    assert mcp["mcpServers"]["github"] == EXISTING_MCP["mcpServers"]["github"]
    args = ["mcp", "--project", "--authority", "user"]
    assert mcp["mcpServers"]["veil"] == {
        "type": "stdio",
        "command": "veil",
        "args": args,
        "env": {},
    }
    # the approval of the project's server is the person's own: in the local settings
    local = project / ".claude" / "settings.local.json"
    assert json.loads(local.read_text()) == {"enabledMcpjsonServers": ["veil"]}
    assert exclude.read_text().endswith("/.claude/settings.local.json\n")
    assert not (home / ".claude.json").exists()

    files = (settings_file, project / ".mcp.json", local, exclude)
    before = [p.read_bytes() for p in files]
    again = veil("install", "claude-code", "--project", cwd=project, home=home, on_path=True)
    assert again.returncode == 0 and again.stdout.startswith("already installed:")
    assert [p.read_bytes() for p in files] == before
    # the project's files count only in a trusted workspace: the install says so
    assert "only in a trusted workspace" in again.stdout and "veil doctor" in again.stdout

    removed = veil("install", "claude-code", "--uninstall", cwd=project, home=home)
    assert removed.returncode == 0, removed.stderr
    assert {p: p.read_bytes() for p in originals} == originals  # byte for byte
    assert not local.exists()
    nothing = veil("install", "claude-code", "--uninstall", cwd=project, home=home)
    assert nothing.returncode == 0 and nothing.stdout.startswith("nothing of Veil's")


def test_project_install_without_veil_on_path_leaves_the_committed_files_alone(
    project: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude.json").write_text(json.dumps({"numStartups": 3, "projects": {}}))
    done = veil("install", "claude-code", cwd=project, home=home)
    assert done.returncode == 0, done.stderr
    assert "this machine only" in done.stdout
    assert not (project / ".claude" / "settings.json").exists()
    assert not (project / ".mcp.json").exists()
    local = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert veil_handlers(local) == EVENTS
    assert local["permissions"] == {"allow": READ_ONLY, "deny": ["mcp__veil__hook"]}
    claude = json.loads((home / ".claude.json").read_text())
    server = claude["projects"][str(project)]["mcpServers"]["veil"]
    assert server["command"] == VEIL[0] and server["args"][-4:] == [
        "mcp", "--project", "--authority", "user"
    ]  # fmt: skip
    assert claude["numStartups"] == 3
    ignored = subprocess.run(["git", "check-ignore", "-q", ".claude/settings.local.json"],
                             cwd=project, check=False)  # fmt: skip
    assert ignored.returncode == 0  # git will not offer the machine's paths for a commit

    # veil lands on PATH later: a second install moves Veil into the portable files
    moved = veil("install", "claude-code", cwd=project, home=home, on_path=True)
    assert moved.returncode == 0, moved.stderr
    assert veil_handlers(json.loads((project / ".claude" / "settings.json").read_text()))
    assert "hooks" not in json.loads((project / ".claude" / "settings.local.json").read_text())
    assert "veil" not in json.loads((home / ".claude.json").read_text())["projects"][
        str(project)
    ].get("mcpServers", {})

    removed = veil("install", "claude-code", "--uninstall", cwd=project, home=home)
    assert removed.returncode == 0, removed.stderr
    assert not (project / ".claude" / "settings.local.json").exists()
    assert not (project / ".claude" / "settings.json").exists()
    assert not (project / ".mcp.json").exists()
    assert json.loads((home / ".claude.json").read_text())["numStartups"] == 3


def test_uninstall_after_the_person_changed_a_file_takes_out_only_veils_entries(
    project: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert veil("install", "claude-code", cwd=project, home=home, on_path=True).returncode == 0
    settings_file = project / ".claude" / "settings.json"
    edited = json.loads(settings_file.read_text())
    edited["model"] = "opus"
    settings_file.write_text(json.dumps(edited))
    removed = veil("install", "claude-code", "--uninstall", cwd=project, home=home)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(settings_file.read_text()) == {"model": "opus"}
    assert not (project / ".mcp.json").exists()


def test_the_installed_hooks_answer_as_the_agent_calls_them(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert veil("install", "claude-code", cwd=project, home=home, on_path=True).returncode == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["veil"]
    command = [str(Path(VEIL_DIR) / entry["command"]), *entry["args"]]
    server = McpProcess(command, cwd=project)
    try:
        assert "hook" in server.tools()
        template = installed_input(settings, "PostToolUseFailure")
        failed = hook_arguments(template, payload("post_tool_use_failure_bash", project))
        assert server.call("hook", failed) == {}  # recorded; nothing to say yet
        listed = server.call("attempts", {})
        assert [g["attempts"] for g in listed["goals"]] == [1]
        prompt = hook_arguments(installed_input(settings, "UserPromptSubmit"),
                                payload("user_prompt_submit", project, session="s2"))  # fmt: skip
        assert server.call("hook", prompt) == {}  # no memory yet, a new task: no opinion

        # a compaction (the PreCompact command, as Claude Code runs it), then the next hook
        # of that session says what was tried and that the summarised transcript is kept
        shutil.copy(FIXTURES / "transcript.jsonl", project / "transcript.jsonl")
        precompact = next(h["command"] for g in settings["hooks"]["PreCompact"]
                          for h in g["hooks"])  # fmt: skip
        env = {**os.environ, "PATH": f"{VEIL_DIR}{os.pathsep}{os.environ['PATH']}"}
        ran = subprocess.run(["sh", "-c", precompact], input=payload("pre_compact", project),
                             cwd=project, capture_output=True, text=True, timeout=60,
                             check=False, env=env)  # fmt: skip
        assert (ran.returncode, ran.stderr) == (0, ""), ran.stderr
        again = {**failed, "tool_use_id": "toolu_after_compaction"}
        noted = server.call("hook", again)["hookSpecificOutput"]["additionalContext"]
        assert "transcript entries that were summarised" in noted and "2 attempts" in noted
        later = server.call("hook", {**failed, "tool_use_id": "toolu_later"})
        assert "summarised" not in json.dumps(later)  # once per compaction
    finally:
        server.close()


def test_claude_code_user_install_keeps_the_users_files(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    state = {"numStartups": 12, "projects": {"/x": {"allowedTools": []}}, "mcpServers": {}}
    (home / ".claude.json").write_text(json.dumps(state))
    done = veil("install", "claude-code", "--user", cwd=project, home=home)
    assert done.returncode == 0, done.stderr
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert veil_handlers(settings) == EVENTS
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
    gone = veil("install", "claude-code", "--user", "--uninstall", cwd=project, home=home)
    assert gone.returncode == 0, gone.stderr
    assert json.loads((home / ".claude.json").read_text()) == state
    assert not (home / ".claude" / "settings.json").exists()


def test_claude_code_install_refuses_files_it_cannot_merge(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    settings_file = project / ".claude" / "settings.json"
    settings_file.parent.mkdir()
    settings_file.write_text('{"hooks": {"PostToolUse": [}')
    broken = veil("install", "claude-code", cwd=project, home=home, on_path=True)
    assert broken.returncode == 2 and broken.stdout == ""
    assert broken.stderr.strip().splitlines() == [
        f"veil install: {settings_file}: not valid JSON (line 1, column 28: Expecting value); "
        "fix it and install again — Veil does not rewrite a file it cannot read"
    ]
    assert settings_file.read_text() == '{"hooks": {"PostToolUse": [}'
    assert not (project / ".mcp.json").exists()
    assert not (project / ".claude" / "settings.local.json").exists()  # nothing half-written

    settings_file.write_text(json.dumps(EXISTING_SETTINGS))
    foreign = {"mcpServers": {"veil": {"command": "node", "args": ["my-veil.js"]}}}
    (project / ".mcp.json").write_text(json.dumps(foreign))
    refused = veil("install", "claude-code", cwd=project, home=home, on_path=True)
    assert refused.returncode == 2 and "does not run `veil mcp`" in refused.stderr
    assert json.loads(settings_file.read_text()) == EXISTING_SETTINGS
    assert json.loads((project / ".mcp.json").read_text()) == foreign
    uninstalled = veil("install", "claude-code", "--uninstall", cwd=project, home=home)
    assert uninstalled.returncode == 0
    assert json.loads((project / ".mcp.json").read_text()) == foreign  # not ours: kept

    settings_file.write_text('{"hooks": []}')
    (project / ".mcp.json").unlink()
    shape = veil("install", "claude-code", cwd=project, home=home, on_path=True)
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
    assert "codex is not on PATH, so its trust of the hooks is not recorded" in done.stdout
    text = config.read_text()
    assert text.startswith(EXISTING_TOML)  # every byte of the user's file kept
    parsed = tomllib.loads(text)
    assert parsed["model"] == "gpt-5-codex" and parsed["mcp_servers"]["docs"]["env"] == {
        "TOKEN": "x"
    }
    server = parsed["mcp_servers"]["veil"]
    assert server["args"][-4:] == ["mcp", "--project", "--authority", "user"]
    assert "VEIL_MODEL" in server["env_vars"] and server["startup_timeout_sec"] == 30
    hooks = json.loads((codex_home / "hooks.json").read_text())["hooks"]
    assert list(hooks) == ["UserPromptSubmit", "PreToolUse", "PostToolUse"]
    pre = hooks["PreToolUse"][0]
    assert pre["matcher"] == "Bash|apply_patch" and pre["hooks"][0]["type"] == "mcp_tool"
    # each input names only fields its event has (Codex skips a hook naming a missing one)
    assert set(pre["hooks"][0]["input"]) == {"client", "event", "session_id", "cwd",
                                             "tool_name", "tool_input", "tool_use_id"}  # fmt: skip
    again = veil("install", "codex", cwd=project, home=home, CODEX_HOME=str(codex_home))
    assert again.returncode == 0 and again.stdout.startswith("already installed:")
    assert config.read_text() == text

    # the installed server, started as Codex starts it (in the project directory)
    params = StdioServerParameters(command=server["command"], args=server["args"], cwd=str(project))

    async def tools() -> set[str]:
        async with Client(params) as client:
            return {t.name for t in (await client.list_tools()).tools}

    assert {"facts", "recall", "attempts", "record_attempt", "hook"} <= asyncio.run(
        asyncio.wait_for(tools(), 60)
    )
    removed = veil("install", "codex", "--uninstall", cwd=project, home=home,
                   CODEX_HOME=str(codex_home))  # fmt: skip
    assert removed.returncode == 0 and config.read_text() == EXISTING_TOML
    assert not (codex_home / "hooks.json").exists()
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
    home = str(codex_home)
    refused = veil("install", "codex", cwd=project, home=tmp_path, CODEX_HOME=home)
    assert refused.returncode == 2 and "not by `veil install codex`" in refused.stderr
    assert config.read_text() == foreign
    config.write_text("model = \n")
    bad = veil("install", "codex", cwd=project, home=tmp_path, CODEX_HOME=home)
    assert bad.returncode == 2 and "not valid TOML" in bad.stderr
    assert not (codex_home / "hooks.json").exists()  # nothing half-written
    project_flag = veil(
        "install", "codex", "--project", cwd=project, home=tmp_path, CODEX_HOME=home
    )
    assert project_flag.returncode == 2 and "no --project install" in project_flag.stderr
