"""``veil`` used the way a new user uses it: the real CLI as a subprocess in a temporary git
repository, a scripted model (SPEC 7.1), and assertions on what the person sees (stdout,
stderr, exit status) and what the project's stores hold.

Each test names the complaint it answers (issue 14)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from veil.agent.project import project_scope
from veil.convergence.record import AttemptLog
from veil.tape import open_store
from veil.testing import HashEmbedder

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    env = {**os.environ, **GIT_ENV}
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "init"]):
        subprocess.run(cmd, cwd=root, check=True, env=env)
    return root


def script(path: Path, turns: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("VEIL_")}
    return out | GIT_ENV


def veil(
    repo: Path, *args: str, stdin: Any = subprocess.DEVNULL, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "veil.cli.main", *args],
        cwd=repo,
        env=env(),
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


CHECK = "python -c 'import calc; assert calc.add(2, 3) == 5, calc.add(2, 3)'"


# ---- terminals and tasks ----------------------------------------------------------------------


def test_veil_without_p_and_no_terminal_exits_2_naming_p(repo: Path) -> None:
    done = veil(repo, timeout=10)
    assert done.returncode == 2
    assert "-p" in done.stderr and "Traceback" not in done.stderr
    assert not (repo / ".veil").exists()  # nothing was opened


@pytest.mark.parametrize("task", ["", "   "])
def test_an_empty_or_blank_task_is_refused(repo: Path, task: str) -> None:
    done = veil(repo, "-p", task, "--model", script(repo / "s.json", [{"content": "x"}]))
    assert done.returncode == 2
    assert "task is empty" in done.stderr


# ---- approval -----------------------------------------------------------------------------------


def test_ask_without_a_terminal_refuses_says_so_and_exits_6(repo: Path, tmp_path: Path) -> None:
    model = script(
        tmp_path / "w.json",
        [
            {"content": "Writing.", "tool_calls": [call("write", path="new.txt", content="hi")]},
            {"content": "Fixed everything."},
        ],
    )
    done = veil(repo, "-p", "write a file", "--model", model)
    assert done.returncode == 6, done.stderr
    assert not (repo / "new.txt").exists()
    assert "[not run: needs approval]" in done.stderr
    assert "pass --approve auto" in done.stderr
    assert "refused for lack of approval (exit 6)" in done.stderr


def run_on_a_terminal(repo: Path, model: str, answers: list[str]) -> tuple[int, str]:
    """``veil -p`` with a pseudo-terminal on stdin, answering each approval prompt in turn."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "veil.cli.main", "-p", "write files", "--model", model],
        cwd=repo,
        env=env(),
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(slave)
    assert proc.stderr is not None
    err = b""
    pending = list(answers)
    deadline = time.monotonic() + 120
    try:
        while proc.poll() is None or select.select([proc.stderr], [], [], 0)[0]:
            if time.monotonic() > deadline:
                raise AssertionError(f"no end: {err.decode()}")
            ready, _, _ = select.select([proc.stderr], [], [], 0.2)
            if ready:
                chunk = os.read(proc.stderr.fileno(), 65536)
                if not chunk and proc.poll() is not None:
                    break
                err += chunk
                if err.count(b"allow? [y]es") > len(answers) - len(pending) and pending:
                    os.write(master, (pending.pop(0) + "\n").encode())
        proc.wait(timeout=30)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    return proc.returncode, err.decode()


def test_ask_with_a_terminal_asks_yes_no_and_always(repo: Path, tmp_path: Path) -> None:
    model = script(
        tmp_path / "w.json",
        [
            {
                "content": "Writing.",
                "tool_calls": [
                    call("write", path="yes.txt", content="1"),
                    call("write", path="no.txt", content="2"),
                ],
            },
            {"content": "Shell.", "tool_calls": [call("bash", command="echo one > one.txt")]},
            {"content": "Shell again.", "tool_calls": [call("bash", command="echo two > two.txt")]},
            {"content": "Done."},
        ],
    )
    status, err = run_on_a_terminal(repo, model, ["y", "n", "a"])
    assert status == 0, err
    assert (repo / "yes.txt").exists() and not (repo / "no.txt").exists()
    assert (repo / "one.txt").exists() and (repo / "two.txt").exists()
    assert err.count("allow? [y]es") == 3  # the second bash call was not asked: "always"
    assert "[denied]" in err


# ---- telling the truth --------------------------------------------------------------------------


def test_a_failing_command_shows_its_exit_code_and_tail_and_json_carries_memory_events(
    repo: Path, tmp_path: Path
) -> None:
    turns = [
        {"content": "Check.", "tool_calls": [call("bash", command=CHECK)]},
        {
            "content": "Fix.",
            "tool_calls": [
                call("edit", path="calc.py", old_text="return a - b", new_text="return a + b")
            ],
        },
        {"content": "Check again.", "tool_calls": [call("bash", command=CHECK)]},
        {"content": "Fixed: add() now adds."},
    ]
    model = script(tmp_path / "fix.json", turns)
    done = veil(repo, "-p", "fix add", "--model", model, "--approve", "auto")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    failed = next(i for i, line in enumerate(lines) if "[exit 1]" in line)
    assert lines[failed].startswith("· bash ")
    assert any("AssertionError: -1" in line for line in lines[failed + 1 : failed + 4])
    assert sum("[ok]" in line for line in lines) == 2  # the edit and the passing check
    summary = lines[-1]
    assert summary.startswith("veil: 4 turns · tokens ")
    assert "files written: calc.py" in summary and "convergence level 0" in summary
    assert done.stdout.strip() == "Fixed: add() now adds."

    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    jsonl = veil(repo, "-p", "fix add again", "--model", model, "--approve", "auto", "--json")
    kinds = [json.loads(line)["kind"] for line in jsonl.stdout.splitlines()]
    assert {"attempt", "tool_end", "request", "agent_end"} <= set(kinds)
    attempts = [json.loads(x) for x in jsonl.stdout.splitlines() if '"kind": "attempt"' in x]
    assert [a["outcome"] for a in attempts] == ["fail", "unknown", "pass"]
    ends = [json.loads(x) for x in jsonl.stdout.splitlines() if '"kind": "tool_end"' in x]
    assert [e["exit_code"] for e in ends] == [1, None, 0]


def test_eviction_events_reach_the_person(repo: Path, tmp_path: Path) -> None:
    for n in range(8):
        (repo / f"big{n}.py").write_text(f"# module {n}\n" + "x = 1  # padding line\n" * 400)
    turns = [
        {"content": f"Reading {n}.", "tool_calls": [call("read", path=f"big{n}.py")]}
        for n in range(8)
    ] + [{"content": "Read them."}]
    done = veil(
        repo, "-p", "read", "--model", script(tmp_path / "r.json", turns), "--window", "8000"
    )
    assert done.returncode == 0, done.stderr
    assert "veil: evicted " in done.stderr
    summary = done.stderr.splitlines()[-1]
    assert " evicted (" in summary and "0 evicted" not in summary


def _functions(n: int) -> str:
    return "".join(
        f"def function_{i}(value):\n    return value * {i} + {i * i}\n" for i in range(n)
    )


@pytest.mark.parametrize("functions", [180, 300])
def test_a_read_over_the_budget_reaches_the_model_whole(
    repo: Path, tmp_path: Path, functions: int
) -> None:
    """Issue 16, then issue 33: a read the model asked for is never clipped to save tokens.
    With --window 6000 the items' budget is about 2,400 tokens; a 2,900-token file and a
    5,000-token one both come back whole (only a provider's refusal as too long would clip
    one, and the note would say so: tests/agent/test_recovery.py)."""
    (repo / "big.py").write_text(_functions(functions))
    turns = [
        {"content": "Reading.", "tool_calls": [call("read", path="big.py")]},
        {"content": "Done."},
    ]
    trace = tmp_path / "trace.jsonl"
    done = veil(
        repo,
        "-p",
        "what does the last function return",
        "--model",
        script(tmp_path / "b.json", turns),
        "--window",
        "6000",
        "--trace",
        str(trace),
    )
    assert done.returncode == 0, done.stderr
    last = json.loads(trace.read_text().splitlines()[-1])
    shown = json.dumps(last["messages"])
    assert "left out" not in shown
    assert f"function_{functions - 1}(value)" in shown  # the tail,
    assert "function_0(value)" in shown  # the head
    assert f"function_{functions // 2}(value)" in shown  # and the middle


# ---- parallel calls -----------------------------------------------------------------------------


def test_six_parallel_reads_a_turn_for_twenty_turns(repo: Path, tmp_path: Path) -> None:
    """The reported crash: six parallel reads per turn for 20 turns with --window 32000."""
    for n in range(12):
        (repo / f"m{n}.py").write_text("".join(f"def f{n}_{i}(): return {i}\n" for i in range(300)))
    turns = [
        {
            "content": f"Batch {t}.",
            "tool_calls": [call("read", path=f"m{(t * 6 + k) % 12}.py") for k in range(6)],
        }
        for t in range(20)
    ] + [{"content": "All read."}]
    done = veil(
        repo, "-p", "read all", "--model", script(tmp_path / "p.json", turns), "--window", "32000"
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("[ok]") == 120 and "Traceback" not in done.stderr


# ---- convergence across runs --------------------------------------------------------------------


def test_five_runs_that_end_passing_leave_the_sixth_at_level_0(repo: Path, tmp_path: Path) -> None:
    """A command that failed, then passed, resets the count: reruns of a task that ended passing
    are not told they are circling."""
    trace = tmp_path / "trace.jsonl"
    for run in range(6):
        (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        turns = [
            {"content": "Check.", "tool_calls": [call("bash", command=CHECK)]},
            {
                "content": "Fix.",
                "tool_calls": [
                    call("edit", path="calc.py", old_text="return a - b", new_text="return a + b")
                ],
            },
            {"content": "Check.", "tool_calls": [call("bash", command=CHECK)]},
            {"content": "Fixed."},
        ]
        model = script(tmp_path / f"run{run}.json", turns)
        args = ["-p", "make add work", "--model", model, "--approve", "auto"]
        done = veil(repo, *args, *(["--trace", str(trace)] if run == 5 else []))
        assert done.returncode == 0, done.stderr
        assert "convergence level 0" in done.stderr.splitlines()[-1]
    first = json.loads(trace.read_text().splitlines()[0])
    assert "circling" not in first["system"] and "different approach" not in first["system"]
    store = open_store(f"sqlite:///{repo / '.veil' / 'context.db'}", embedder=HashEmbedder())
    log = AttemptLog(store, project_scope(repo), "check")
    log.begin("make add work")
    assert len(log.attempts()) == 18 and log.assess().level == 0
    store.close()


# ---- predictable mistakes -----------------------------------------------------------------------


def test_script_mistakes_are_one_line_naming_what_is_wrong(repo: Path, tmp_path: Path) -> None:
    missing = veil(repo, "-p", "x", "--model", f"scripted:{tmp_path / 'nope.json'}")
    assert missing.returncode == 1 and "script file not found" in missing.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    invalid = veil(repo, "-p", "x", "--model", f"scripted:{bad}")
    assert invalid.returncode == 1 and "not valid JSON" in invalid.stderr
    typo = veil(
        repo, "-p", "x", "--model", script(tmp_path / "t.json", [{"content": "a", "tool_call": []}])
    )
    assert typo.returncode == 1 and "turn 1: unknown field 'tool_call'" in typo.stderr
    for done in (missing, invalid, typo):
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_option_mistakes_are_refused_clearly(repo: Path, tmp_path: Path) -> None:
    model = script(tmp_path / "s.json", [{"content": "ok"}])
    small = veil(repo, "-p", "x", "--model", model, "--window", "500")
    assert small.returncode == 2 and "--window 500 is too small" in small.stderr  # usage
    zero = veil(repo, "-p", "x", "--model", model, "--window", "0")
    assert zero.returncode == 2 and "must be greater than 0" in zero.stderr
    fork = veil(repo, "-p", "x", "--model", model, "--fork")
    assert fork.returncode == 2 and "--fork needs -c/--continue or --session" in fork.stderr
    resume = veil(repo, "-p", "x", "--model", model, "-c")
    assert resume.returncode == 1 and "no earlier session in this project" in resume.stderr
    unknown = veil(repo, "-p", "x", "--model", model, "--session", "s_nope")
    assert unknown.returncode == 1 and "no session s_nope" in unknown.stderr
    for done in (small, zero, fork, resume, unknown):
        assert "Traceback" not in done.stderr


def test_veil_dir_ignores_itself_and_scripted_runs_say_memory_is_off(
    repo: Path, tmp_path: Path
) -> None:
    done = veil(repo, "-p", "x", "--model", script(tmp_path / "s.json", [{"content": "ok"}]))
    assert done.returncode == 0, done.stderr
    assert "long-term memory is off with a scripted model" in done.stderr
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True
    )
    assert ".veil" not in status.stdout
    assert (repo / ".veil" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_the_task_can_come_from_stdin(repo: Path, tmp_path: Path) -> None:
    # issue 28: `echo task | veil -p -` ran the literal task "-"
    model = script(tmp_path / "s.json", [{"content": "Read the task."}])
    done = subprocess.run(
        [sys.executable, "-m", "veil.cli.main", "-p", "-", "--model", model],
        cwd=repo, input="fix the add function\n", capture_output=True, text=True, env=env(),
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed = veil(repo, "sessions")
    assert "fix the add function" in listed.stdout and "  -  " not in listed.stdout


def test_a_closed_pipe_ends_quietly(repo: Path, tmp_path: Path) -> None:
    # issue 28: `veil sessions | head -3` printed a BrokenPipeError traceback
    model = script(tmp_path / "s.json", [{"content": "Done."}])
    for k in range(3):
        assert veil(repo, "-p", f"task {k}", "--model", model).returncode == 0
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before veil writes
    done = subprocess.run(
        [sys.executable, "-m", "veil.cli.main", "sessions"],
        cwd=repo, stdout=writer, stderr=subprocess.PIPE, text=True, env=env(), timeout=120,
        check=False,
    )  # fmt: skip
    os.close(writer)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode == 141
