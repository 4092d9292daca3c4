"""Recall's ranking rules (``veil.memory.ranking``): pure, deterministic orders over ids and rows.
Recall as a whole is tested through the public API in test_recall.py."""

from __future__ import annotations

from typing import cast

from veil.memory.model import FactStatus
from veil.memory.ranking import (
    MAX_GRAPH_FACTS,
    Values,
    candidate_cap,
    fuse,
    procedural_factor,
    trusted_and_claims,
    unique_facts,
    with_coverage,
)
from veil.memory.rows import FACT_VALUES


def row(fact_id: str, **values: object) -> Values:
    """A ``mem_facts`` row as ``fetch_values`` returns it; unnamed columns are None."""
    named: dict[str, object] = {"fact_id": fact_id, **values}
    return cast(Values, tuple(named.get(name) for name in FACT_VALUES))


def test_fusion_sums_weighted_reciprocal_ranks_and_counts_an_id_once_per_list() -> None:
    scores = fuse([(1.0, ["a", "b", "a"]), (2.0, ["b"])], k=60)
    assert scores == {"a": 1 / 61, "b": 1 / 62 + 2 / 61}
    assert fuse([], k=60) == {}


def test_the_candidate_cap_follows_the_budget_within_its_bounds() -> None:
    assert candidate_cap(0) == 4
    assert candidate_cap(400) == 40
    assert candidate_cap(10**9) == MAX_GRAPH_FACTS


def test_coverage_reserves_slots_for_days_the_head_does_not_cover() -> None:
    day = {"a": "d1", "b": "d1", "c": "d1", "d": "d2", "e": "d3"}.__getitem__
    assert with_coverage(["a", "b", "c", "d", "e"], day, share=0.5, slots=4) == [
        "a",
        "b",
        "d",
        "e",
        "c",
    ]
    assert with_coverage(["a", "b"], day, share=0.0, slots=4) == ["a", "b"]


def test_rows_are_unique_by_fact_id_first_one_kept() -> None:
    first, again, other = row("f1", statement="x"), row("f1", statement="y"), row("f2")
    assert unique_facts([first, again, other]) == [first, other]


def test_a_procedural_fact_that_failed_last_ranks_lower() -> None:
    used = row("f1", times_used=3, last_outcome=True)
    failed = row("f2", times_used=3, last_outcome=False)
    assert procedural_factor(row("f0")) == 1.0
    assert procedural_factor(failed) == procedural_factor(used) / 2


def test_claims_are_kept_apart_and_as_of_reads_what_was_valid_then() -> None:
    rows = {
        "now": row("now", valid_from="2026-01-01T00:00:00Z"),
        "ended": row("ended", valid_from="2025-01-01T00:00:00Z", valid_to="2025-06-01T00:00:00Z"),
        "claim": row("claim", valid_from="2025-01-01T00:00:00Z"),
        "stale": row("stale", valid_from="2025-01-01T00:00:00Z"),
    }
    status: dict[str, FactStatus] = {
        "now": "current",
        "ended": "superseded",
        "claim": "quarantined",
        "stale": "stale",
    }
    assert trusted_and_claims(rows, status, "2026-02-01T00:00:00Z", None) == (
        ["now", "stale"],
        ["claim"],
    )
    assert trusted_and_claims(rows, status, "2025-03-01T00:00:00Z", object()) == (
        ["ended", "stale"],
        ["claim"],
    )
