"""The long-term memory's event kinds, and the one builder of each.

Every ``memory.*`` and ``audit.op`` event the memory appends is built here, through the
:class:`~veil.tape.recorder.Recorder` of the writer that decides it: the recorder gives scope,
actor, provenance and id, the builder the kind and the payload. :mod:`veil.memory.projection`
reads these payloads; :mod:`veil.memory.portability` checks them on import;
docs/export-format.md documents them.

``at`` is when the event happened: the evidence's time for everything an extraction decides,
the time a ``maintain`` ran for what it compiles; builders without it take the recorder's clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import cast

from veil.clock import format_time
from veil.memory.model import Author, InvalidItem
from veil.tape import Event, JSONValue, new_id
from veil.tape.recorder import Recorder


def evidence(
    rec: Recorder,
    *,
    text: str,
    roles: Sequence[tuple[Author, str]],
    derived_from: Sequence[str],
    at: datetime,
) -> Event:
    """``memory.evidence``: what the caller said, recorded before anything is decided. Its
    author is the recorder's actor; its provenance (session, tool call, source) is repeated
    in the payload, where the projection reads it."""
    payload: dict[str, JSONValue] = {
        "text": text,
        "author": rec.actor,
        **rec.provenance,
        "derived_from": list(derived_from),
    }
    if len(roles) > 1:
        payload["messages"] = [{"role": r, "content": c} for r, c in roles]
    return rec.event("memory.evidence", payload, at=at)


def extraction(
    rec: Recorder,
    evidence: Event,
    *,
    status: str,
    error: str | None,
    calls: int,
    invalid: Sequence[InvalidItem] = (),
    notes: Sequence[str] = (),
) -> Event:
    """``memory.extraction``: how the model call over ``evidence`` went, what was refused."""
    return rec.event(
        "memory.extraction",
        {
            "evidence_id": evidence.id,
            "status": status,
            "error": error,
            "llm_calls": calls,
            "invalid": [{"item": _jsonable(i.item), "reason": i.reason} for i in invalid],
            "notes": list(notes),
        },
        at=evidence.at,
    )


def fact(rec: Recorder, row: dict[str, JSONValue], *, at: datetime) -> Event:
    """``memory.fact``: a new fact, whole (its row in ``mem_facts``)."""
    return rec.event("memory.fact", {"fact": row}, at=at)


def reinforced(rec: Recorder, fact_id: str, *, evidence_id: str, at: datetime) -> Event:
    """``memory.reinforced``: the evidence restated a current fact."""
    return rec.event(
        "memory.reinforced",
        {"fact_id": fact_id, "at": format_time(at), "evidence_id": evidence_id},
        at=at,
    )


def superseded(rec: Recorder, fact_id: str, *, by: str, reason: str, at: datetime) -> Event:
    """``memory.superseded``: ``fact_id``'s validity window closes at ``at``, for ``by``."""
    return rec.event(
        "memory.superseded",
        {"fact_id": fact_id, "by": by, "valid_to": format_time(at), "reason": reason},
        at=at,
    )


def contested(rec: Recorder, fact_id: str, contested_with: Sequence[str], *, at: datetime) -> Event:
    """``memory.contested``: the facts ``fact_id`` is now contested with (the whole set)."""
    return rec.event(
        "memory.contested",
        {"fact_id": fact_id, "contested_with": list(contested_with)},
        at=at,
    )


def episode(
    rec: Recorder,
    *,
    episode_id: str,
    kind: str,
    text: str,
    due: str | None,
    event_id: str | None,
    session_id: str | None,
    at: datetime,
    derived_from: Sequence[str] | None = None,
) -> Event:
    """``memory.episode``: one episode; ``derived_from`` (the episodes it consolidates) only
    for a consolidation's."""
    body: dict[str, JSONValue] = {
        "episode_id": episode_id,
        "kind": kind,
        "text": text,
        "at": format_time(at),
        "due": due,
        "event_id": event_id,
        "session_id": session_id,
    }
    if derived_from is not None:
        body["derived_from"] = list(derived_from)
    return rec.event("memory.episode", {"episode": body}, at=at)


def consolidated(rec: Recorder, episode_ids: Sequence[str], *, into: str, at: datetime) -> Event:
    """``memory.consolidated``: ``episode_ids`` are folded or summarised into ``into``."""
    return rec.event("memory.consolidated", {"episode_ids": list(episode_ids), "into": into}, at=at)


def wiki(
    rec: Recorder,
    sections: Sequence[dict[str, JSONValue]],
    removed: Sequence[str],
    *,
    at: datetime,
) -> Event:
    """``memory.wiki``: the compiled sections, and the sections that no longer exist."""
    return rec.event(
        "memory.wiki",
        {
            "sections": cast(list[JSONValue], list(sections)),
            "removed": cast(list[JSONValue], list(removed)),
            "compiled_at": format_time(at),
        },
        at=at,
    )


def outcome(rec: Recorder, fact_id: str, *, ok: bool, times_used: int) -> Event:
    """``memory.outcome``: a procedural fact was used, and it worked or not."""
    return rec.event("memory.outcome", {"fact_id": fact_id, "ok": ok, "times_used": times_used})


def confirmed(
    rec: Recorder, fact_id: str, *, state: str, reason: str | None, at: datetime
) -> Event:
    """``memory.confirmed``: the recorder's actor re-affirmed ``fact_id``; its new state."""
    return rec.event(
        "memory.confirmed",
        {"fact_id": fact_id, "at": format_time(at), "state": state, "reason": reason},
        at=at,
    )


def disputed(rec: Recorder, fact_id: str, *, reason: str) -> Event:
    """``memory.disputed``: ``fact_id`` leaves the trusted set; ``reason`` says who and why."""
    return rec.event("memory.disputed", {"fact_id": fact_id, "reason": reason})


def audit(rec: Recorder, op: str, counts: Mapping[str, int]) -> Event:
    """``audit.op``: who called what over the recorder's scope, with counts; no content."""
    return rec.event("audit.op", {"op": op, "counts": dict(counts)}, id=new_id("au"))


def _jsonable(value: object) -> JSONValue:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_jsonable(v) for v in cast(list[object], value)]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in cast(dict[object, object], value).items()}
    return repr(value)
