"""Projection rows as values. Status that depends on time is computed here, at read time.

Rows are read by position (``Store.fetch_values``, in the table's column order) and built into
values by one function per kind; the dict forms (``fetch``) go through the same functions. A
fact row is decoded by :data:`~veil.memory.records.FACT_CODEC` (by position or by name) and
made a :class:`Fact` by :func:`fact_of`; the positions callers use follow from the record's
fields, never from a list of names written out here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import cast

from veil.clock import format_time, parse_time
from veil.memory.config import MemoryConfig
from veil.memory.model import Episode, EpisodeKind, Fact, FactState, FactStatus, Provenance
from veil.memory.projection import EPISODE_COLUMNS, FACT_FIELDS
from veil.memory.records import FACT_CODEC, FactRecord
from veil.tape import JSONValue, Row

FACT_VALUES = ("scope", *FACT_FIELDS)
"""The order of a ``mem_facts`` row from ``Store.fetch_values``: ``scope``, then
:class:`~veil.memory.records.FactRecord`'s fields (its codec's columns), then ``recorded_seq``."""
EPISODE_VALUES = ("scope", *(c.name for c in EPISODE_COLUMNS))
"""The order of a ``mem_episodes`` row from ``Store.fetch_values``."""
_F = FACT_CODEC.positions(offset=1)
_E = {name: i for i, name in enumerate(EPISODE_VALUES)}
FACT_ID = _F["fact_id"]
"""Position of ``fact_id`` in a fact row (the positions follow from the record's fields)."""
FACT_OBJECT_KEY = _F["object_key"]
FACT_LAST_CONFIRMED = _F["last_confirmed_at"]
FACT_STATE = _F["state"]
FACT_TRUST = _F["trust"]
FACT_RELATION = _F["relation"]
FACT_VALID_FROM = _F["valid_from"]
FACT_VALID_TO = _F["valid_to"]
FACT_TIMES_USED = _F["times_used"]
FACT_LAST_OUTCOME = _F["last_outcome"]
_VOLATILITY = _F["volatility"]
EPISODE_ID = _E["episode_id"]
EPISODE_CONSOLIDATED = _E["consolidated_into"]
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
    state = cast(FactState, v[FACT_STATE])
    if state == "current":
        volatility = str(v[_VOLATILITY])
        limit = stale.get(volatility)
        if limit is not None and str(v[FACT_LAST_CONFIRMED]) < limit:
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
    from the clock (stale/lapsed) unless given (from :func:`status_of` at the same ``now``)."""
    return fact_of(FACT_CODEC.decode_values(v, offset=1), str(v[0]), now, config, status=status)


def fact_from_row(row: Row, now: datetime, config: MemoryConfig) -> Fact:
    """A projection row (a dict from ``Store.fetch``) as a :class:`Fact`."""
    return fact_of(FACT_CODEC.decode(row), str(row["scope"]), now, config)


def fact_of(
    record: FactRecord,
    user_id: str,
    now: datetime,
    config: MemoryConfig,
    *,
    status: FactStatus | None = None,
) -> Fact:
    """The one place a recorded fact becomes a :class:`Fact`: its provenance gathered, its
    times parsed, its status computed from the clock (stale/lapsed) unless given."""
    confirmed = parse_time(record.last_confirmed_at)
    if status is None:
        status = record.state
        if record.state == "current":
            lifetime = config.lifetimes_days.get(record.volatility)
            if lifetime is not None and (now - confirmed).total_seconds() > lifetime * 86400:
                transient = record.volatility in ("transient", "ephemeral")
                status = "lapsed" if transient else "stale"
    return Fact(
        id=record.fact_id,
        user_id=user_id,
        subject=record.subject,
        relation=record.relation,
        object=record.object,
        statement=record.statement,
        volatility=record.volatility,
        valid_from=parse_time(record.valid_from),
        valid_to=parse_time(record.valid_to) if record.valid_to else None,
        status=status,
        superseded_by=record.superseded_by,
        reason=record.reason,
        provenance=Provenance(
            author_of_evidence=record.author,
            disclosure=record.disclosure,
            event_id=record.event_id,
            derived_from=record.derived_from,
            session_id=record.session_id,
            tool_call_id=record.tool_call_id,
            source=record.source,
            claimant=record.claimant,
        ),
        trust=record.trust,
        last_confirmed_at=confirmed,
        flags=record.flags,
        contested_with=record.contested_with,
        relation_class=record.relation_class,
        times_used=record.times_used,
        last_outcome=record.last_outcome,
    )


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
