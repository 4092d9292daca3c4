"""AttemptLog on a real SQLite tape: goal ids stable across sessions, the record reloads in a
new session, escalations are events (and reach the harness hook), and a rebuild of the
projection from the tape gives an identical snapshot."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from veil.convergence import AttemptLog, MonitorConfig, goal_id, refine
from veil.convergence.feedback import STOPPED
from veil.convergence.goals import goal_for
from veil.convergence.monitor import Escalation
from veil.tape.sqlite import SQLiteStore
from veil.testing import FakeClock

SCOPE = "project:demo"
TASK = "Fix the crash in parse_date when the input has a timezone."
FAIL = (
    "Traceback (most recent call last):\n"
    '  File "/repo/dates.py", line {n}, in parse_date\n'
    "    return _parse(text)\n"
    "ValueError: bad offset '+{n}:00'\n"
)
CONFIG = MonitorConfig(note_after=2, demand_after=3, stop_after=4)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "tape.db", clock=clock, synchronous="normal")
    yield s
    s.close()


def log_for(
    store: SQLiteStore,
    clock: FakeClock,
    session: str,
    on_escalation: Callable[[Escalation], None] | None = None,
) -> AttemptLog:
    return AttemptLog(store, SCOPE, session, clock, config=CONFIG, on_escalation=on_escalation)


def fail_run(log: AttemptLog, n: int) -> None:
    log.record_call(
        action="run",
        target="python repro.py",
        tool_name="bash",
        arguments={"command": f"python repro.py --case {n}"},  # distinct: no stuck pattern
        output=FAIL.format(n=n),
        exit_code=1,
        files=("repro.py",),
    )


def test_goal_id_is_stable_across_whitespace_and_case() -> None:
    a = goal_id(TASK, SCOPE)
    assert a == goal_id("  fix the CRASH in parse_date\nwhen the input   has a timezone ", SCOPE)
    assert a.startswith("goal_")
    assert a != goal_id(TASK, "project:other")
    assert a != goal_id("Fix the crash in parse_time when the input has a timezone.", SCOPE)


def test_refine_adds_targets_without_changing_the_id() -> None:
    goal = goal_for(TASK, SCOPE)
    refined = refine(goal, ["dates.py", "tests/test_dates.py::test_tz", "dates.py", ""])
    assert refined.id == goal.id
    assert refined.targets == ("dates.py", "tests/test_dates.py::test_tz")
    assert refine(refined, ["dates.py"]) is refined


def test_record_detects_outcome_fingerprint_and_partial(
    store: SQLiteStore, clock: FakeClock
) -> None:
    log = log_for(store, clock, "s1")
    log.begin(TASK)
    fail_run(log, 1)
    fail_run(log, 2)
    first, second = log.attempts()
    assert first.outcome == second.outcome == "fail"
    assert first.fingerprint is not None and first.fingerprint == second.fingerprint
    assert (first.iteration, second.iteration) == (1, 2)
    for failures, expected in ((3, "fail"), (1, "partial")):
        log.record_call(
            action="test",
            target="tests/test_dates.py",
            tool_name="bash",
            arguments={"command": "pytest tests/test_dates.py"},
            output=f"FAILED tests/test_dates.py::test_tz\n= {failures} failed, 4 passed in 0.2s =",
            exit_code=1,
        )
        assert log.attempts()[-1].outcome == expected
    log.record_call(
        action="test",
        target="tests/test_dates.py",
        tool_name="bash",
        arguments={"command": "pytest tests/test_dates.py"},
        output="= 5 passed in 0.2s =",
        exit_code=0,
    )
    assert log.attempts()[-1].outcome == "pass"
    assert log.assess().circling_count == 0


def test_a_new_session_reloads_the_record_for_the_same_task(
    store: SQLiteStore, clock: FakeClock
) -> None:
    first = log_for(store, clock, "monday")
    first.begin(TASK)
    fail_run(first, 1)
    fail_run(first, 2)
    clock.advance(days=1)
    second = log_for(store, clock, "tuesday")
    goal = second.begin("  fix the crash in PARSE_DATE when the input has a timezone ")
    assert first.goal is not None and goal.id == first.goal.id
    before = second.attempts()
    assert [a.session_id for a in before] == ["monday", "monday"]
    fail_run(second, 3)
    after = second.attempts()
    assert [a.iteration for a in after] == [1, 2, 3]
    assert after[-1].session_id == "tuesday"
    history = second.history()
    attempts = history["attempts"]
    assert history["intent"] == TASK and isinstance(attempts, list) and len(attempts) == 3
    assert "Already tried on this goal: 3 attempts" in str(history["note"])


def test_escalations_are_events_and_reach_the_hook(store: SQLiteStore, clock: FakeClock) -> None:
    seen: list[Escalation] = []
    log = log_for(store, clock, "s1", on_escalation=seen.append)
    log.begin(TASK)
    for n in range(5):  # 1 progress (new failure) then 4 circling
        fail_run(log, n)
    assert [e.level for e in seen] == [1, 2, 3]
    assert [e.level for e in log.escalations()] == [1, 2, 3]
    assert log.assess().level == 3
    assert log.note().startswith(f"{STOPPED} Stopped: 5 attempts")
    assert len(store.read(SCOPE, kinds=["convergence.escalated"])) == 3


def test_should_block_is_bound_to_the_current_goal(store: SQLiteStore, clock: FakeClock) -> None:
    log = log_for(store, clock, "s1")
    log.begin(TASK)
    edit = {"path": "dates.py", "old": "a", "new": "b"}
    for n in range(4):
        log.record_call(
            action="edit",
            target="dates.py",
            tool_name="edit",
            arguments=edit,
            output="ok",
            files=("dates.py",),
        )
        fail_run(log, n)
    assert log.assess().level >= 2
    assert log.should_block("edit", dict(reversed(list(edit.items())))) is not None
    assert log.should_block("edit", {**edit, "new": "c"}) is None


def test_rebuild_gives_an_identical_snapshot(store: SQLiteStore, clock: FakeClock) -> None:
    log = log_for(store, clock, "s1")
    log.begin(TASK)
    for n in range(5):
        clock.advance(minutes=1)
        fail_run(log, n)
    before = store.snapshot()
    assert any(rows for name, rows in before.items() if "conv_attempts" in name)
    store.rebuild()
    assert store.snapshot() == before


def test_record_without_a_goal_is_an_error(store: SQLiteStore, clock: FakeClock) -> None:
    log = log_for(store, clock, "s1")
    with pytest.raises(ValueError, match="begin"):
        log.attempts()
