"""Projection rows as values. Status that depends on time is computed here, at read time.

Rows are read by position (``Store.fetch_values``, in the table's column order) and built into
values by one function per kind; the dict forms (``fetch``) go through the same functions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, cast

from veil.clock import format_time, parse_time
from veil.memory.config import MemoryConfig
from veil.memory.model import (
    Author,
    Episode,
    EpisodeKind,
    Fact,
    FactState,
    FactStatus,
    Provenance,
    Volatility,
)
from veil.memory.projection import EPISODE_COLUMNS, FACT_FIELDS
from veil.tape import JSONValue, Row

FACT_VALUES = ("scope", *FACT_FIELDS)
"""The order of a ``mem_facts`` row from ``Store.fetch_values``."""
EPISODE_VALUES = ("scope", *(c.name for c in EPISODE_COLUMNS))
"""The order of a ``mem_episodes`` row from ``Store.fetch_values``."""
_F = {name: i for i, name in enumerate(FACT_VALUES)}
_E = {name: i for i, name in enumerate(EPISODE_VALUES)}
(
    _SCOPE,
    _FACT_ID,
    _SUBJECT,
    _RELATION,
    _RELATION_CLASS,
    _OBJECT,
    _STATEMENT,
    _VOLATILITY,
    _VALID_FROM,
    _VALID_TO,
    _STATE,
    _SUPERSEDED_BY,
    _REASON,
    _AUTHOR,
    _DISCLOSURE,
    _CLAIMANT,
    _EVENT_ID,
    _DERIVED_FROM,
    _SESSION_ID,
    _TOOL_CALL_ID,
    _SOURCE,
    _TRUST,
    _LAST_CONFIRMED_AT,
    _FLAGS,
    _CONTESTED_WITH,
    _TIMES_USED,
    _LAST_OUTCOME,
) = (
    _F[n]
    for n in (
        "scope",
        "fact_id",
        "subject",
        "relation",
        "relation_class",
        "object",
        "statement",
        "volatility",
        "valid_from",
        "valid_to",
        "state",
        "superseded_by",
        "reason",
        "author",
        "disclosure",
        "claimant",
        "event_id",
        "derived_from",
        "session_id",
        "tool_call_id",
        "source",
        "trust",
        "last_confirmed_at",
        "flags",
        "contested_with",
        "times_used",
        "last_outcome",
    )
)
FACT_ID = _FACT_ID
"""Position of ``fact_id`` in a fact row."""
FACT_OBJECT_KEY = _F["object_key"]
FACT_LAST_CONFIRMED = _LAST_CONFIRMED_AT
EPISODE_ID = _E["episode_id"]
EPISODE_CONSOLIDATED = _E["consolidated_into"]


FACT_STATE = _STATE
FACT_TRUST = _TRUST
FACT_RELATION = _RELATION
FACT_VALID_FROM = _VALID_FROM
FACT_VALID_TO = _VALID_TO
FACT_TIMES_USED = _TIMES_USED
FACT_LAST_OUTCOME = _LAST_OUTCOME
EPISODE_AT = _E["at"]


def stale_before(now: datetime, config: MemoryConfig) -> dict[str, str]:
    """Per volatility with a lifetime: the confirmation time (as stored text) before which a
    current fact of that volatility is stale or lapsed at ``now``."""
    return {
        volatility: format_time(now - timedelta(days=lifetime))
        for volatility, lifetime in config.lifetimes_days.items()
        if lifetime is not None
    }


def status_of(v: Sequence[JSONValue], stale: Mapping[str, str]) -> FactStatus:
    """A fact row's status at the time ``stale`` was computed for (:func:`stale_before`),
    without building the :class:`Fact`: stored times are fixed-width UTC text, so comparing
    the text compares the times."""
    state = cast(FactState, v[_STATE])
    if state == "current":
        volatility = str(v[_VOLATILITY])
        limit = stale.get(volatility)
        if limit is not None and str(v[_LAST_CONFIRMED_AT]) < limit:
            return "lapsed" if volatility in ("transient", "ephemeral") else "stale"
    return state


def fact_from_values(
    v: Sequence[JSONValue],
    now: datetime,
    config: MemoryConfig,
    *,
    status: FactStatus | None = None,
) -> Fact:
    """A fact row by position (:data:`FACT_VALUES`) as a :class:`Fact`, its status computed
    from the clock (stale/lapsed) unless given (from :func:`status_of` at the same ``now``).
    The one place fact rows become values."""
    volatility = cast(Volatility, v[_VOLATILITY])
    confirmed = parse_time(str(v[_LAST_CONFIRMED_AT]))
    if status is None:
        state = cast(FactState, v[_STATE])
        status = state
        if state == "current":
            lifetime = config.lifetimes_days.get(volatility)
            if lifetime is not None and (now - confirmed).total_seconds() > lifetime * 86400:
                status = "lapsed" if volatility in ("transient", "ephemeral") else "stale"
    valid_to = v[_VALID_TO]
    return Fact(
        id=str(v[_FACT_ID]),
        user_id=str(v[_SCOPE]),
        subject=str(v[_SUBJECT]),
        relation=str(v[_RELATION]),
        object=str(v[_OBJECT]),
        statement=str(v[_STATEMENT]),
        volatility=volatility,
        valid_from=parse_time(str(v[_VALID_FROM])),
        valid_to=parse_time(str(valid_to)) if valid_to else None,
        status=status,
        superseded_by=cast(str | None, v[_SUPERSEDED_BY]),
        reason=cast(str | None, v[_REASON]),
        provenance=Provenance(
            author_of_evidence=cast(Author, v[_AUTHOR]),
            disclosure=cast(Any, v[_DISCLOSURE]),
            event_id=str(v[_EVENT_ID]),
            derived_from=tuple(cast(list[str], v[_DERIVED_FROM] or [])),
            session_id=cast(str | None, v[_SESSION_ID]),
            tool_call_id=cast(str | None, v[_TOOL_CALL_ID]),
            source=cast(str | None, v[_SOURCE]),
            claimant=str(v[_CLAIMANT]),
        ),
        trust=int(cast(int, v[_TRUST])),
        last_confirmed_at=confirmed,
        flags=tuple(cast(list[str], v[_FLAGS] or [])),
        contested_with=tuple(cast(list[str], v[_CONTESTED_WITH] or [])),
        relation_class=cast(Any, v[_RELATION_CLASS]),
        times_used=int(cast(int, v[_TIMES_USED] or 0)),
        last_outcome=None if v[_LAST_OUTCOME] is None else bool(v[_LAST_OUTCOME]),
    )


def fact_from_row(row: Row, now: datetime, config: MemoryConfig) -> Fact:
    """A projection row (a dict from ``Store.fetch``) as a :class:`Fact`."""
    return fact_from_values(tuple(row.get(n) for n in FACT_VALUES), now, config)


def episode_from_values(v: Sequence[JSONValue]) -> Episode:
    """An episode row by position (:data:`EPISODE_VALUES`) as an :class:`Episode`."""
    return Episode(
        id=str(v[_E["episode_id"]]),
        user_id=str(v[_E["scope"]]),
        kind=cast(EpisodeKind, v[_E["kind"]]),
        text=str(v[_E["text"]]),
        at=parse_time(str(v[_E["at"]])),
        due=cast(str | None, v[_E["due"]]),
        event_id=str(v[_E["event_id"]]),
        session_id=cast(str | None, v[_E["session_id"]]),
    )


def episode_from_row(row: Row) -> Episode:
    return episode_from_values(tuple(row.get(n) for n in EPISODE_VALUES))
