"""docs/claude-code.md shows real answers: scripts/claude_code_session.sh (Claude Code's part
played with the fixtures, every hook a subprocess) prints them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_documented_answers_are_what_the_hooks_print(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("VEIL_MODEL", "CLAUDE_PROJECT_DIR")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        ["sh", str(REPO / "scripts" / "claude_code_session.sh"), str(tmp_path / "proj")],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answers = [line for line in done.stdout.splitlines() if line.startswith("{")]
    by_event = [json.loads(a)["hookSpecificOutput"]["hookEventName"] for a in answers]
    assert by_event == ["PostToolUse", "PostToolUseFailure", "PostToolUseFailure", "PreToolUse",
                        "UserPromptSubmit"]  # fmt: skip
    docs = (REPO / "docs" / "claude-code.md").read_text()
    level_two, denied = answers[1], answers[3]
    assert "convergence level 2 of 3" in level_two
    assert level_two in docs and denied in docs
    shown = json.loads(level_two)["hookSpecificOutput"]["additionalContext"]
    assert f"```\n{shown}\n```" in docs  # the same text, as the model reads it
