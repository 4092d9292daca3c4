"""Veil as a Claude Code plugin, used as a person uses it: this repository is a plugin
marketplace (``.claude-plugin/marketplace.json``, the plugin in ``plugins/veil``); on a private
HOME the REAL Claude Code adds it (``claude plugin marketplace add PATH``), installs the plugin
(``claude plugin install veil@veil``), then runs ``claude -p`` against the scripted model
server with ``veil`` on PATH (``make install`` puts it there).

The plugin's hooks and MCP server are the ones ``veil install claude-code`` writes
(:func:`veil.clients.settings.plugin_hooks`, :func:`~veil.clients.settings.plugin_mcp`): the
files are checked against them, so the two never diverge. Claude Code names a plugin's server
``plugin:veil:veil`` (what the hooks call) and its tools ``mcp__plugin_veil_veil__…``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.hosts.runners import ClaudeRunner, private_env, run_process
from tests.hosts.veil_setup import FAILING_TEST, VEIL_BIN, seed_memory, tape_kinds
from veil.clients import settings
from veil.llm.scripted_server import ScriptedServer, ToolUse, Turn

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugins" / "veil"
TOOLS = "mcp__plugin_veil_veil__"
"""The prefix of the plugin's MCP tools as Claude Code 2.1.332 offers them."""


def read(path: Path) -> object:
    return json.loads(path.read_text())


def test_the_plugin_carries_the_hooks_and_server_veil_install_writes() -> None:
    hooks = read(PLUGIN / "hooks" / "hooks.json")
    regenerate = (
        "regenerate plugins/veil from veil.clients.settings.plugin_hooks() / plugin_mcp() "
        "(written with settings.dump_json)"
    )
    assert hooks == settings.plugin_hooks(), regenerate
    assert read(PLUGIN / ".mcp.json") == settings.plugin_mcp(), regenerate
    # the same hooks as `veil install claude-code` with veil on PATH, but for the server's name
    installed = json.dumps(settings.merge_hooks({}, ["veil"]))
    assert json.dumps(hooks) == installed.replace(
        '"server": "veil"', f'"server": "{settings.PLUGIN_SERVER}"'
    )
    marketplace = read(REPO / ".claude-plugin" / "marketplace.json")
    assert isinstance(marketplace, dict) and marketplace["name"] == "veil"
    assert marketplace["plugins"][0]["source"] == "./plugins/veil"
    manifest = read(PLUGIN / ".claude-plugin" / "plugin.json")
    assert isinstance(manifest, dict) and manifest["name"] == settings.PLUGIN
    assert "veil claude" in manifest["description"]  # says eviction needs it


def claude_command(claude: Path, home: Path, *args: str) -> str:
    """``claude ARGS`` on the private ``home``; its stdout (exit 0 asserted)."""
    env = private_env(home, {"DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1"})
    code, out, err, _ = run_process(
        [str(claude), *args], cwd=home, env=env, timeout=120, label=f"claude {args[0]}"
    )
    assert code == 0, f"claude {' '.join(args)}: exit {code}\n{out}\n{err}"
    return out


@pytest.mark.parametrize("path", [REPO, PLUGIN], ids=["marketplace", "plugin"])
def test_claude_plugin_validate_passes_strictly(claude: Path, tmp_path: Path, path: Path) -> None:
    out = claude_command(claude, tmp_path, "plugin", "validate", "--strict", str(path))
    assert "Validation passed" in out, out


def test_the_installed_plugin_briefs_records_answers_and_offers_expand(
    claude: Path, agent_repo: Path, tmp_path: Path
) -> None:
    runner = ClaudeRunner(claude, tmp_path / "claude-home")
    runner.home.mkdir()
    added = claude_command(claude, runner.home, "plugin", "marketplace", "add", str(REPO))
    assert "veil" in added, added
    installed = claude_command(claude, runner.home, "plugin", "install", "veil@veil")
    assert "veil@veil" in installed, installed
    listed = claude_command(claude, runner.home, "plugin", "list")
    assert "veil@veil" in listed and "enabled" in listed, listed

    # a plugin cannot set permissions: those docs/claude-code.md gives for ~/.claude/settings.json
    user_settings = runner.home / ".claude" / "settings.json"
    config = json.loads(user_settings.read_text())
    config["permissions"] = {
        "allow": [f"{TOOLS}{tool}" for tool in settings.READ_ONLY_TOOLS],
        "deny": [f"{TOOLS}hook"],
    }
    user_settings.write_text(json.dumps(config))
    seed_memory(agent_repo, [("project", "runs tests with", "pytest -q")])
    attempts = f"{TOOLS}attempts"
    script = [
        Turn("Running the tests.", (ToolUse("Bash", {"command": FAILING_TEST}),)),
        Turn("Checking what was tried.", (ToolUse(attempts, {}),)),
        Turn("Done."),
    ]
    path = f"{VEIL_BIN.parent}{os.pathsep}{os.environ['PATH']}"  # veil on PATH
    with ScriptedServer(script) as server:
        run = runner(
            "make test_total pass",
            cwd=agent_repo,
            base_url=server.url,
            env={"PATH": path, "ENABLE_TOOL_SEARCH": "false"},
            allowed_tools=("Bash",),  # Veil's tools are allowed by the settings above
        )
    assert run.returncode == 0, run.describe()
    requests = server.model_requests
    assert len(requests) == len(script), run.describe()
    first = json.dumps(requests[0].body)
    # UserPromptSubmit: the briefing from the project's memory came with the prompt
    assert "<veil-memory>" in first and "pytest -q" in first, first[-3000:]
    # the plugin's MCP server: its tools offered under the plugin's names, expand among them
    names = requests[0].tool_names
    assert f"{TOOLS}expand" in names and f"{TOOLS}recall" in names, names
    assert not any(n.startswith("mcp__veil__") for n in names), names
    assert f"{TOOLS}hook" not in names  # denied to the model; the hooks still call it
    # PostToolUseFailure recorded the failed command; the attempts tool answers with it
    answered = requests[2].tool_results[-1]
    assert not answered.is_error and '"attempts":1' in answered.text, answered
    assert tape_kinds(agent_repo).get("convergence.attempt") == 1
    # every hook that ran succeeded (none "not connected": they call plugin:veil:veil)
    assert run.transcript is not None
    hooks = [
        entry["attachment"]
        for line in run.transcript.read_text().splitlines()
        if "attachment" in (entry := json.loads(line)) and "hook" in entry["attachment"]["type"]
    ]
    assert not [h for h in hooks if "error" in h["type"]], hooks
    events = {h["hookEvent"] for h in hooks if h["type"] == "hook_success"}
    assert {"PreToolUse", "PostToolUseFailure", "PostToolBatch"} <= events, events

    # through `veil claude`: the plugin is enabled, so veil claude adds neither its own server
    # nor its hooks (one `veil mcp`, not two); a stub names the plugin's expand
    with ScriptedServer([Turn("Done.")]) as server:
        wrapped = runner(
            "make test_total pass",
            cwd=agent_repo,
            base_url=server.url,
            env={"PATH": path, "ENABLE_TOOL_SEARCH": "false"},
            wrapper=[str(VEIL_BIN), "claude"],
        )
    assert wrapped.returncode == 0, wrapped.describe()
    names = server.model_requests[0].tool_names
    assert "mcp__veil__expand" not in names and f"{TOOLS}expand" in names, names
