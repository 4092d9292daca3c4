from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from veil.agent.tool import ToolContext
from veil.agent.tools import BashTool
from veil.agent.tools import bash as bash_module
from veil.agent.tools._common import MAX_LINES

from .conftest import RunTool


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (PID 1 in a container may not reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


def test_output_and_exit_code(run: RunTool, project: Path) -> None:
    result = run("bash", command="echo out; echo err >&2; exit 3")
    assert not result.is_error  # the tool worked; the command failed
    assert result.content == "out\nerr\n[exit code 3]"
    assert result.details["exit_code"] == 3
    assert result.details["timed_out"] is False
    ok = run("bash", command="pwd")
    assert ok.content == f"{project.resolve()}\n[exit code 0]"


def test_no_output_and_no_final_newline(run: RunTool) -> None:
    assert run("bash", command="true").content == "(no output)\n[exit code 0]"
    assert run("bash", command="printf abc").content == "abc\n[exit code 0]"


def test_stdin_is_closed(run: RunTool) -> None:
    result = run("bash", command="cat; echo done", timeout=5)
    assert result.content == "done\n[exit code 0]"


def test_killed_by_signal(run: RunTool) -> None:
    result = run("bash", command="kill -SEGV $$")
    assert result.content.endswith("[killed by signal SIGSEGV]")
    assert result.details["exit_code"] == -11


def test_long_output_keeps_the_tail_and_the_full_output(run: RunTool) -> None:
    n = MAX_LINES + 1000
    result = run("bash", command=f"seq 1 {n}; echo failed >&2; exit 1")
    assert not result.is_error
    lines = result.content.split("\n")
    assert lines[0] == (
        f"[output truncated: showing the last {MAX_LINES} of {n + 1} lines; "
        "the full output is kept]"
    )
    assert lines[-2:] == ["failed", "[exit code 1]"]
    assert "\n1\n" not in result.content
    assert result.full_output is not None
    assert result.full_output.startswith("1\n2\n3\n")
    assert result.full_output.endswith(f"{n}\nfailed\n[exit code 1]")
    assert result.details["truncated"] is True


def test_timeout_kills_the_whole_process_group(run: RunTool, project: Path) -> None:
    started = time.monotonic()
    result = run("bash", command="sleep 30 & echo $! > child.pid; echo started; wait", timeout=0.5)
    elapsed = time.monotonic() - started
    assert result.is_error
    assert result.content == "started\n[timed out after 0.5s; process group killed]"
    assert result.details == {
        "exit_code": None,
        "timed_out": True,
        "aborted": False,
        "timeout_s": 0.5,
        "truncated": False,
    }
    assert elapsed < 5
    child = int((project / "child.pid").read_text())
    assert wait_gone(child), "the background child survived the timeout"


def test_sigterm_ignoring_processes_get_sigkill(
    run: RunTool, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bash_module, "TERM_GRACE_S", 0.2)
    result = run("bash", command="trap '' TERM; sleep 30 & echo $! > c.pid; wait", timeout=0.3)
    assert "timed out" in result.content
    assert wait_gone(int((project / "c.pid").read_text()))


def test_abort_stops_the_command(ctx: ToolContext, project: Path) -> None:
    timer = threading.Timer(0.3, ctx.abort.set)
    timer.start()
    try:
        started = time.monotonic()
        result = BashTool().run({"command": "sleep 30 & echo $! > a.pid; wait"}, ctx)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 5
    assert result.is_error
    assert result.content.endswith("[interrupted by the user; process group killed]")
    assert result.details["aborted"] is True
    assert wait_gone(int((project / "a.pid").read_text()))


def test_default_timeout_comes_from_the_context(project: Path) -> None:
    ctx = ToolContext(cwd=project, default_timeout_s=0.3)
    result = BashTool().run({"command": "sleep 5"}, ctx)
    assert "timed out after 0.3s" in result.content


def test_timeout_is_capped(run: RunTool) -> None:
    assert run("bash", command="true", timeout=10_000).details["timeout_s"] == 600


def test_background_job_holding_the_pipe_does_not_block(run: RunTool, project: Path) -> None:
    started = time.monotonic()
    result = run("bash", command="sleep 30 & echo $! > bg.pid; echo hi", timeout=10)
    assert time.monotonic() - started < 3
    assert result.content == "hi\n[exit code 0]"
    pid = int((project / "bg.pid").read_text())
    if alive(pid):  # not the tool's job on a normal exit; tidy up after the test
        os.kill(pid, signal.SIGKILL)


def test_command_closing_its_output_is_still_waited_for(run: RunTool) -> None:
    result = run("bash", command="echo a; exec >&- 2>&-; sleep 0.3; exit 4")
    assert result.content == "a\n[exit code 4]"


def test_failure_to_start_is_an_error(run: RunTool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    result = run("bash", command="echo hi")
    assert result.is_error
    assert "could not start bash" in result.content


def test_capture_is_bounded_dropping_the_oldest_output(
    run: RunTool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bash_module, "MAX_CAPTURE_BYTES", 1000)
    result = run("bash", command="seq 1 2000")
    assert result.content.startswith("[first ")
    assert "bytes of output dropped]\n" in result.content
    assert result.content.endswith("1999\n2000\n[exit code 0]")
    assert len(result.content) < 1100
    assert result.full_output is None  # what was kept fits: nothing more to keep
