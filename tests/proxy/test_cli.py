"""``veil proxy`` / ``veil claude`` / ``veil codex`` given what a new user might give them: one
line that names what was wrong, exit status 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def veil(cwd: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VEIL_", "ANTHROPIC_"))}
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        [sys.executable, "-m", "veil.cli.main", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("proxy", "--upstream", "foo"), "--upstream 'foo': not an http(s) URL"),
        (("proxy", "--window", "-5"), "-5 must be greater than 0"),
        (("claude",), "`claude` is not on PATH (install it, or set VEIL_CLAUDE to its path)"),
        (("codex",), "`codex` is not on PATH (install it, or set VEIL_CODEX to its path)"),
        (
            ("claude", "--window", "1000"),
            "--window 1,000 leaves no room for the conversation: Claude Code sends about",
        ),
        (("codex", "--window", "9000"), "--window 9,000 leaves no room for the conversation: Co"),
    ],
)
def test_a_mistake_is_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    agents = tmp_path / "agents"  # a claude and a codex that exist, for the window checks
    agents.mkdir()
    if "--window" in args and args[0] in ("claude", "codex"):
        (agents / args[0]).write_text("#!/bin/sh\nexit 0\n")
        (agents / args[0]).chmod(0o755)
    path = f"{agents}:{Path(sys.executable).parent}:/usr/bin:/bin"
    done = veil(tmp_path, *args, path=path)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""
