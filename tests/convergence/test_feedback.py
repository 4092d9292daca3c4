"""The one feedback text of every surface (the harness, Claude Code's and Codex's hooks): what
it says at each level, and that the attempt log gives it."""

from __future__ import annotations

from itertools import count

from veil.convergence.attempt import Attempt, call_digest
from veil.convergence.feedback import STOPPED, feedback
from veil.convergence.monitor import already_tried_note, different_approach_note, summary

TASK = "make test_total pass"
_ids = count(1)


def failed() -> Attempt:
    n = next(_ids)
    return Attempt(
        id=f"att_{n}",
        goal_id="goal_x",
        iteration=n,
        action="test",
        target="tests/test_total.py",
        outcome="fail",
        evidence="FAILED test_total: assert 4 == 5",
        fingerprint="fp1:aaaa",
        session_id="s1",
        tool_name="bash",
        call_digest=call_digest("bash", f"pytest -k t{n}"),
        output_digest=f"out{n}",
        files=("calc.py",),
    )


def test_level_zero_says_nothing_unless_a_recap_is_asked_for() -> None:
    attempts = [failed(), failed()]
    assert feedback(TASK, 0, attempts) == ""
    assert feedback(TASK, 0, [], recap=True) == ""
    recap = feedback(TASK, 0, attempts, recap=True)
    assert recap.splitlines()[0] == (
        "Veil records every attempt at the current task ('make test_total pass'); "
        "it is at convergence level 0 of 3."
    )
    assert recap.endswith(already_tried_note(attempts))


def test_each_level_adds_what_the_monitor_says() -> None:
    attempts = [failed() for _ in range(5)]
    one = feedback(TASK, 1, attempts)
    assert "level 1 of 3" in one and one.endswith(already_tried_note(attempts))
    two = feedback(TASK, 2, attempts)
    assert "level 2 of 3" in two
    assert two.endswith(already_tried_note(attempts) + "\n\n" + different_approach_note(attempts))
    assert feedback(TASK, 1, attempts, recap=True) == one  # a recap changes nothing above 0
    three = feedback(TASK, 3, attempts)
    assert three == f"{STOPPED} {summary(attempts)}"


def test_a_level_two_without_attempts_still_demands_a_different_approach() -> None:
    text = feedback(TASK, 2, [])  # the monologue pattern: no attempt, level 2
    assert "level 2 of 3" in text and "You are circling" in text and "\n\n" not in text


def test_a_long_task_is_quoted_in_part() -> None:
    text = feedback("x" * 1000, 1, [failed()])
    assert f"'{'x' * 200}'" in text and "x" * 201 not in text
