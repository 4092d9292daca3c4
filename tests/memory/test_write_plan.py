"""The plan step of ``remember`` is pure: the reads it needs are named by ``queries``, made
before, and passed in; the plan touches neither the store nor the clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn, cast

import pytest

from veil.memory import MemoryConfig
from veil.memory.extraction import EpisodeItem, FactItem
from veil.memory.supersession import CurrentFact
from veil.memory.writing import Current, Extracted, Prepared, Query, plan, queries
from veil.tape import Event
from veil.tape.recorder import Recorder

AT = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
TEXT = "I switched from vim to emacs."


class Untouchable:
    """A store and a clock that fail when used at all."""

    def __getattr__(self, name: str) -> NoReturn:
        raise AssertionError(f"the plan used {name!r}")


def recorder() -> Recorder:
    untouchable: Any = Untouchable()
    return Recorder(untouchable, "u1", "library", untouchable)


def prepared() -> Prepared:
    evidence = Event("ev_1", "u1", "memory.evidence", AT, "user", {"text": TEXT})
    return Prepared(evidence, TEXT, "user", (), [], (("user", TEXT),), frozenset())


def prefers(value: str) -> FactItem:
    return FactItem("user", "prefers", value, f"The user prefers {value}.", "durable", "user", None)


def test_a_new_value_supersedes_the_current_one_without_a_read() -> None:
    config = MemoryConfig()
    items = (prefers("emacs"),)
    assert queries(prepared(), items, config) == [Query("user", "prefers")]
    old = CurrentFact("f_old", "vim", 3, AT - timedelta(days=30))
    current = Current({Query("user", "prefers"): (old,)}, {"f_old": "vim"})
    episode = EpisodeItem("interaction", "The user switched to emacs.", None)
    extracted = Extracted(1, facts=items, episodes=(episode,))
    planned = plan(prepared(), extracted, current, config, recorder())
    kinds = [(e.kind, e.actor, e.at, e.provenance) for e in planned.events]
    by_evidence = {"evidence_id": "ev_1"}
    assert kinds == [
        ("memory.fact", "user", AT, by_evidence),
        ("memory.superseded", "user", AT, by_evidence),
        ("memory.episode", "user", AT, by_evidence),
        ("memory.extraction", "veil", AT, {}),
    ]
    fact = cast(dict[str, Any], planned.events[0].payload["fact"])
    assert (fact["object"], fact["state"]) == ("emacs", "current")
    assert planned.report.superseded == ("f_old",) and len(planned.report.facts) == 1
    assert planned.events[1].payload["reason"] == "updated"


def test_a_failed_extraction_plans_only_its_record() -> None:
    planned = plan(
        prepared(), Extracted(2, "model call failed: boom"), Current({}), MemoryConfig(), recorder()
    )
    (record,) = planned.events
    assert record.kind == "memory.extraction" and record.payload["status"] == "failed"
    assert planned.report.error == "model call failed: boom" and planned.report.llm_calls == 2


def test_the_plan_reads_only_what_queries_named() -> None:
    with pytest.raises(KeyError):
        plan(
            prepared(),
            Extracted(1, facts=(prefers("emacs"),)),
            Current({}),
            MemoryConfig(),
            recorder(),
        )
