"""One project used the way a person uses it (docs/claude-code.md), every step a subprocess:
``veil install claude-code`` over their own settings, the installed hook commands run as
Claude Code runs them (``sh -c``, the JSON on stdin) until the task circles to level 2,
``veil memory`` from the shell, and what the memory then gives a new session's hook and the
installed MCP server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.clients.conftest import VEIL, payload

OWN_SETTINGS = {
    "permissions": {"allow": ["Bash(pytest:*)"]},
    "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [
        {"type": "command", "command": "echo formatted"}]}]},
}  # fmt: skip


def shell(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VEIL_MODEL", "CLAUDE_PROJECT_DIR")}
    return subprocess.run([*VEIL, *args], cwd=cwd, input=stdin, capture_output=True, text=True,
                          timeout=120, check=False, env=env)  # fmt: skip


def installed(project: Path, event: str) -> str:
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    commands = [h["command"] for g in settings["hooks"][event] for h in g["hooks"]]
    return next(c for c in commands if "hook claude-code" in c)


def claude_runs(project: Path, event: str, body: str) -> dict[str, Any] | None:
    """The installed command for ``event`` as Claude Code runs a command hook."""
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    command = ["sh", "-c", installed(project, event)]
    done = subprocess.run(command, input=body, cwd=project, capture_output=True, text=True,
                          timeout=60, check=False, env=env)  # fmt: skip
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def context(answer: dict[str, Any] | None) -> str:
    return str((answer or {}).get("hookSpecificOutput", {}).get("additionalContext", ""))


def script(path: Path, *replies: dict[str, Any]) -> str:
    path.write_text(json.dumps({"turns": [{"content": json.dumps(r)} for r in replies]}))
    return f"scripted:{path}"


def prefers(value: str) -> dict[str, Any]:
    fact = {"subject": "user", "relation": "prefers", "object": value,
            "statement": f"The user prefers {value}.", "volatility": "durable",
            "claimant": "user", "supersedes": None}  # fmt: skip
    return {"facts": [fact], "episodes": []}


def test_install_hooks_memory_and_mcp_in_one_project(project: Path, tmp_path: Path) -> None:
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps(OWN_SETTINGS))
    install = shell("install", "claude-code", cwd=project)
    assert install.returncode == 0, install.stderr

    # a session circling on a failing test reaches level 2 and is told so, in Claude's format
    assert claude_runs(project, "SessionStart", payload("session_start_startup", project)) is None
    claude_runs(project, "UserPromptSubmit", payload("user_prompt_submit", project))
    answers: list[dict[str, Any] | None] = []
    for n in range(5):
        failed = payload("post_tool_use_failure_bash", project, tool_use_id=f"toolu_t{n}")
        answers.append(claude_runs(project, "PostToolUseFailure", failed))
        change = {"new_string": f"return a + b  # try {n}"}
        edited = payload("post_tool_use_edit", project, tool_input=change, tool_use_id=f"e{n}")
        answers.append(claude_runs(project, "PostToolUse", edited))
    levels = [context(a).split("convergence level ")[1][0] for a in answers if context(a)]
    assert levels[0] == "1" and "2" in levels
    level_two = next(a for a in answers if "convergence level 2 of 3" in context(a))
    assert "take a different approach" in context(level_two)
    again = payload(
        "pre_tool_use_edit", project, tool_input={"new_string": "return a + b  # try 3"}
    )
    denied = claude_runs(project, "PreToolUse", again)
    assert denied is not None
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"

    # from the shell: an old chat imported at its own time, then something said today
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"role": "user", "content": "I use vim for everything.",
                                "timestamp": "2025-01-05T10:00:00Z"}) + "\n")  # fmt: skip
    imported = shell("memory", "import", str(chat), "--model",
                     script(tmp_path / "1.json", prefers("vim")), cwd=project)  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    helix = script(tmp_path / "2.json", prefers("helix"))
    said = shell("memory", "remember", "-", "--model", helix, cwd=project,
                 stdin="I switched to helix.")  # fmt: skip
    assert said.returncode == 0, said.stderr
    recall = shell("memory", "recall", "which editor", cwd=project)
    assert recall.stdout.strip().splitlines()[-1] == "- The user prefers helix."
    listed = shell("memory", "history", "user", "prefers", "--json", cwd=project).stdout
    windows = [
        (f["object"], f["valid_from"][:10], f["status"]) for f in json.loads(listed)["facts"]
    ]
    assert windows[0] == ("vim", "2025-01-05", "superseded") and windows[1][0] == "helix"

    # a new Claude Code session starts with that memory as its briefing
    start = payload("session_start_startup", project, session="s2")
    briefing = context(claude_runs(project, "SessionStart", start))
    assert "The user prefers helix." in briefing and "vim" not in briefing

    # and the installed MCP server answers from the same memory and the same attempt record
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["veil"]
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}
    params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                   cwd=str(project), env=env)  # fmt: skip

    async def ask() -> tuple[dict[str, Any], dict[str, Any]]:
        async with Client(params) as client:
            recalled = await client.call_tool("recall", {"query": "editor", "token_budget": 100})
            tried = await client.call_tool("attempts", {})
            assert recalled.structured_content is not None and tried.structured_content is not None
            return recalled.structured_content, tried.structured_content

    recalled, tried = asyncio.run(asyncio.wait_for(ask(), 60))
    assert [f["object"] for f in recalled["facts"]] == ["helix"] and recalled["tokens"] <= 100
    assert [g["attempts"] for g in tried["goals"]] == [10]
