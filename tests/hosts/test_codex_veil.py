"""Veil inside the REAL Codex CLI: ``veil install codex`` (its MCP server, its hooks in
``$CODEX_HOME/hooks.json`` and Codex's trust of them, asked of the binary), then ``codex exec``
sessions against the scripted model server on 127.0.0.1 (Responses API, SSE).

Codex's hooks can deny a call but not end a run: at level 3 every tracked call is denied with
the summary (docs/claude-code.md, "Codex")."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from tests.hosts.runners import CodexRun, CodexRunner
from tests.hosts.veil_setup import (
    FAILING_TEST,
    PYTEST,
    TEST_TOTAL,
    install,
    seed_memory,
    tape_kinds,
)
from veil.llm.scripted_server import (
    ModelRequest,
    RecordedRequest,
    ScriptedServer,
    ToolUse,
    Turn,
    TurnSource,
)

TASK = "make test_total pass"
STOPPED = "Command blocked by PreToolUse hook: Veil stopped the session"


def shell(command: str) -> ToolUse:
    return ToolUse("exec_command", {"cmd": command})


def sent(request: RecordedRequest) -> str:
    return json.dumps(request.body)


def installed(runner: CodexRunner, repo: Path, tmp_path: Path, codex: Path) -> str:
    codex_home = runner.home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    env = {"CODEX_HOME": str(codex_home), "VEIL_CODEX": str(codex)}
    return install("codex", repo, runner.home, tmp_path / "state", env=env)


def session(runner: CodexRunner, repo: Path, turns: Sequence[TurnSource], *, model: str = "gpt-5.5"
            ) -> tuple[CodexRun, list[RecordedRequest]]:  # fmt: skip
    with ScriptedServer(turns) as server:
        run = runner(TASK, cwd=repo, base_url=server.url, model=model)
    return run, server.model_requests


def outcomes(repo: Path) -> list[str]:
    with sqlite3.connect(repo / ".veil" / "context.db") as conn:
        rows = conn.execute(
            "SELECT payload FROM tape_events WHERE kind = 'convergence.attempt' ORDER BY seq"
        ).fetchall()
    return [json.loads(r[0])["outcome"] for r in rows]


def test_codex_with_veil_briefs_notes_denies_at_level_three_and_remembers(
    run_codex: CodexRunner, codex: Path, agent_repo: Path, tmp_path: Path
) -> None:
    out = installed(run_codex, agent_repo, tmp_path, codex)
    assert "trusted Veil's 3 hooks" in out, out
    seed_memory(agent_repo, [("project", "runs tests with", "pytest -q")])
    script = [Turn("Running the tests.", (shell(FAILING_TEST),)) for _ in range(14)]
    run, requests = session(run_codex, agent_repo, [*script, Turn("Giving up.")])
    assert run.returncode == 0, run.describe()

    assert "<veil-memory>" in sent(requests[0]) and "pytest -q" in sent(requests[0])
    level_two = next(i for i, r in enumerate(requests) if "level 2 of 3" in sent(r))
    assert "take a different approach" in sent(requests[level_two])
    # the exit status came from Codex's rollout: every run is a failure on the record
    recorded = outcomes(agent_repo)
    assert recorded and set(recorded) == {"fail"}
    # from level 3 on, every command is denied with the summary (Codex cannot end the run)
    results = [r.tool_results[-1].text for r in requests[1:]]
    first_stop = next(i for i, text in enumerate(results) if text.startswith(STOPPED))
    assert first_stop == len(recorded)  # the stop came right after the last recorded attempt
    assert all(text.startswith(STOPPED) for text in results[first_stop:])

    # a second session (a model that is offered MCP tools directly) gets the record and can
    # read it through Veil's MCP tool
    def second(request: ModelRequest) -> Turn:
        if any(r.call_id.endswith("_1") and "goals" in r.text for r in request.tool_results()):
            return Turn("I will look elsewhere.")
        if "mcp__veil.attempts" in request.tool_names():
            return Turn("Checking.", (ToolUse("mcp__veil.attempts", {}),))
        return Turn("Checking.", (shell("echo the tools are loading"),))

    again, requests2 = session(run_codex, agent_repo, [second] * 4, model="gpt-4.1")
    assert again.returncode == 0, again.describe()
    first = sent(requests2[0])
    assert "convergence level 2 of 3" in first and "FAILED test_total" in first
    answered = [r.tool_results[-1].text for r in requests2[1:] if r.tool_results]
    on_record = f'"attempts":{len(outcomes(agent_repo))},"level":2'  # back at 2 for the person
    assert any(on_record in a.replace(" ", "") for a in answered), answered


def test_codex_denies_a_repeated_failed_patch(
    run_codex: CodexRunner, codex: Path, agent_repo: Path, tmp_path: Path
) -> None:
    installed(run_codex, agent_repo, tmp_path, codex)
    calc = agent_repo / "calc.py"
    calc.write_text("def total(a, b):\n    return a - b\n")
    (agent_repo / "test_total.py").write_text(TEST_TOTAL)

    def patch(old: str, new: str) -> Turn:
        body = (
            f"*** Begin Patch\n*** Update File: calc.py\n@@\n-    {old}\n+    {new}\n"
            "*** End Patch\n"
        )
        return Turn("Patching.", (ToolUse("apply_patch", {"input": body}),))

    tests = Turn("Running the tests.", (shell(PYTEST),))
    times, back = patch("return a - b", "return a * b"), patch("return a * b", "return a - b")
    script = [times, tests, back, tests, times, tests, back, times, Turn("Stopping.")]
    run, requests = session(run_codex, agent_repo, script)
    assert run.returncode == 0, run.describe()
    denied = requests[-1].tool_results[-1].text
    refusal = "Veil blocked this call: this exact edit"
    assert "blocked by PreToolUse hook" in denied and refusal in denied
    assert calc.read_text() == "def total(a, b):\n    return a - b\n"
    kinds = tape_kinds(agent_repo)
    assert kinds["convergence.attempt"] == 7  # four patches and three test runs
