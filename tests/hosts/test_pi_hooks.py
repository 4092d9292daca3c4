"""Veil's hooks inside the REAL pi (npm ``@mariozechner/pi-coding-agent`` 0.73.1): ``veil pi``
starts pi with Veil's extension, which sends pi's prompt and tool events to the ``hook`` tool of
``veil mcp --project`` (the handlers ``veil claude``'s hooks reach) and applies the answers the
pi way: the memory briefing as a message, a call blocked with Veil's reason, the run ended at
convergence level 3. What the tests read is what pi sent to the scripted model server and the
project's tape.

Each session is one real run (about 10-20 s on a busy 2-core machine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hosts.pi_runner import PiRunner
from tests.hosts.veil_setup import (
    FAILING_TEST,
    PYTEST,
    TEST_TOTAL,
    VEIL_BIN,
    seed_memory,
    tape_kinds,
)
from veil.llm.scripted_server import RecordedRequest, ScriptedServer, ToolUse, Turn

TASK = "make test_total pass"


@pytest.fixture
def run_pi(pi: Path, tmp_path: Path) -> PiRunner:
    return PiRunner(pi, tmp_path / "pi-home")


def sent(request: RecordedRequest) -> str:
    return json.dumps(request.body)


def session(run_pi: PiRunner, repo: Path, turns: list[Turn]) -> tuple[str, list[RecordedRequest]]:
    with ScriptedServer(turns) as server:
        run = run_pi(TASK, cwd=repo, base_url=server.url, wrapper=[str(VEIL_BIN), "pi"])
    assert run.returncode == 0, run.describe()
    return run.stderr, server.model_requests


def test_veil_pi_briefs_records_notes_and_stops(run_pi: PiRunner, agent_repo: Path) -> None:
    seed_memory(agent_repo, [("project", "runs tests with", "pytest -q")])
    failing = Turn("Running the tests.", (ToolUse("bash", {"command": FAILING_TEST}),))
    script = [failing] * 14 + [Turn("Giving up.")]
    stderr, requests = session(run_pi, agent_repo, script)

    # the briefing reached the model with the person's first prompt
    assert "<veil-memory>" in sent(requests[0]) and "pytest -q" in sent(requests[0])
    # every command the model ran is an attempt on the project's tape (the last one's result
    # was never sent: the run ended after it)
    assert tape_kinds(agent_repo)["convergence.attempt"] == len(requests), stderr
    # circling: the level-2 note came back with a result, then the run ended at level 3
    level_two = next(i for i, r in enumerate(requests) if "level 2 of 3" in sent(r))
    assert "take a different approach" in sent(requests[level_two])
    assert len(requests) < len(script), f"not stopped: {len(requests)} requests"
    assert "FAILED test_total" in requests[-1].tool_results[-1].text
    assert "no opinion" not in stderr, stderr
    assert "veil pi: Veil stopped the session" in stderr, stderr  # the person reads why

    # the next session on the same task gets the record and is back at level 2
    _, again = session(run_pi, agent_repo, [Turn("I will look elsewhere.")])
    first = sent(again[0])
    assert "convergence level 2 of 3" in first and "FAILED test_total" in first


def test_veil_pi_refuses_a_repeated_failed_edit_with_the_reason(
    run_pi: PiRunner, agent_repo: Path
) -> None:
    calc = agent_repo / "calc.py"
    calc.write_text("def total(a, b):\n    return a - b\n")
    (agent_repo / "test_total.py").write_text(TEST_TOTAL)
    tests = Turn("Running the tests.", (ToolUse("bash", {"command": PYTEST}),))

    def edit(old: str, new: str) -> ToolUse:
        return ToolUse("edit", {"path": "calc.py", "edits": [{"oldText": old, "newText": new}]})

    script = [
        Turn("Trying *.", (edit("a - b", "a * b"),)),
        tests,
        Turn("Reverting.", (edit("a * b", "a - b"),)),
        tests,
        Turn("Trying * again.", (edit("a - b", "a * b"),)),
        tests,
        Turn("Reverting again.", (edit("a * b", "a - b"),)),  # level 2 from here on
        Turn("Trying * once more.", (edit("a - b", "a * b"),)),
        Turn("Stopping here."),
    ]
    stderr, requests = session(run_pi, agent_repo, script)
    assert len(requests) == len(script), stderr
    denied = requests[-1].tool_results[-1]
    refusal = "Veil blocked this call: this exact edit (calc.py)"
    assert denied.is_error and refusal in denied.text, denied
    assert calc.read_text() == "def total(a, b):\n    return a - b\n"  # the denied edit not made


def test_a_broken_memory_costs_the_pi_session_nothing(run_pi: PiRunner, agent_repo: Path) -> None:
    """Fail open: with the project's memory unreadable the prompt's hook has no opinion (one
    line on stderr), every turn runs and the calls are still recorded. (A broken
    ``context.db`` stops ``veil pi`` before pi starts: the proxy needs it.)"""
    veil = agent_repo / ".veil"
    veil.mkdir()
    (veil / "memory.db").write_bytes(b"\x00garbage" * 100)
    failing = Turn("Running the tests.", (ToolUse("bash", {"command": FAILING_TEST}),))
    script = [Turn("Run.", (ToolUse("bash", {"command": "echo one"}),)), failing, failing]
    script.append(Turn("Done."))
    stderr, requests = session(run_pi, agent_repo, script)
    assert len(requests) == len(script), stderr  # every turn ran: nothing stopped, nothing hung
    results = [r.tool_results[-1] for r in requests[1:]]
    assert results[0].text.strip() == "one" and not results[0].is_error
    assert all("FAILED test_total" in r.text for r in results[1:])
    assert not any("<veil-memory>" in sent(r) for r in requests)
    assert tape_kinds(agent_repo)["convergence.attempt"] == 3
    assert (veil / "memory.db").read_bytes().startswith(b"\x00garbage")  # nothing overwritten
