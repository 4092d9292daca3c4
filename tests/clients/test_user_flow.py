"""One project used the way a person uses it (docs/claude-code.md), every step a subprocess:
``veil install claude-code`` over their own settings, the installed hooks called as Claude Code
calls them (the ``hook`` tool of the installed ``veil mcp``, its ``input`` filled in from the
hook's payload) until the task circles to level 2, ``veil memory`` from the shell, and what the
memory then gives a new session's first prompt and the installed MCP tools. (The same with
the real Claude Code binary: tests/hosts/test_claude_code_veil.py.)"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import VEIL, McpProcess, hook_arguments, payload

OWN_SETTINGS = {
    "permissions": {"allow": ["Bash(pytest:*)"]},
    "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [
        {"type": "command", "command": "echo formatted"}]}]},
}  # fmt: skip


def shell(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VEIL_MODEL", "CLAUDE_PROJECT_DIR")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p != str(Path(VEIL[0]).parent))  # fmt: skip
    return subprocess.run([*VEIL, *args], cwd=cwd, input=stdin, capture_output=True, text=True,
                          timeout=120, check=False, env=env)  # fmt: skip


class Claude:
    """Claude Code's part: the installed MCP server, started as it starts it, and the
    installed hooks called through it."""

    def __init__(self, project: Path) -> None:
        self.project = project
        local = project / ".claude" / "settings.local.json"
        self.settings = json.loads(local.read_text())
        claude_json = json.loads((Path(os.environ["HOME"]) / ".claude.json").read_text())
        entry = claude_json["projects"][str(project)]["mcpServers"]["veil"]
        self.server = McpProcess([entry["command"], *entry["args"]], cwd=project)

    def hook(self, event: str, body: str) -> dict[str, Any] | None:
        group = next(g for g in self.settings["hooks"][event] if g["hooks"][0].get("server"))
        answer = self.server.call("hook", hook_arguments(group["hooks"][0]["input"], body))
        return answer or None


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


def test_install_hooks_memory_and_mcp_in_one_project(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("VEIL_STATE_DIR", str(tmp_path / "state"))
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(json.dumps(OWN_SETTINGS))
    install = shell("install", "claude-code", cwd=project)
    assert install.returncode == 0, install.stderr
    assert json.loads((project / ".claude" / "settings.json").read_text()) == OWN_SETTINGS
    claude = Claude(project)

    # a session circling on a failing test reaches level 2 and is told so, in Claude's format
    claude.hook("UserPromptSubmit", payload("user_prompt_submit", project))
    answers: list[dict[str, Any] | None] = []
    for n in range(5):
        failed = payload("post_tool_use_failure_bash", project, tool_use_id=f"toolu_t{n}")
        answers.append(claude.hook("PostToolUseFailure", failed))
        change = {"new_string": f"return a + b  # try {n}"}
        edited = payload("post_tool_use_edit", project, tool_input=change, tool_use_id=f"e{n}")
        answers.append(claude.hook("PostToolUse", edited))
    levels = [context(a).split("convergence level ")[1][0] for a in answers if context(a)]
    assert levels[0] == "1" and "2" in levels
    level_two = next(a for a in answers if "convergence level 2 of 3" in context(a))
    assert "take a different approach" in context(level_two)
    again = payload(
        "pre_tool_use_edit", project, tool_input={"new_string": "return a + b  # try 3"}
    )
    denied = claude.hook("PreToolUse", again)
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

    # a new Claude Code session's first prompt comes with that memory as its briefing
    start = payload("user_prompt_submit", project, session="s2", prompt="Tidy the README.")
    briefing = context(claude.hook("UserPromptSubmit", start))
    assert "The user prefers helix." in briefing and "vim" not in briefing

    # and the installed MCP server answers from the same memory and the same attempt record
    recalled = claude.server.call("recall", {"query": "editor", "token_budget": 100})
    tried = claude.server.call("attempts", {})
    claude.server.close()
    assert [f["object"] for f in recalled["facts"]] == ["helix"] and recalled["tokens"] <= 100
    assert sorted(g["attempts"] for g in tried["goals"]) == [0, 10]
