"""``veil proxy`` / ``veil claude`` / ``veil codex`` given what a new user might give them: one
line that names what was wrong, exit status 2, no traceback."""

from __future__ import annotations

import contextlib
import os
import select
import signal
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_when_veil_dies_the_agent_ends_instead_of_retrying_a_dead_port(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The proxy is a thread of ``veil claude``: killed, it takes the proxy with it. The agent
    (here a stand-in that prints its pid and then waits) gets SIGTERM from the kernel and ends;
    nothing is left running against a dead port."""
    agent = tmp_path / "claude"
    agent.write_text("#!/bin/sh\necho $$\nexec tail -f /dev/null\n")
    agent.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VEIL_", "ANTHROPIC_"))}
    env |= {"VEIL_CLAUDE": str(agent), "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    veil_run = subprocess.Popen(
        [sys.executable, "-m", "veil.cli.main", "claude", "--", "-p", "x"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert veil_run.stdout is not None
        pid = int(veil_run.stdout.readline())  # the agent runs, through the proxy
        request.addfinalizer(lambda: _kill_quietly(pid))
        watch = os.pidfd_open(pid)
        veil_run.kill()
        veil_run.wait(timeout=10)
        ready, _, _ = select.select([watch], [], [], 10)  # a bound on a failure, not a wait
        assert ready, f"the agent {pid} still runs after veil died"
        os.close(watch)
    finally:
        veil_run.kill()
        veil_run.communicate(timeout=10)


def _kill_quietly(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def test_ctrl_c_goes_to_the_agent_and_veil_ends_with_its_status(tmp_path: Path) -> None:
    """Ctrl-C at the terminal reaches the whole foreground group: the agent (a stand-in that
    exits 130 on SIGINT) ends, and ``veil claude`` ends with the agent's status, its summary
    said and no traceback."""
    agent = tmp_path / "claude"
    agent.write_text("#!/bin/sh\ntrap 'exit 130' INT\necho ready\nwhile :; do sleep 1; done\n")
    agent.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VEIL_", "ANTHROPIC_"))}
    env |= {"VEIL_CLAUDE": str(agent), "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    with subprocess.Popen(
        [sys.executable, "-m", "veil.cli.main", "claude", "--", "-p", "x"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    ) as veil_run:  # fmt: skip
        assert veil_run.stdout is not None
        assert veil_run.stdout.readline().strip() == "ready"
        os.killpg(veil_run.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        try:
            _, err = veil_run.communicate(timeout=30)  # a bound on a failure, not a wait
        except subprocess.TimeoutExpired:
            os.killpg(veil_run.pid, signal.SIGKILL)
            raise AssertionError("veil claude was still running 30 s after Ctrl-C") from None
    assert veil_run.returncode == 130, err
    assert "Traceback" not in err and "veil claude: no request reached the model" in err
