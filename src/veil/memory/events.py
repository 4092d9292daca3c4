"""The long-term memory's event kinds, their payloads, and the one builder of each.

:data:`MemoryKind` names every kind the memory appends; each has one frozen payload dataclass
and one :class:`~veil.tape.kinds.EventKind`, registered with the tape when this module is
imported (every module that appends memory events imports it to build them). Every
``memory.*`` and ``audit.op`` event is built here, through the
:class:`~veil.tape.recorder.Recorder` of the writer that decides it: the recorder gives scope,
actor, provenance and id, the builder the kind and the payload. :mod:`veil.memory.projection`
reads these payloads; :mod:`veil.memory.portability` checks an import against the same kinds;
docs/export-format.md documents them.

The memory's kinds keep payload keys they do not declare (``extra="keep"``): an import copies
events written by earlier versions, and docs/export-format.md promises their other keys are
kept. A field with a default is a key an earlier version's payload may lack.

``at`` is when the event happened: the evidence's time for everything an extraction decides,
the time a ``maintain`` ran for what it compiles; builders without it take the recorder's clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Literal, cast

from veil.clock import format_time
from veil.memory.model import Author, EpisodeKind, FactState, InvalidItem
from veil.memory.records import EPISODE_CODEC, FACT_CODEC, EpisodeRecord, FactRecord
from veil.tape import Event, JSONValue, new_id
from veil.tape.codec import SPARSE, Ident, TimeText
from veil.tape.kinds import EventKind, catalogue
from veil.tape.recorder import Recorder

MemoryKind = Literal[
    "memory.evidence",
    "memory.extraction",
    "memory.fact",
    "memory.reinforced",
    "memory.superseded",
    "memory.contested",
    "memory.episode",
    "memory.consolidated",
    "memory.wiki",
    "memory.outcome",
    "memory.confirmed",
    "memory.disputed",
    "audit.op",
]


@dataclass(frozen=True)
class EvidenceMessage:
    role: Author
    content: str


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """What the caller said; its provenance (session, tool call, source) repeated."""

    text: str
    author: Author
    session_id: str | None = None
    tool_call_id: str | None = None
    source: str | None = None
    derived_from: tuple[str, ...] = ()
    messages: Annotated[tuple[EvidenceMessage, ...], SPARSE] = ()
    """A conversation's messages, each with its author (only for more than one)."""


@dataclass(frozen=True)
class Refused:
    """An extracted item that was not stored, as the extraction outcome records it."""

    item: JSONValue
    reason: str


@dataclass(frozen=True, kw_only=True)
class Extraction:
    evidence_id: Ident
    status: str | None = None
    error: str | None = None
    llm_calls: int = 0
    invalid: tuple[Refused, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class FactAdded:
    fact: FactRecord


@dataclass(frozen=True, kw_only=True)
class Reinforced:
    fact_id: Ident
    at: TimeText
    evidence_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Superseded:
    fact_id: Ident
    valid_to: TimeText
    by: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Contested:
    fact_id: Ident
    contested_with: tuple[str, ...]


@dataclass(frozen=True)
class EpisodeAdded:
    episode: EpisodeRecord


@dataclass(frozen=True)
class Consolidated:
    episode_ids: tuple[str, ...]
    into: Ident


@dataclass(frozen=True)
class WikiSection:
    section: Ident
    title: str
    text: str
    fact_ids: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Wiki:
    sections: tuple[WikiSection, ...]
    removed: tuple[str, ...] = ()
    compiled_at: TimeText


@dataclass(frozen=True)
class Outcome:
    fact_id: Ident
    ok: bool
    times_used: int


@dataclass(frozen=True, kw_only=True)
class Confirmed:
    fact_id: Ident
    at: TimeText
    state: FactState
    reason: str | None = None


@dataclass(frozen=True)
class Disputed:
    fact_id: Ident
    reason: str | None = None


@dataclass(frozen=True)
class AuditOp:
    op: str
    counts: dict[str, int]


_RECORDS = {FactRecord: FACT_CODEC, EpisodeRecord: EPISODE_CODEC}
EVIDENCE = EventKind("memory.evidence", Evidence, extra="keep")
EXTRACTION = EventKind("memory.extraction", Extraction, extra="keep")
FACT = EventKind("memory.fact", FactAdded, extra="keep", nested=_RECORDS)
REINFORCED = EventKind("memory.reinforced", Reinforced, extra="keep")
SUPERSEDED = EventKind("memory.superseded", Superseded, extra="keep")
CONTESTED = EventKind("memory.contested", Contested, extra="keep")
EPISODE = EventKind("memory.episode", EpisodeAdded, extra="keep", nested=_RECORDS)
CONSOLIDATED = EventKind("memory.consolidated", Consolidated, extra="keep")
WIKI = EventKind("memory.wiki", Wiki, extra="keep")
OUTCOME = EventKind("memory.outcome", Outcome, extra="keep")
CONFIRMED = EventKind("memory.confirmed", Confirmed, extra="keep")
DISPUTED = EventKind("memory.disputed", Disputed, extra="keep")
AUDIT = EventKind("audit.op", AuditOp, extra="keep")
KINDS = catalogue(
    MemoryKind,
    EVIDENCE,
    EXTRACTION,
    FACT,
    REINFORCED,
    SUPERSEDED,
    CONTESTED,
    EPISODE,
    CONSOLIDATED,
    WIKI,
    OUTCOME,
    CONFIRMED,
    DISPUTED,
    AUDIT,
)


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
    provenance = rec.provenance
    payload = Evidence(
        text=text,
        author=cast(Author, rec.actor),
        session_id=cast(str | None, provenance.get("session_id")),
        tool_call_id=cast(str | None, provenance.get("tool_call_id")),
        source=cast(str | None, provenance.get("source")),
        derived_from=tuple(derived_from),
        messages=tuple(EvidenceMessage(r, c) for r, c in roles) if len(roles) > 1 else (),
    )
    return rec.event(EVIDENCE, payload, at=at)


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
    payload = Extraction(
        evidence_id=evidence.id,
        status=status,
        error=error,
        llm_calls=calls,
        invalid=tuple(Refused(_jsonable(i.item), i.reason) for i in invalid),
        notes=tuple(notes),
    )
    return rec.event(EXTRACTION, payload, at=evidence.at)


def fact(rec: Recorder, record: FactRecord, *, at: datetime) -> Event:
    """``memory.fact``: a new fact, whole (its row in ``mem_facts``)."""
    return rec.event(FACT, FactAdded(record), at=at)


def reinforced(rec: Recorder, fact_id: str, *, evidence_id: str, at: datetime) -> Event:
    """``memory.reinforced``: the evidence restated a current fact."""
    payload = Reinforced(fact_id=fact_id, at=format_time(at), evidence_id=evidence_id)
    return rec.event(REINFORCED, payload, at=at)


def superseded(rec: Recorder, fact_id: str, *, by: str, reason: str, at: datetime) -> Event:
    """``memory.superseded``: ``fact_id``'s validity window closes at ``at``, for ``by``."""
    payload = Superseded(fact_id=fact_id, by=by, valid_to=format_time(at), reason=reason)
    return rec.event(SUPERSEDED, payload, at=at)


def contested(rec: Recorder, fact_id: str, contested_with: Sequence[str], *, at: datetime) -> Event:
    """``memory.contested``: the facts ``fact_id`` is now contested with (the whole set)."""
    return rec.event(CONTESTED, Contested(fact_id, tuple(contested_with)), at=at)


def episode(
    rec: Recorder,
    *,
    episode_id: str,
    kind: EpisodeKind,
    text: str,
    due: str | None,
    event_id: str | None,
    session_id: str | None,
    at: datetime,
    derived_from: Sequence[str] | None = None,
) -> Event:
    """``memory.episode``: one episode; ``derived_from`` (the episodes it consolidates) only
    for a consolidation's."""
    record = EpisodeRecord(
        episode_id=episode_id,
        kind=kind,
        text=text,
        at=format_time(at),
        due=due,
        event_id=event_id,
        session_id=session_id,
        derived_from=tuple(derived_from or ()),
    )
    return rec.event(EPISODE, EpisodeAdded(record), at=at)


def consolidated(rec: Recorder, episode_ids: Sequence[str], *, into: str, at: datetime) -> Event:
    """``memory.consolidated``: ``episode_ids`` are folded or summarised into ``into``."""
    return rec.event(CONSOLIDATED, Consolidated(tuple(episode_ids), into), at=at)


def wiki(
    rec: Recorder,
    sections: Sequence[WikiSection],
    removed: Sequence[str],
    *,
    at: datetime,
) -> Event:
    """``memory.wiki``: the compiled sections, and the sections that no longer exist."""
    payload = Wiki(sections=tuple(sections), removed=tuple(removed), compiled_at=format_time(at))
    return rec.event(WIKI, payload, at=at)


def outcome(rec: Recorder, fact_id: str, *, ok: bool, times_used: int) -> Event:
    """``memory.outcome``: a procedural fact was used, and it worked or not."""
    return rec.event(OUTCOME, Outcome(fact_id, ok, times_used))


def confirmed(
    rec: Recorder, fact_id: str, *, state: FactState, reason: str | None, at: datetime
) -> Event:
    """``memory.confirmed``: the recorder's actor re-affirmed ``fact_id``; its new state."""
    payload = Confirmed(fact_id=fact_id, at=format_time(at), state=state, reason=reason)
    return rec.event(CONFIRMED, payload, at=at)


def disputed(rec: Recorder, fact_id: str, *, reason: str) -> Event:
    """``memory.disputed``: ``fact_id`` leaves the trusted set; ``reason`` says who and why."""
    return rec.event(DISPUTED, Disputed(fact_id, reason))


def audit(rec: Recorder, op: str, counts: Mapping[str, int]) -> Event:
    """``audit.op``: who called what over the recorder's scope, with counts; no content."""
    return rec.event(AUDIT, AuditOp(op, dict(counts)), id=new_id("au"))


def _jsonable(value: object) -> JSONValue:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_jsonable(v) for v in cast(list[object], value)]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in cast(dict[object, object], value).items()}
    return repr(value)
