"""The monitor: progress vs circling, the reset on pass, escalation at the thresholds, the
level-2 block of identical failed edits, and the level-3 hand-back."""

from __future__ import annotations

from dataclasses import replace
from itertools import count

import pytest

from veil.convergence.attempt import Action, Attempt, Outcome, call_digest
from veil.convergence.monitor import (
    MonitorConfig,
    already_tried_note,
    assess,
    different_approach_note,
    should_block,
    summary,
)

CONFIG = MonitorConfig(note_after=2, demand_after=3, stop_after=5)
_ids = count(1)


def att(
    action: Action = "test",
    outcome: Outcome = "fail",
    fp: str | None = "fp1:aaaa",
    files: tuple[str, ...] = ("a.py",),
    target: str = "tests/test_a.py",
    args: str | None = None,
    evidence: str = "E AssertionError",
) -> Attempt:
    n = next(_ids)
    return Attempt(
        id=f"att_{n}",
        goal_id="goal_x",
        iteration=n,
        action=action,
        target=target,
        outcome=outcome,
        evidence=evidence,
        fingerprint=fp,
        session_id="s1",
        tool_name="bash",
        # distinct calls by default, so the stuck patterns stay out of the way
        call_digest=call_digest("bash", args if args is not None else f"pytest -k t{n}"),
        output_digest=f"out{n}",
        files=files,
    )


def renumber(attempts: list[Attempt]) -> list[Attempt]:
    return [replace(a, iteration=i + 1) for i, a in enumerate(attempts)]


def test_same_failure_again_is_circling() -> None:
    attempts = [att(), att(), att()]
    result = assess(attempts, CONFIG)
    # the first is progress (new fingerprint, new file), the next two circle
    assert result.circling_count == 2 and result.level == 1
    assert result.fingerprints == ("fp1:aaaa",)


def test_pass_resets_the_count() -> None:
    attempts = [att(), att(), att(), att()]
    assert assess(attempts, CONFIG).circling_count == 3
    attempts.append(att(outcome="pass", fp=None))
    result = assess(attempts, CONFIG)
    assert result.circling_count == 0 and result.level == 0
    attempts.append(att())
    assert assess(attempts, CONFIG).circling_count == 1


def test_partial_counts_as_progress() -> None:
    attempts = [att(), att(), att(outcome="partial")]
    assert assess(attempts, CONFIG).circling_count == 1


def test_new_fingerprint_counts_as_progress() -> None:
    attempts = [att(), att(), att(fp="fp1:bbbb")]
    assert assess(attempts, CONFIG).circling_count == 1


def test_different_file_counts_as_progress() -> None:
    attempts = [att(), att(), att(action="edit", outcome="unknown", fp=None, files=("b.py",))]
    assert assess(attempts, CONFIG).circling_count == 1
    # the same file again does not
    attempts.append(att(action="edit", outcome="unknown", fp=None, files=("b.py",)))
    assert assess(attempts, CONFIG).circling_count == 2


def test_successful_read_only_commands_are_neutral() -> None:
    look = att(action="command", outcome="pass", fp=None, files=(), target="cat a.py")
    attempts = [att(), att(), look]
    assert assess(attempts, CONFIG).circling_count == 1
    counting = replace(CONFIG, count_neutral=True)
    assert assess(attempts, counting).circling_count == 2


def test_a_command_that_passes_after_failing_resets_the_count() -> None:
    """The same command line failing, then passing, is a check that passed: the goal (or a
    step of it) is achieved, and the count starts again."""
    run = "python repro.py"
    failing = [att(action="command", target=run, fp="fp9:cccc") for _ in range(4)]
    assert assess(failing, CONFIG).level == 2
    passed = att(action="command", outcome="pass", fp=None, target=run)
    after = assess([*failing, passed], CONFIG)
    assert (after.circling_count, after.level) == (0, 0)
    # A different command passing says nothing about the failing one.
    other = att(action="command", outcome="pass", fp=None, target="ls")
    assert assess([*failing, other], CONFIG).circling_count == 3


def test_five_runs_of_a_task_that_each_end_passing_start_at_level_0() -> None:
    """Each run: the check fails, an edit, the check passes. The log spans the runs (one goal),
    and a sixth run must start at level 0, told nothing about circling."""
    attempts: list[Attempt] = []
    for _ in range(5):
        attempts += [
            att(action="command", target="make check", fp="fp7:dddd"),
            att(action="edit", outcome="unknown", fp=None, files=("a.py",)),
            att(action="command", outcome="pass", fp=None, target="make check"),
        ]
    result = assess(renumber(attempts), CONFIG)
    assert (result.level, result.circling_count) == (0, 0)


@pytest.mark.parametrize(("circling", "level"), [(1, 0), (2, 1), (3, 2), (4, 2), (5, 3)])
def test_levels_at_the_thresholds(circling: int, level: int) -> None:
    attempts = [att() for _ in range(circling + 1)]  # the first one is progress
    result = assess(attempts, CONFIG)
    assert result.circling_count == circling and result.level == level
    if level:
        assert any(">= " in r for r in result.reasons)


def test_config_is_validated() -> None:
    with pytest.raises(ValueError, match="thresholds"):
        MonitorConfig(note_after=3, demand_after=2, stop_after=5)


def edit_then_test(args: str) -> list[Attempt]:
    return [
        att(action="edit", outcome="unknown", fp=None, files=("a.py",), target="a.py", args=args),
        att(),
    ]


def test_level_2_blocks_an_identical_rerun_of_a_failed_edit_only() -> None:
    fix = "sed -i 's/x/y/' a.py"
    attempts = renumber([*edit_then_test(fix), *edit_then_test(fix), att(), att()])
    assert assess(attempts, CONFIG).level >= 2
    reason = should_block("bash", fix, attempts, CONFIG)
    assert reason is not None and "a.py" in reason and "different approach" in reason
    assert should_block("bash", "sed -i 's/x/z/' a.py", attempts, CONFIG) is None
    assert should_block("bash", "pytest tests/test_a.py", attempts, CONFIG) is None


def test_no_block_below_level_2() -> None:
    fix = "sed -i 's/x/y/' a.py"
    attempts = edit_then_test(fix)
    assert assess(attempts, CONFIG).level < 2
    assert should_block("bash", fix, attempts, CONFIG) is None


def test_an_edit_followed_by_a_pass_is_not_blocked() -> None:
    fix = "sed -i 's/x/y/' a.py"
    attempts = [
        *edit_then_test("other"),
        att(action="edit", outcome="unknown", fp=None, target="a.py", args=fix),
        att(outcome="pass", fp=None),
        att(),
        att(),
        att(),
    ]
    assert assess(attempts, CONFIG).level >= 2
    assert should_block("bash", fix, attempts, CONFIG) is None


def test_arguments_are_compared_canonically() -> None:
    args = {"path": "a.py", "old": "x", "new": "y"}
    first = att(action="edit", outcome="fail", fp=None, target="a.py")
    first = replace(first, tool_name="edit", call_digest=call_digest("edit", args))
    attempts = [first, att(), att(), att(), att()]
    assert assess(attempts, CONFIG).level >= 2
    reordered = {"new": "y", "old": "x", "path": "a.py"}
    assert should_block("edit", reordered, attempts, CONFIG) is not None


def test_notes_and_level_3_summary() -> None:
    first = att(fp="fp1:1111", evidence="E KeyError: 1")
    attempts = renumber([first] + [att() for _ in range(6)])
    assert assess(attempts, CONFIG).level == 3
    note = already_tried_note(attempts)
    assert note.startswith("Already tried on this goal: 7 attempts (7 fail)")
    assert "fp1:aaaa x6" in note
    demand = different_approach_note(attempts)
    assert "fp1:1111" in demand and "fp1:aaaa" in demand
    text = summary(attempts)
    assert text.startswith("Stopped: 7 attempts on this goal over 1 session(s)")
    assert "Files touched: a.py" in text and "fp1:aaaa x6" in text
    assert "Over to you" in text
    assert already_tried_note([]) == "" and "No attempts" in summary([])


def test_stuck_pattern_raises_to_level_2() -> None:
    same = [
        replace(att(action="run", fp=None, files=()), call_digest="c", output_digest="o")
        for _ in range(4)
    ]
    result = assess(same, MonitorConfig(note_after=10, demand_after=10, stop_after=10))
    assert result.level == 2 and "repeated_action_observation" in result.stuck_patterns
