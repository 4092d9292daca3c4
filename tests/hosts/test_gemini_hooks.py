"""Veil's hooks inside the REAL Gemini CLI (the pin of ``tests/hosts/binaries.py``): ``veil
gemini`` writes them into the run's own settings (``veil hook gemini EVENT``, command hooks),
and the scripted model server drives a session. What the tests read is what Gemini CLI sent to
the model (the recorded requests), its chat file and the project's tape — not payload shapes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.hosts.gemini_runner import GeminiRun, GeminiRunner
from tests.hosts.veil_setup import FAILING_TEST, VEIL_BIN, seed_memory, tape_kinds
from veil.llm.scripted_server import RecordedRequest, ScriptedServer, ToolUse, Turn

WINDOW = 60_000
LOOP = ":streamGenerateContent"
UNITTEST = "python3 -m unittest -q test_total"
"""A real test run (a ``test`` attempt), quicker to start than pytest."""
TEST_TOTAL = """import unittest

from calc import total


class TestTotal(unittest.TestCase):
    def test_total(self):
        self.assertEqual(total(2, 3), 5)
"""


def shell(command: str) -> ToolUse:
    return ToolUse("run_shell_command", {"command": command, "description": "run it"})


def session(
    runner: GeminiRunner, repo: Path, turns: list[Turn], task: str = "make test_total pass"
) -> tuple[GeminiRun, list[RecordedRequest]]:
    """One headless ``veil gemini`` run; the agent loop's requests."""
    with ScriptedServer(turns) as server:
        run = runner(task, cwd=repo, base_url=server.url, timeout=120,
                     wrapper=[str(VEIL_BIN), "gemini", "--window", str(WINDOW)])  # fmt: skip
    return run, [r for r in server.model_requests if LOOP in r.path]


def sent(request: RecordedRequest) -> str:
    return json.dumps(request.body)


def test_the_briefing_reaches_the_first_request(run_gemini: GeminiRunner, agent_repo: Path) -> None:
    seed_memory(agent_repo, [("project", "runs tests with", "pytest -q")])
    run, requests = session(run_gemini, agent_repo, [Turn("Noted.")])
    assert run.returncode == 0, run.describe()
    first = requests[0].body["contents"][-1]
    text = json.dumps(first)
    # BeforeAgent's additionalContext, appended to the prompt (Gemini CLI escapes < and >)
    assert "<hook_context>&lt;veil-memory&gt;" in text and "pytest -q" in text, text[:2000]
    assert "make test_total pass" in text


def test_a_failing_command_is_recorded_noted_and_the_run_stopped(
    run_gemini: GeminiRunner, agent_repo: Path
) -> None:
    # not word for word: Gemini CLI's own loop detector ends a run at the fifth identical call
    # in a row ("Loop detected, stopping execution"), before Veil's level 3
    script = [Turn("Running the tests.", (shell(f"{FAILING_TEST} # {i}"),)) for i in range(14)]
    run, requests = session(run_gemini, agent_repo, [*script, Turn("Giving up.")])
    assert run.returncode == 0, run.describe()
    # every command the model ran (one per request answered) is an attempt on the tape
    kinds = tape_kinds(agent_repo)
    assert kinds["convergence.attempt"] == len(requests), kinds
    # level 2: the note, after the call's own output, in the next request
    level_two = next(i for i, r in enumerate(requests) if "level 2 of 3" in sent(r))
    result = requests[level_two].tool_results[-1].text
    assert "FAILED test_total" in result and "<hook_context>" in result, result
    assert "take a different approach" in result
    # level 3 (AfterTool's continue: false): the run ends before the script does, the call's
    # result is Veil's summary, and the person reads why
    assert len(requests) < len(script), f"not stopped: {len(requests)} requests"
    stopped = run.tools("tool_result")[-1]
    assert stopped["status"] == "error", stopped
    assert stopped["output"].startswith("Agent execution stopped by hook: Veil stopped the session")
    assert "Over to you" in stopped["output"]


def test_a_repeated_failed_edit_is_denied_with_the_reason(
    run_gemini: GeminiRunner, agent_repo: Path
) -> None:
    calc = agent_repo / "calc.py"
    calc.write_text("def total(a, b):\n    return a - b\n")
    (agent_repo / "test_total.py").write_text(TEST_TOTAL)
    tests = Turn("Running the tests.", (shell(UNITTEST),))
    why = {"instruction": "change the operator"}
    to_times = {"file_path": "calc.py", "old_string": "a - b", "new_string": "a * b", **why}
    back = {"file_path": "calc.py", "old_string": "a * b", "new_string": "a - b", **why}
    script = [
        Turn("Trying *.", (ToolUse("replace", to_times),)),
        tests,
        Turn("Reverting.", (ToolUse("replace", back),)),
        tests,
        Turn("Trying * again.", (ToolUse("replace", to_times),)),
        tests,
        Turn("Reverting again.", (ToolUse("replace", back),)),  # level 2 from here on
        Turn("Trying * once more.", (ToolUse("replace", to_times),)),
        Turn("Stopping here."),
    ]
    run, requests = session(run_gemini, agent_repo, script)
    assert run.returncode == 0, run.describe()
    assert len(requests) == len(script), run.describe()
    denied = requests[-1].tool_results[-1].text
    refusal = "Tool execution blocked: Veil blocked this call: this exact edit (calc.py)"
    assert refusal in denied, denied
    assert calc.read_text() == "def total(a, b):\n    return a - b\n"  # the denied edit not made
