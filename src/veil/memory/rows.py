"""Projection rows as values. Status that depends on time is computed here, at read time."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from veil.clock import parse_time
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
from veil.tape import Row


def fact_from_row(row: Row, now: datetime, config: MemoryConfig) -> Fact:
    """A projection row as a :class:`Fact`, its status computed from the clock (stale/lapsed)."""
    state = cast(FactState, row["state"])
    volatility = cast(Volatility, row["volatility"])
    confirmed = parse_time(str(row["last_confirmed_at"]))
    status: FactStatus = state
    if state == "current":
        lifetime = config.lifetimes_days.get(volatility)
        if lifetime is not None and (now - confirmed).total_seconds() > lifetime * 86400:
            status = "lapsed" if volatility in ("transient", "ephemeral") else "stale"
    valid_to = row["valid_to"]
    return Fact(
        id=str(row["fact_id"]),
        user_id=str(row["scope"]),
        subject=str(row["subject"]),
        relation=str(row["relation"]),
        object=str(row["object"]),
        statement=str(row["statement"]),
        volatility=volatility,
        valid_from=parse_time(str(row["valid_from"])),
        valid_to=parse_time(str(valid_to)) if valid_to else None,
        status=status,
        superseded_by=cast(str | None, row["superseded_by"]),
        reason=cast(str | None, row["reason"]),
        provenance=Provenance(
            author_of_evidence=cast(Author, row["author"]),
            disclosure=cast(Any, row["disclosure"]),
            event_id=str(row["event_id"]),
            derived_from=tuple(cast(list[str], row["derived_from"] or [])),
            session_id=cast(str | None, row["session_id"]),
            tool_call_id=cast(str | None, row["tool_call_id"]),
            source=cast(str | None, row["source"]),
            claimant=str(row["claimant"]),
        ),
        trust=int(cast(int, row["trust"])),
        last_confirmed_at=confirmed,
        flags=tuple(cast(list[str], row["flags"] or [])),
        contested_with=tuple(cast(list[str], row["contested_with"] or [])),
        relation_class=cast(Any, row["relation_class"]),
        times_used=int(cast(int, row["times_used"] or 0)),
        last_outcome=cast(bool | None, row["last_outcome"]),
    )


# ---- explicit feedback ----------------------------------------------------------------


def episode_from_row(row: Row) -> Episode:
    return Episode(
        id=str(row["episode_id"]),
        user_id=str(row["scope"]),
        kind=cast(EpisodeKind, row["kind"]),
        text=str(row["text"]),
        at=parse_time(str(row["at"])),
        due=cast(str | None, row["due"]),
        event_id=str(row["event_id"]),
        session_id=cast(str | None, row["session_id"]),
    )
