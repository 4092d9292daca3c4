"""Claude Code hook payloads (tests/data/claude_code) filled in for a temporary git project,
and the two ways to run a hook: ``veil hook claude-code EVENT`` as a subprocess (what Claude
Code runs) and the same entry point in-process (:func:`veil.cli.hook.run_hook`), which the
tests use to lay down earlier calls quickly."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from veil.cli.hook import run_hook

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "claude_code"
VEIL = [sys.executable, "-m", "veil.cli.main"]


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str

    @property
    def answer(self) -> dict[str, Any] | None:
        return json.loads(self.stdout) if self.stdout.strip() else None

    @property
    def context(self) -> str:
        answer = self.answer or {}
        return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


def git_project(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (path / "tests").mkdir()
    (path / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "root"],
    ):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    return git_project(tmp_path / "proj")


def payload(name: str, project: Path, session: str = "s1", **fields: Any) -> str:
    """The fixture ``name`` for ``project``; ``fields`` replace top-level fields or, for
    ``tool_input`` / ``tool_response``, are merged into them."""
    text = (FIXTURES / f"{name}.json").read_text()
    text = text.replace("{project}", str(project)).replace("{session}", session)
    text = text.replace("{transcript}", str(project / "transcript.jsonl"))
    data: dict[str, Any] = json.loads(text)
    for key, value in fields.items():
        if key in ("tool_input", "tool_response") and isinstance(value, dict):
            data[key] = {**data.get(key, {}), **value}
        else:
            data[key] = value
    return json.dumps(data)


def hook_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    env.update(extra)
    return env


def run_subprocess(event: str, stdin: str, *, env: dict[str, str] | None = None) -> Ran:
    """``veil hook claude-code EVENT`` exactly as Claude Code runs a command hook."""
    done = subprocess.run(
        [*VEIL, "hook", "claude-code", event],
        input=stdin, capture_output=True, text=True, timeout=60, check=False,
        env=env or hook_env(),
    )  # fmt: skip
    return Ran(done.returncode, done.stdout, done.stderr)


def run_inprocess(event: str, stdin: str) -> Ran:
    out, err = io.StringIO(), io.StringIO()
    code = run_hook("claude-code", event, stdin=io.StringIO(stdin), stdout=out, stderr=err)
    return Ran(code, out.getvalue(), err.getvalue())
