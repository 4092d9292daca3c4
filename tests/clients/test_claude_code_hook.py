"""``veil hook claude-code EVENT`` fed Claude Code's documented payloads.

The crossings that matter (level 2 reaching Claude, the denied re-run, the level-3 stop, the
record reloaded in a new session, the compaction record) run as real subprocesses; the calls
before them run through the same entry point in-process, to keep the tests fast.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import (
    FIXTURES,
    VEIL,
    Ran,
    hook_env,
    payload,
    run_inprocess,
    run_subprocess,
)
from veil.agent.project import project_scope
from veil.clients.claude_code_input import EVENTS
from veil.convergence.feedback import STOPPED
from veil.tape import open_store

TOP_LEVEL = {"continue", "stopReason", "suppressOutput", "systemMessage", "hookSpecificOutput"}
"""The JSON output fields Claude Code documents for these events (universal ones, and
``hookSpecificOutput`` with ``hookEventName``)."""


def check_format(ran: Ran, event: str) -> dict[str, Any] | None:
    """Exit 0, stdout empty or one JSON object in the documented shape for ``event``."""
    assert ran.code == 0, ran.stderr
    answer = ran.answer
    if answer is None:
        assert ran.stdout == ""
        return None
    assert ran.stdout.count("\n") == 1 and ran.stdout.startswith("{")
    assert set(answer) <= TOP_LEVEL, answer
    specific = answer.get("hookSpecificOutput")
    if specific is not None:
        assert specific["hookEventName"] == event
        context = specific.get("additionalContext")
        assert context is None or (isinstance(context, str) and 0 < len(context) < 10_000)
        if event == "PreToolUse":
            assert specific["permissionDecision"] == "deny"
            reason = specific["permissionDecisionReason"]
            assert reason.startswith(("Veil blocked this call: ", STOPPED)), reason
    if answer.get("continue") is False:
        assert answer["stopReason"]
    return answer


def edit(project: Path, n: int, event: str = "PostToolUse") -> str:
    """An Edit of calc.py, different for each ``n``."""
    name = "post_tool_use_edit" if event == "PostToolUse" else "pre_tool_use_edit"
    change = {"new_string": f"return a + b  # try {n}"}
    return payload(name, project, tool_input=change, tool_use_id=f"toolu_edit_{n}")


def failing_test(project: Path, n: int) -> str:
    return payload("post_tool_use_failure_bash", project, tool_use_id=f"toolu_test_{n}")


def test_every_fixture_is_answered_in_the_documented_format(project: Path) -> None:
    (project / "transcript.jsonl").write_text((FIXTURES / "transcript.jsonl").read_text())
    names = sorted(p.stem for p in FIXTURES.glob("*.json"))
    assert len(names) == 13
    seen: set[str] = set()
    for name in names:
        data = json.loads((FIXTURES / f"{name}.json").read_text())
        event = data["hook_event_name"]
        seen.add(event)
        check_format(run_inprocess(event, payload(name, project)), event)
    assert seen == set(EVENTS)


def test_a_loop_reaches_claude_at_level_two_is_denied_a_rerun_and_stops_at_level_three(
    project: Path,
) -> None:
    prompt = payload("user_prompt_submit", project)
    assert check_format(run_inprocess("UserPromptSubmit", prompt), "UserPromptSubmit") is None
    check_format(run_inprocess("PostToolUse", payload("post_tool_use_read", project)), "x")
    calls = [
        ("PostToolUseFailure", failing_test(project, 0)),  # a new failure: progress
        ("PostToolUse", edit(project, 1)),  # a new file: progress
        ("PostToolUseFailure", failing_test(project, 1)),  # circling 1
        ("PostToolUse", edit(project, 2)),  # 2
        ("PostToolUseFailure", failing_test(project, 2)),  # 3
    ]
    for event, body in calls:
        assert check_format(run_inprocess(event, body), event) is None
    level_one = check_format(run_inprocess("PostToolUse", edit(project, 3)), "PostToolUse")
    assert (
        level_one is not None
        and "convergence level 1 of 3" in level_one["hookSpecificOutput"]["additionalContext"]
    )

    # the fifth circling attempt, as Claude Code runs it: level 2 reaches Claude
    ran = run_subprocess("PostToolUseFailure", failing_test(project, 3))
    answer = check_format(ran, "PostToolUseFailure")
    assert answer is not None, ran.stderr
    context = ran.context
    assert "convergence level 2 of 3" in context
    assert "take a different approach" in context
    assert "Every failure seen for this goal:" in context
    fingerprints = [w.strip("[]") for w in context.split() if w.strip("[]").startswith("fp1:")]
    assert fingerprints and len(set(fingerprints)) == 1
    assert "test_calc.py" in context and "1 failed" in context
    assert "different approach" in answer["systemMessage"]

    # the identical re-run of edit 3 (the test after it failed) is denied, with the reason
    denied = run_subprocess("PreToolUse", edit(project, 3, "PreToolUse"))
    reason = check_format(denied, "PreToolUse")
    assert reason is not None
    why = reason["hookSpecificOutput"]["permissionDecisionReason"]
    assert "this exact edit (calc.py)" in why and "failed after it" in why
    # replace_all spelled out (false) is the same call; a different edit is allowed
    same = payload(
        "pre_tool_use_edit",
        project,
        tool_input={"new_string": "return a + b  # try 3", "replace_all": False},
    )
    assert check_format(run_inprocess("PreToolUse", same), "PreToolUse") is not None
    assert run_inprocess("PreToolUse", edit(project, 4, "PreToolUse")).stdout == ""

    for n in (4, 5):  # circling 6..9; each failure at level 2 carries the note again
        assert check_format(run_inprocess("PostToolUse", edit(project, n)), "PostToolUse") is None
        again = run_inprocess("PostToolUseFailure", failing_test(project, n))
        assert "convergence level 2 of 3" in again.context
    batch = payload("post_tool_batch", project)
    assert run_inprocess("PostToolBatch", batch).stdout == ""  # below level 3: no opinion

    stopped = run_subprocess("PostToolUse", edit(project, 6))
    stop = check_format(stopped, "PostToolUse")
    assert stop is not None and stop["continue"] is False, stopped.stderr
    assert stop["stopReason"].startswith("Veil stopped the session (convergence level 3)")
    assert "Over to you" in stop["stopReason"] and "calc.py" in stop["stopReason"]
    assert stopped.context == stop["stopReason"]  # the model reads what the person reads
    # after the batch, the stop again: the one every supported Claude Code obeys (2.1.197
    # ignores it beside a PreToolUse deny and from PostToolUseFailure)
    ended = run_subprocess("PostToolBatch", batch)
    assert check_format(ended, "PostToolBatch") == {
        "continue": False,
        "stopReason": stop["stopReason"],
    }, ended.stderr


@pytest.mark.alone  # a subprocess answering within the hook's 0.9 s deadline
def test_a_new_session_gets_the_earlier_record_and_the_memory_briefing(project: Path) -> None:
    from veil.embed import default_embedder
    from veil.memory import Memory
    from veil.testing import ScriptedModel

    fact = {"subject": "user", "relation": "prefers", "object": "small diffs",
            "statement": "The user prefers small diffs.", "volatility": "durable",
            "claimant": "user", "supersedes": None}  # fmt: skip
    (project / ".veil").mkdir()
    scope = project_scope(project)
    model = ScriptedModel([{"facts": [fact], "episodes": []}])
    with Memory(
        project / ".veil" / "memory.db", complete=model, embedder=default_embedder()
    ) as memory:
        memory.remember("I prefer small diffs.", user_id=scope)

    run_inprocess("UserPromptSubmit", payload("user_prompt_submit", project, session="old"))
    for n in range(3):
        run_inprocess("PostToolUse", payload("post_tool_use_edit", project, session="old",
                      tool_input={"new_string": f"return a + b  # {n}"}))  # fmt: skip
        run_inprocess("PostToolUseFailure", payload("post_tool_use_failure_bash", project,
                      session="old"))  # fmt: skip

    started = run_subprocess("SessionStart", payload("session_start_startup", project, "new"))
    assert (started.code, started.stdout) == (0, "")  # nothing to say at a new session's start

    asked = run_subprocess("UserPromptSubmit", payload("user_prompt_submit", project, "new"))
    check_format(asked, "UserPromptSubmit")
    context = asked.context
    # the briefing comes with the session's first prompt
    assert "<veil-memory>" in context and "The user prefers small diffs." in context
    assert "Veil records every attempt at the current task ('Make the failing test in" in context
    assert "Already tried on this goal: 6 attempts (3 fail, 3 unknown)." in context
    assert "test python -m pytest -q tests/test_calc.py: fail [fp1:" in context
    # a prompt with no record in a session that has a goal changes nothing
    other = payload("user_prompt_submit", project, "new", prompt="also tidy the README")
    assert "records every attempt" not in run_inprocess("UserPromptSubmit", other).context


def test_pre_compact_records_what_is_about_to_be_summarised(project: Path) -> None:
    transcript = project / "transcript.jsonl"
    lines = (FIXTURES / "transcript.jsonl").read_text().splitlines()
    transcript.write_text("\n".join(lines[:2]) + "\n")
    body = payload("pre_compact", project)
    first = run_subprocess("PreCompact", body)
    assert first.code == 0 and first.stdout == "" and first.stderr == ""
    transcript.write_text("\n".join(lines) + "\nnot json\n")
    assert run_inprocess("PreCompact", body).stdout == ""
    store = open_store(project / ".veil" / "context.db")
    events = store.read(project_scope(project), kinds=["claude_code.compaction"])
    store.close()
    assert [(e.payload["first_line"], e.payload["last_line"]) for e in events] == [(0, 2), (2, 4)]
    recorded = [entry for e in events for entry in e.payload["entries"]]  # type: ignore[union-attr]
    assert recorded[:3] == [json.loads(line) for line in lines]
    assert recorded[3] == {"unparsed": "not json"}
    assert events[0].payload["trigger"] == "manual"
    assert events[0].payload["custom_instructions"] == "keep the test names"
    after = run_inprocess("SessionStart", payload("session_start_compact", project))
    assert "recorded the 4 transcript entries that were summarised" in after.context
    check = subprocess.run([*VEIL, "admin", "check"], cwd=project, capture_output=True,
                           text=True, timeout=60, check=False)  # fmt: skip
    assert check.returncode == 0 and "claude_code" in check.stdout, check.stderr


def test_bad_input_never_breaks_the_session(project: Path) -> None:
    good = payload("post_tool_use_failure_bash", project)
    cases = [
        (["claude-code", "PostToolUse"], "{not json", "stdin is not JSON"),
        (["claude-code", "PostToolUse"], "[1, 2]", "not the hook's object"),
        (["claude-code", "PostToolUse"], good, "is a 'PostToolUseFailure' event"),
        (["claude-code", "Stop"], good, "unknown event 'Stop'"),
        (["cursor", "PostToolUse"], good, "unknown client 'cursor'"),
        (["claude-code"], good, "no event given"),
        ([], good, "unknown client None"),
    ]
    for args, stdin, says in cases:
        done = subprocess.run([*VEIL, "hook", *args], input=stdin, capture_output=True,
                              text=True, timeout=60, check=False, env=hook_env())  # fmt: skip
        assert done.returncode == 0 and done.stdout == "", (args, done)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("veil hook: ") and says in lines[0], lines
    (project / ".veil").mkdir()
    (project / ".veil" / "context.db").write_text("this is not a database")
    broken = run_subprocess("PostToolUseFailure", good)
    assert broken.code == 0 and broken.stdout == ""
    assert broken.stderr.startswith("veil hook: internal error, nothing recorded for this call:")
    assert len(broken.stderr.strip().splitlines()) == 1
    traced = subprocess.run([*VEIL, "--debug", "hook", "claude-code", "PostToolUseFailure"],
                            input=good, capture_output=True, text=True, timeout=60,
                            check=False, env=hook_env())  # fmt: skip
    assert traced.returncode == 0 and "Traceback" in traced.stderr


NO_NETWORK = """\
import socket

def _refuse(*args, **kwargs):
    raise OSError("network is off in this test")

socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
"""


@pytest.mark.alone  # a subprocess answering within the hook's 0.9 s deadline
def test_hooks_work_with_the_network_off_and_answer_fast(project: Path, tmp_path: Path) -> None:
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(NO_NETWORK)
    env = hook_env(PYTHONPATH=str(guard), CLAUDE_PROJECT_DIR=str(project))
    probe = subprocess.run(
        [*VEIL[:1], "-c", "import socket; socket.create_connection(('127.0.0.1', 9))"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert "network is off" in probe.stderr  # the guard is in force in the hook's interpreter
    timings: list[float] = []
    for event, body in [
        ("SessionStart", payload("session_start_startup", project)),
        ("UserPromptSubmit", payload("user_prompt_submit", project)),
        ("PostToolUseFailure", failing_test(project, 0)),
        ("PostToolUse", edit(project, 1)),
        ("PreToolUse", edit(project, 1, "PreToolUse")),
    ]:
        started = time.perf_counter()
        ran = run_subprocess(event, body, env=env)
        timings.append(time.perf_counter() - started)
        check_format(ran, event)
        assert ran.stderr == "", ran.stderr
    store = open_store(project / ".veil" / "context.db")
    kinds = [e.kind for e in store.read(project_scope(project))]
    store.close()
    assert kinds.count("convergence.attempt") == 2
    # Claude Code's default limit is 600 s (30 s for UserPromptSubmit); the install sets 10-60 s.
    assert max(timings) < 10, timings
