"""Veil's hooks inside the REAL opencode (npm ``opencode-ai``, pinned in
``tests/hosts/binaries.py``): ``veil opencode`` adds Veil's plugin to the run's configuration,
which sends opencode's message and tool events to the ``hook`` tool of ``veil mcp --project``
(the handlers ``veil claude``'s hooks reach) and applies the answers the opencode way: the
memory briefing as a synthetic part of the person's message, a call refused with Veil's reason
(the hook throws it), the session aborted at convergence level 3. What the tests read is what
opencode sent to the scripted model server and the project's tape.

Each session is one real run (about 10-20 s on a busy 2-core machine)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.hosts.opencode_runner import OpencodeRun, OpencodeRunner
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


def sent(request: RecordedRequest) -> str:
    return json.dumps(request.body)


def session(
    run_opencode: OpencodeRunner, repo: Path, turns: list[Turn], *, stopped: bool = False
) -> tuple[OpencodeRun, list[RecordedRequest]]:
    """One ``veil opencode -- run TASK``; ``stopped``: Veil ends it at level 3, which
    ``opencode run`` reports as an aborted message (its error event, exit status 1)."""
    with ScriptedServer(turns) as server:
        run = run_opencode(TASK, cwd=repo, base_url=server.url, wrapper=[str(VEIL_BIN), "opencode"])
    errors = [e["error"].get("name") for e in run.events if e.get("type") == "error"]
    if stopped:
        assert run.returncode == 1 and errors == ["MessageAbortedError"], run.describe()
    else:
        assert run.returncode == 0 and not errors, run.describe()
    return run, server.model_requests


def test_veil_opencode_briefs_records_notes_and_stops(
    run_opencode: OpencodeRunner, agent_repo: Path
) -> None:
    seed_memory(agent_repo, [("project", "runs tests with", "pytest -q")])
    failing = Turn("Running the tests.", (ToolUse("bash", {"command": FAILING_TEST}),))
    script = [failing] * 14 + [Turn("Giving up.")]
    run, requests = session(run_opencode, agent_repo, script, stopped=True)
    stderr = run.stderr

    # the briefing reached the model with the person's first prompt
    assert "<veil-memory>" in sent(requests[0]) and "pytest -q" in sent(requests[0])
    # every command the model ran is an attempt on the project's tape (the last one's result
    # was never sent: the session was aborted after it)
    assert tape_kinds(agent_repo)["convergence.attempt"] == len(requests), stderr
    # circling: the level-2 note came back with a result, then the session ended at level 3
    level_two = next(i for i, r in enumerate(requests) if "level 2 of 3" in sent(r))
    assert "take a different approach" in sent(requests[level_two])
    assert len(requests) < len(script), f"not stopped: {len(requests)} requests"
    assert "no opinion" not in stderr, stderr
    assert "veil opencode: Veil stopped the session" in stderr, stderr  # the person reads why

    # the next session on the same task gets the record and is back at level 2
    _, again = session(run_opencode, agent_repo, [Turn("I will look elsewhere.")])
    first = sent(again[0])
    assert "convergence level 2 of 3" in first and "FAILED test_total" in first


def test_veil_opencode_refuses_a_repeated_failed_edit_with_the_reason(
    run_opencode: OpencodeRunner, agent_repo: Path
) -> None:
    calc = agent_repo / "calc.py"
    calc.write_text("def total(a, b):\n    return a - b\n")
    (agent_repo / "test_total.py").write_text(TEST_TOTAL)
    tests = Turn("Running the tests.", (ToolUse("bash", {"command": PYTEST}),))

    def edit(old: str, new: str) -> ToolUse:
        return ToolUse("edit", {"filePath": str(calc), "oldString": old, "newString": new})

    script = [
        Turn("Reading.", (ToolUse("read", {"filePath": str(calc)}),)),
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
    run, requests = session(run_opencode, agent_repo, script)
    assert len(requests) == len(script), run.stderr
    denied = requests[-1].tool_results[-1]
    refusal = "Veil blocked this call: this exact edit (calc.py)"
    assert denied.is_error and refusal in denied.text, denied
    assert calc.read_text() == "def total(a, b):\n    return a - b\n"  # the denied edit not made
