"""How recall ranks what its queries found. Pure: rows and ranked id lists in, an order out.

:class:`~veil.memory.recall.Recaller` runs the queries (:mod:`veil.memory.recall`); here are the
rules it ranks by, each deterministic (the same rows give the same order):

- how many graph candidates a token budget is worth reading (:func:`candidate_cap`);
- weighted reciprocal-rank fusion of the ranked lists (:func:`fuse`);
- which facts are trusted and which are claims, now or as of a time (:func:`trusted_and_claims`);
- procedural facts rank by how they worked out (:func:`procedural_factor`);
- a share of the slots for days the relevance head does not cover (:func:`with_coverage`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import cast

from veil.memory.model import Fact, FactStatus
from veil.memory.rows import (
    FACT_ID,
    FACT_LAST_OUTCOME,
    FACT_TIMES_USED,
    FACT_VALID_FROM,
    FACT_VALID_TO,
)
from veil.tape import JSONValue

TOKENS_PER_LINE = 20
"""About what one rendered fact line costs; sizes the candidate lists to the budget."""
MAX_GRAPH_FACTS = 200

Values = tuple[JSONValue, ...]
"""A fact or episode row as ``fetch_values`` returns it (columns: :mod:`veil.memory.rows`)."""


def candidate_cap(token_budget: int) -> int:
    """Graph candidates worth reading for ``token_budget``: about twice what it can render,
    at most :data:`MAX_GRAPH_FACTS`."""
    return max(4, min(MAX_GRAPH_FACTS, 2 * (token_budget // TOKENS_PER_LINE)))


def unique_facts(rows: Iterable[Values]) -> list[Values]:
    """Rows in order, the first of each fact id."""
    seen: dict[str, Values] = {}
    for row in rows:
        seen.setdefault(str(row[FACT_ID]), row)
    return list(seen.values())


def fuse(rankings: Iterable[tuple[float, Sequence[str]]], k: int) -> dict[str, float]:
    """Weighted reciprocal-rank fusion of ranked id lists."""
    scores: dict[str, float] = {}
    for weight, ids in rankings:
        for rank, doc in enumerate(dict.fromkeys(ids)):
            scores[doc] = scores.get(doc, 0.0) + weight / (k + rank + 1)
    return scores


def valid_at(fact: Fact, when: datetime) -> bool:
    return fact.valid_from <= when and (fact.valid_to is None or fact.valid_to > when)


def procedural_factor(row: Values) -> float:
    """Procedural facts rank by how they worked out: used often and last successful first."""
    factor = 1.0 + 0.1 * math.log1p(int(cast(int, row[FACT_TIMES_USED] or 0)))
    if row[FACT_LAST_OUTCOME] is False:
        factor *= 0.5
    return factor


def with_coverage(
    ranked: Sequence[str], day: Callable[[str], str], share: float, slots: int
) -> list[str]:
    """Reserve ``share`` of the ``slots`` for days (``day(id)``) not yet represented by the
    relevance head."""
    if share <= 0 or slots <= 0:
        return list(ranked)
    head_size = max(1, math.ceil(slots * (1 - share)))
    head = list(ranked[:head_size])
    days = {day(i) for i in head}
    rest = list(ranked[head_size:])
    fresh: list[str] = []
    for i in rest:
        if day(i) not in days:
            fresh.append(i)
            days.add(day(i))
    chosen = set(fresh)
    return [*head, *fresh, *(i for i in rest if i not in chosen)]


def trusted_and_claims(
    rows: Mapping[str, Values], status: Mapping[str, FactStatus], when: str, as_of: object
) -> tuple[list[str], list[str]]:
    """Ids of the trusted facts to rank and of the claims (quarantined) at ``when`` (stored
    time text); with ``as_of``, what was valid then."""
    trusted: list[str] = []
    claims: list[str] = []
    for fid, row in rows.items():
        state = status[fid]
        valid_from = str(row[FACT_VALID_FROM])
        if state == "quarantined":
            if as_of is None or valid_from <= when:
                claims.append(fid)
            continue
        if as_of is not None:
            valid_to = row[FACT_VALID_TO]
            if state in ("disputed", "lapsed") or valid_from > when:
                continue
            if valid_to is not None and str(valid_to) <= when:
                continue
            trusted.append(fid)
        elif state in ("current", "stale"):
            trusted.append(fid)
    return trusted, claims
