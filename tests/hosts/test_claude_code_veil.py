"""Veil inside the REAL Claude Code: ``veil install claude-code`` run as a person runs it, then
``claude -p`` sessions driven by the scripted model server on 127.0.0.1. What the tests read is
what Claude Code sent to the model (the recorded requests), what it printed, and the project's
tape — not payload shapes.

Each session is one real run (5-15 s on a busy 2-core machine)."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.hosts.binaries import CLAUDE_CODE_OLDEST, CLAUDE_VERSIONS
from tests.hosts.runners import ClaudeRun, ClaudeRunner
from tests.hosts.veil_setup import (
    FAILING_TEST,
    PYTEST,
    TEST_TOTAL,
    VEIL_BIN,
    install,
    seed_memory,
    tape_kinds,
    trust_workspace,
)
from veil.llm.scripted_server import RecordedRequest, ScriptedServer, ToolUse, Turn

TASK = "make test_total pass"
NO_TOOL_SEARCH = {"ENABLE_TOOL_SEARCH": "false"}
BOTH_VERSIONS = pytest.mark.parametrize("run_claude", CLAUDE_VERSIONS, indirect=True)
"""The newest and the oldest supported Claude Code (``veil.hosts.claude_code.TESTED``)."""
"""Claude Code 2.1 defers MCP tools behind its ToolSearch tool; off, they are offered directly."""


def bash(command: str) -> ToolUse:
    return ToolUse("Bash", {"command": command, "description": "run it"})


def failing(n: int) -> list[Turn]:
    return [Turn("Running the tests.", (bash(FAILING_TEST),)) for _ in range(n)]


def sent(request: RecordedRequest) -> str:
    return json.dumps(request.body)


def session(
    runner: ClaudeRunner,
    repo: Path,
    turns: list[Turn],
    *,
    task: str = TASK,
    env: dict[str, str] | None = None,
) -> tuple[ClaudeRun, list[RecordedRequest]]:
    with ScriptedServer(turns) as server:
        run = runner(task, cwd=repo, base_url=server.url, env={**NO_TOOL_SEARCH, **(env or {})})
    return run, server.model_requests


@BOTH_VERSIONS
def test_installed_veil_briefs_answers_notes_stops_and_remembers(
    run_claude: ClaudeRunner, agent_repo: Path, tmp_path: Path
) -> None:
    out = install("claude-code", agent_repo, run_claude.home, tmp_path / "state")
    assert "settings.local.json" in out  # veil is not on PATH here: nothing in committed files
    trust_workspace(run_claude.home, agent_repo)
    seed_memory(agent_repo, [("project", "runs tests with", "pytest -q")])

    script = [Turn("Checking what was tried.", (ToolUse("mcp__veil__attempts", {}),))]
    script += [*failing(14), Turn("Giving up.")]
    run, requests = session(run_claude, agent_repo, script)
    assert run.returncode == 0, run.describe()

    # the briefing reached the model with the person's first prompt
    assert "<veil-memory>" in sent(requests[0]) and "pytest -q" in sent(requests[0])
    # Veil's read-only tool is allowed and answers; the hook tool is not the model's
    assert "mcp__veil__attempts" in requests[0].tool_names
    assert "mcp__veil__hook" not in requests[0].tool_names
    answered = requests[1].tool_results[0]
    assert not answered.is_error and '"goals"' in answered.text, answered
    # circling: the level-2 note, then the stop — the run ends before the script does, right
    # after the call that reached level 3 (PostToolBatch: the model is not asked again)
    level_two = next(i for i, r in enumerate(requests) if "level 2 of 3" in sent(r))
    assert "take a different approach" in sent(requests[level_two])
    assert len(requests) < len(script), f"not stopped: {len(requests)} requests"
    assert (run.result or {}).get("terminal_reason") == "hook_stopped", run.describe()
    stops = run.hook_stops
    assert len(stops) == 1 and stops[0].startswith("Veil stopped the session"), stops
    kinds = tape_kinds(agent_repo)
    assert kinds["convergence.attempt"] == len(requests) - 1  # every command the model ran

    # the next session on the same task gets the record and is back at level 2, not stopped
    again, requests2 = session(run_claude, agent_repo, [Turn("I will look elsewhere.")])
    assert again.returncode == 0, again.describe()
    first = sent(requests2[0])
    assert "convergence level 2 of 3" in first and "FAILED test_total" in first
    assert "Veil stopped" not in again.stdout


@BOTH_VERSIONS
def test_a_repeated_failed_edit_is_denied_with_the_reason(
    run_claude: ClaudeRunner, agent_repo: Path, tmp_path: Path
) -> None:
    path = VEIL_BIN.parent
    out = install("claude-code", agent_repo, run_claude.home, tmp_path / "state", portable=True)
    assert ".mcp.json" in out  # veil on PATH: the committed files carry the portable command
    assert json.loads((agent_repo / ".mcp.json").read_text())["mcpServers"]["veil"]["command"] == (
        "veil"
    )
    trust_workspace(run_claude.home, agent_repo)
    calc = agent_repo / "calc.py"
    calc.write_text("def total(a, b):\n    return a - b\n")
    (agent_repo / "test_total.py").write_text(TEST_TOTAL)
    tests = Turn("Running the tests.", (bash(PYTEST),))
    to_times = {"file_path": str(calc), "old_string": "a - b", "new_string": "a * b"}
    back = {"file_path": str(calc), "old_string": "a * b", "new_string": "a - b"}
    script = [
        Turn("Reading.", (ToolUse("Read", {"file_path": str(calc)}),)),
        Turn("Trying *.", (ToolUse("Edit", to_times),)),
        tests,
        Turn("Reverting.", (ToolUse("Edit", back),)),
        tests,
        Turn("Trying * again.", (ToolUse("Edit", to_times),)),
        tests,
        Turn("Reverting again.", (ToolUse("Edit", back),)),  # level 2 from here on
        Turn("Trying * once more.", (ToolUse("Edit", to_times),)),
        Turn("Stopping here."),
    ]
    env = {"PATH": f"{path}{os.pathsep}{os.environ['PATH']}"}
    run, requests = session(run_claude, agent_repo, script, env=env)
    assert run.returncode == 0, run.describe()
    denied = requests[-1].tool_results[-1]
    refusal = "Veil blocked this call: this exact edit (calc.py)"
    assert denied.is_error and refusal in denied.text, denied
    assert calc.read_text() == "def total(a, b):\n    return a - b\n"  # the denied edit not made


def test_a_broken_store_costs_the_session_nothing(
    run_claude: ClaudeRunner, agent_repo: Path, tmp_path: Path
) -> None:
    install("claude-code", agent_repo, run_claude.home, tmp_path / "state")
    trust_workspace(run_claude.home, agent_repo)
    veil = agent_repo / ".veil"
    veil.mkdir()
    (veil / "context.db").write_bytes(b"this is not a database" * 100)
    (veil / "memory.db").write_bytes(b"\x00garbage" * 100)
    script = [Turn("Run.", (bash("echo one"),)), *failing(4), Turn("Done.")]
    run, requests = session(run_claude, agent_repo, script)
    assert run.returncode == 0, run.describe()
    assert len(requests) == len(script)  # every turn ran: nothing stopped, nothing hung
    results = [r.tool_results[-1] for r in requests[1:]]
    assert results[0].text.strip() == "one" and not results[0].is_error
    assert all("FAILED test_total" in r.text for r in results[1:])
    assert not any("Veil" in sent(r) for r in requests)  # no opinion, no note
    assert (veil / "context.db").read_bytes().startswith(b"this is not")  # nothing overwritten


@BOTH_VERSIONS
def test_a_killed_veil_server_does_not_block_the_session(
    run_claude: ClaudeRunner, agent_repo: Path, tmp_path: Path
) -> None:
    install("claude-code", agent_repo, run_claude.home, tmp_path / "state")
    trust_workspace(run_claude.home, agent_repo)
    # the model's first command kills the `veil mcp` Claude Code started (its child)
    kill = ("ps -o pid=,args= --ppid $PPID | grep 'mcp [-]-project' | awk '{print $1}' "
            "| xargs -r -I{} sh -c 'kill -KILL {} && echo killed {}'")  # fmt: skip
    script = [Turn("Kill.", (bash(kill),)), *failing(3), Turn("Done.")]
    run, requests = session(run_claude, agent_repo, script)
    assert run.returncode == 0, run.describe()
    assert len(requests) == len(script)
    assert re.search(r"killed \d+", requests[1].tool_results[-1].text), requests[1].tool_results
    assert all("FAILED" in r.tool_results[-1].text for r in requests[2:])
    digests = Counter(a["call_digest"] for a in _attempts(agent_repo))
    _no_stray_servers(agent_repo)
    if run_claude.version == CLAUDE_CODE_OLDEST.version:
        # 2.1.197 does not start a dead MCP server again: every later hook fails at once
        # ("Not connected") and the session goes on with nothing recorded
        assert not digests, digests
        return
    # Claude Code started the server again: the later calls are on the record. The kill's own
    # PostToolUse may find no server (skipped: no opinion, nothing blocked) or the restarted
    # one, depending on when Claude Code restarts it: at most that one attempt besides them.
    (_, count), *others = digests.most_common() or [("", 0)]
    assert 1 <= count <= 3 and sum(n for _, n in others) <= 1, digests


def _attempts(repo: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(repo / ".veil" / "context.db") as conn:
        rows = conn.execute(
            "SELECT payload FROM tape_events WHERE kind = 'convergence.attempt' ORDER BY seq"
        ).fetchall()
    return [json.loads(r[0]) for r in rows]


def _no_stray_servers(repo: Path) -> None:
    """No ``veil mcp`` of this repository outlives the session."""
    done = subprocess.run(["pgrep", "-f", "mcp --project"], capture_output=True, text=True,
                          check=False)  # fmt: skip
    for pid in done.stdout.split():
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd == str(repo):
            os.kill(int(pid), signal.SIGKILL)
            raise AssertionError(f"veil mcp {pid} still runs in {repo}")


def test_uninstall_gives_the_files_back(
    run_claude: ClaudeRunner, agent_repo: Path, tmp_path: Path
) -> None:
    (agent_repo / ".claude").mkdir()
    own = b'{"permissions": {"allow": ["Bash(npm test)"]}}\n'
    (agent_repo / ".claude" / "settings.json").write_bytes(own)
    state = tmp_path / "state"
    install("claude-code", agent_repo, run_claude.home, state, portable=True)
    install("claude-code", agent_repo, run_claude.home, state, portable=True)  # idempotent
    install("claude-code", agent_repo, run_claude.home, state, uninstall=True)
    assert (agent_repo / ".claude" / "settings.json").read_bytes() == own
    assert not (agent_repo / ".mcp.json").exists()
    assert not (agent_repo / ".claude" / "settings.local.json").exists()
    # and Claude Code, run there, has no Veil left: no hook, no server
    run, requests = session(run_claude, agent_repo, [Turn("ok")])
    assert run.returncode == 0, run.describe()
    assert not any(name.startswith("mcp__veil") for name in requests[0].tool_names)
    assert "veil" not in sent(requests[0]).lower()
    assert not (agent_repo / ".veil" / "context.db").exists() or not _rows(agent_repo)


def _rows(repo: Path) -> int:
    with sqlite3.connect(repo / ".veil" / "context.db") as conn:
        return int(conn.execute("SELECT count(*) FROM tape_events").fetchone()[0])
