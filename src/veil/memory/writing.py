"""The plan of ``remember``: what the validated items of one extraction do to the memory. Pure.

:func:`plan` turns the items into the events that record them and the :class:`WriteReport` that
describes them, deciding with the pure rules of :mod:`veil.memory.supersession` and
:mod:`veil.memory.trust`. It reads nothing: the current facts it weighs the items against are
named by :func:`queries`, read before (:func:`veil.memory.write_path.read_current`) and passed in
as a :class:`Current`. Appending the planned events is the commit step's job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import Any, cast

from veil.clock import format_time
from veil.memory import events
from veil.memory.config import MemoryConfig, Relation
from veil.memory.entities import USER, entity_key, value_key
from veil.memory.extraction import EpisodeItem, FactItem, PromptFact
from veil.memory.grounding import ungrounded_specifics
from veil.memory.model import AUTHORITY, Author, Disclosure, InvalidItem, Volatility, WriteReport
from veil.memory.records import FactRecord
from veil.memory.supersession import Candidate, CurrentFact, decide, supersession_reason
from veil.memory.trust import disclosure_of, is_third_party_claim, trust_of
from veil.tape import Event, JSONValue, new_id
from veil.tape.recorder import Recorder

ROLE_AUTHORS: Mapping[str, Author] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "tool": "tool",
}


@dataclass(frozen=True)
class Prepared:
    """The evidence on the tape and what the model call needs (the prepare step's output)."""

    evidence: Event
    text: str
    author: Author
    chain: tuple[Author, ...]
    messages: list[dict[str, str]]
    roles: tuple[tuple[Author, str], ...]
    calendar: frozenset[date]
    shown: tuple[PromptFact, ...] = ()
    """The current facts the prompt showed the model (with ids)."""


@dataclass(frozen=True)
class Extracted:
    """What the model call gave (the extract step's output): validated and vetted items, or
    the ``error`` (the call failed, or its output never parsed) that left none."""

    calls: int
    error: str | None = None
    facts: tuple[FactItem, ...] = ()
    episodes: tuple[EpisodeItem, ...] = ()
    invalid: tuple[InvalidItem, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Query:
    """One read of current facts: a subject's current values of a relation — all of them, or
    only the value ``value`` (and the fact ``target``, when the model named one)."""

    subject_key: str
    relation: str
    value: str | None = None
    target: str | None = None


@dataclass(frozen=True)
class Current:
    """What the store held before the plan: each query's current facts, in the order read,
    and the object of every fact read (for the supersession reason)."""

    facts: Mapping[Query, tuple[CurrentFact, ...]]
    objects: Mapping[str, str] = field(default_factory=lambda: {})


@dataclass(frozen=True)
class Plan:
    """The events to append as one atomic batch, and the report of what they do."""

    events: tuple[Event, ...]
    report: WriteReport


@dataclass(frozen=True)
class _Reading:
    """What the rules make of one fact item before weighing it against current facts."""

    subject_key: str
    relation: Relation | None
    author: Author
    disclosure: Disclosure
    trust: int
    volatility: Volatility
    functional: bool
    quarantined: bool


def _reading(prepared: Prepared, item: FactItem, config: MemoryConfig) -> _Reading | None:
    """None when the subject resolves to nothing."""
    subject_key = entity_key(item.subject, aliases=config.aliases, user_names=config.user_names)
    if not subject_key:
        return None
    relation = config.relation(item.relation)
    author = _author_for(prepared, item)
    disclosure = disclosure_of(author, item.claimant)
    if disclosure == "reported" and _quoted(item.object, prepared.text):
        disclosure = "quoted"
    volatility: Volatility = item.volatility or (relation.volatility if relation else "durable")
    # A value for now ("I'm at the airport") of a lasting functional relation sits beside the
    # lasting value instead of closing it.
    passing = config.guardrails and volatility in ("transient", "ephemeral")
    lasting = relation is not None and relation.volatility not in ("transient", "ephemeral")
    quarantined = is_third_party_claim(
        subject_key=subject_key,
        relation=item.relation,
        author=author,
        chain=prepared.chain,
        claimant=item.claimant,
    )
    return _Reading(
        subject_key,
        relation,
        author,
        disclosure,
        trust_of(author, prepared.chain, disclosure),
        volatility,
        bool(relation and relation.functional) and not (passing and lasting),
        quarantined,
    )


def queries(prepared: Prepared, facts: Sequence[FactItem], config: MemoryConfig) -> list[Query]:
    """The reads :func:`plan` weighs ``facts`` against: a functional slot whole (one current
    value per subject, so it is small); of a non-functional one only the same value (to
    reinforce) and the model's named target (to supersede); and the same value of the
    opposite relation (``uses_tool vim`` against ``avoids_tool vim``)."""
    wanted: list[Query] = []
    for item in facts:
        reading = _reading(prepared, item, config)
        if reading is None or reading.quarantined:
            continue
        value = value_key(item.object)
        if reading.functional:
            wanted.append(Query(reading.subject_key, item.relation))
        else:
            wanted.append(Query(reading.subject_key, item.relation, value, item.supersedes))
        if reading.relation is not None and reading.relation.opposite is not None:
            wanted.append(Query(reading.subject_key, reading.relation.opposite, value))
    return list(dict.fromkeys(wanted))


def plan(
    prepared: Prepared,
    extracted: Extracted,
    current: Current,
    config: MemoryConfig,
    recorder: Recorder,
) -> Plan:
    """The events and report of one extraction. ``recorder`` is the memory's for this user:
    what the evidence decides is recorded by its author, at its time, with its id as
    provenance; the extraction record by Veil. Reads neither the store nor the clock."""
    evidence = prepared.evidence
    veil = replace(recorder, actor="veil", provenance={})
    if extracted.error is not None:
        failed = events.extraction(
            veil, evidence, status="failed", error=extracted.error, calls=extracted.calls
        )
        return Plan(
            (failed,),
            WriteReport(evidence_id=evidence.id, llm_calls=extracted.calls, error=extracted.error),
        )
    rec = replace(recorder, actor=prepared.author, provenance={"evidence_id": evidence.id})
    batch = _Batch(prepared, current, config, rec, list(extracted.invalid), list(extracted.notes))
    for item in extracted.facts:
        batch.fact(item)
    episode_ids = [batch.episode(ep) for ep in extracted.episodes]
    batch.events.append(
        events.extraction(
            veil,
            evidence,
            status="ok",
            error=None,
            calls=extracted.calls,
            invalid=batch.invalid,
            notes=batch.notes,
        )
    )
    report = WriteReport(
        evidence_id=evidence.id,
        facts=tuple(batch.added),
        superseded=tuple(batch.superseded),
        reinforced=tuple(batch.reinforced),
        quarantined=tuple(batch.quarantined),
        episodes=tuple(episode_ids),
        contested=tuple(dict.fromkeys(batch.contested)),
        invalid=tuple(batch.invalid),
        llm_calls=extracted.calls,
        ungrounded=tuple(batch.ungrounded),
    )
    return Plan(tuple(batch.events), report)


@dataclass
class _Batch:
    """The plan of one extraction as it is decided, item by item. Facts decided in this batch
    are visible to later items of the same batch."""

    prepared: Prepared
    current: Current
    config: MemoryConfig
    rec: Recorder
    invalid: list[InvalidItem]
    notes: list[str]
    events: list[Event] = field(default_factory=lambda: [])
    added: list[str] = field(default_factory=lambda: [])
    superseded: list[str] = field(default_factory=lambda: [])
    reinforced: list[str] = field(default_factory=lambda: [])
    quarantined: list[str] = field(default_factory=lambda: [])
    contested: list[str] = field(default_factory=lambda: [])
    ungrounded: list[str] = field(default_factory=lambda: [])
    pending: dict[tuple[str, str], list[CurrentFact]] = field(default_factory=lambda: {})
    pending_rows: dict[str, FactRecord] = field(default_factory=lambda: {})
    closed: set[str] = field(default_factory=set[str])

    def fact(self, item: FactItem) -> None:
        prepared, evidence, rec = self.prepared, self.prepared.evidence, self.rec
        at = evidence.at
        reading = _reading(prepared, item, self.config)
        if reading is None:
            self.invalid.append(
                InvalidItem(item=item.__dict__, reason="fact: subject resolves to nothing")
            )
            return
        subject_key, relation, trust = reading.subject_key, reading.relation, reading.trust
        if self.config.guardrails:
            missing = list(item.missing)
        else:
            missing = ungrounded_specifics(
                f"{item.object} {item.statement}", prepared.text, calendar=set(prepared.calendar)
            )
        fact_id = new_id("f")
        row = _fact_row(fact_id, item, reading, evidence, flags=["ungrounded"] if missing else [])
        if missing:
            self.ungrounded.append(fact_id)
            self.notes.append(f"{fact_id}: not in the evidence: {', '.join(missing)}")
        if reading.quarantined:
            row = replace(row, state="quarantined", trust=0)
            self.events.append(events.fact(rec, row, at=at))
            self.quarantined.append(fact_id)
            return
        slot = (subject_key, item.relation)
        if reading.functional:
            if slot not in self.pending:
                self.pending[slot] = list(self.current.facts[Query(*slot)])
            found = self.pending[slot]
        else:
            value = value_key(item.object)
            found = [
                *self.current.facts[Query(*slot, value, item.supersedes)],
                *self.pending.setdefault(slot, []),
            ]
        current = list({f.id: f for f in found if f.id not in self.closed}.values())
        decision = decide(
            Candidate(
                value_key=value_key(item.object),
                trust=trust,
                at=at,
                functional=reading.functional,
                target=item.supersedes,
                grounded=item.grounded,
            ),
            current,
        )
        self.notes.extend(decision.notes)
        if decision.action == "ignore":
            reason = decision.notes[0] if decision.notes else "not supported by the evidence"
            self.invalid.append(InvalidItem(item=item.__dict__, reason=f"fact: {reason}"))
            return
        if decision.action == "reinforce" and decision.reinforce:
            if decision.reinforce in self.pending_rows:
                return  # restated twice in one piece of evidence
            self.events.append(
                events.reinforced(rec, decision.reinforce, evidence_id=evidence.id, at=at)
            )
            self.reinforced.append(decision.reinforce)
            return
        if decision.superseded_by:
            newer = next(f for f in current if f.id == decision.superseded_by)
            row = replace(
                row,
                state="superseded",
                superseded_by=decision.superseded_by,
                reason="older evidence",
                valid_to=format_time(newer.valid_from),
            )
        self.events.append(events.fact(rec, row, at=at))
        self.added.append(fact_id)
        self.pending_rows[fact_id] = row
        for old_id in decision.supersede:
            reason = supersession_reason(prepared.text, self._object_of(old_id))
            self.events.append(events.superseded(rec, old_id, by=fact_id, reason=reason, at=at))
            self.superseded.append(old_id)
            self.closed.add(old_id)
        opposed = self._opposed(subject_key, relation, item)
        if opposed is not None:
            rival, same_batch = opposed
            if same_batch or not item.grounded or rival.trust > trust:
                decision = replace(decision, contest=(*decision.contest, rival.id))
                current = [*current, rival]
                self.notes.append(f"{fact_id} contradicts {rival.id}: contested")
            else:
                decision = replace(decision, supersede=(*decision.supersede, rival.id))
        if decision.contest:
            self.events.append(events.contested(rec, fact_id, sorted(decision.contest), at=at))
            for other in decision.contest:
                theirs = next(f for f in current if f.id == other)
                with_ = sorted({*theirs.contested_with, fact_id})
                self.events.append(events.contested(rec, other, with_, at=at))
            self.contested.extend([fact_id, *decision.contest])
        if row.state == "current":
            self.pending[slot].append(
                CurrentFact(fact_id, value_key(item.object), trust, at, tuple(decision.contest))
            )

    def episode(self, ep: EpisodeItem) -> str:
        evidence = self.prepared.evidence
        episode_id = new_id("ep")
        self.events.append(
            events.episode(
                self.rec,
                episode_id=episode_id,
                kind=ep.kind,
                text=ep.text,
                due=ep.due,
                event_id=evidence.id,
                session_id=cast(str | None, evidence.payload.get("session_id")),
                at=evidence.at,
            )
        )
        return episode_id

    def _opposed(
        self, subject_key: str, relation: Relation | None, item: FactItem
    ) -> tuple[CurrentFact, bool] | None:
        """A current fact of the opposite relation with the same value (``uses_tool vim``
        against ``avoids_tool vim``), and whether it came from this same evidence."""
        if relation is None or relation.opposite is None:
            return None
        key = value_key(item.object)
        for fact in self.pending.get((subject_key, relation.opposite), []):
            if fact.value_key == key and fact.id not in self.closed:
                return fact, True
        for fact in self.current.facts[Query(subject_key, relation.opposite, key)]:
            if fact.id not in self.closed:
                return fact, False
        return None

    def _object_of(self, fact_id: str) -> str:
        if fact_id in self.pending_rows:
            return self.pending_rows[fact_id].object
        return self.current.objects.get(fact_id, "")


def _fact_row(
    fact_id: str, item: FactItem, reading: _Reading, evidence: Event, *, flags: list[str]
) -> FactRecord:
    """The new fact as recorded, current until a decision says otherwise."""
    at = format_time(evidence.at)
    payload = evidence.payload
    return FactRecord(
        fact_id=fact_id,
        subject=_display_subject(item.subject, reading.subject_key),
        subject_key=reading.subject_key,
        relation=item.relation,
        relation_class="registered" if reading.relation else "unclassified",
        object=item.object,
        object_key=value_key(item.object),
        statement=item.statement or f"{item.subject} {item.relation} {item.object}.",
        volatility=reading.volatility,
        valid_from=at,
        state="current",
        author=reading.author,
        disclosure=reading.disclosure,
        claimant=item.claimant,
        event_id=evidence.id,
        derived_from=tuple(
            str(d) for d in cast(list[JSONValue], payload.get("derived_from") or [])
        ),
        session_id=cast(str | None, payload.get("session_id")),
        tool_call_id=cast(str | None, payload.get("tool_call_id")),
        source=cast(str | None, payload.get("source")),
        trust=reading.trust,
        last_confirmed_at=at,
        flags=tuple(flags),
    )


def _author_for(prepared: Prepared, item: FactItem) -> Author:
    """In a conversation, the author of a fact is the author of the message its value came
    from; when no single message contains it, the weakest author present (weakest link)."""
    if len(prepared.roles) == 1:
        return prepared.author
    needle = item.object.casefold()
    holders: list[Author] = [a for a, c in prepared.roles if needle and needle in c.casefold()]
    if holders:
        return min(holders, key=authority_key)
    return prepared.author


def authority_key(author: str) -> int:
    return AUTHORITY.get(cast(Author, author), 0)


def roles_of(
    text_or_messages: str | Sequence[Mapping[str, Any]], author: Author
) -> tuple[tuple[Author, str], ...]:
    if isinstance(text_or_messages, str):
        return ((author, text_or_messages),)
    out: list[tuple[Author, str]] = []
    for i, message in enumerate(text_or_messages):
        if not isinstance(message, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"message {i} is not a mapping with role and content")
        role = str(message.get("role", ""))
        content = message.get("content")
        if role not in ROLE_AUTHORS or not isinstance(content, str):
            raise ValueError(f"message {i} needs role in {sorted(ROLE_AUTHORS)} and text content")
        # The caller's author caps every message: a forwarded conversation is not first-hand.
        mapped = ROLE_AUTHORS[role]
        out.append((min(mapped, author, key=authority_key), content))
    if not out:
        raise ValueError("nothing to remember: no messages")
    return tuple(out)


def _display_subject(subject: str, key: str) -> str:
    return "user" if key == USER else subject.strip()


def _quoted(value: str, text: str) -> bool:
    lowered = text.casefold()
    needle = value.casefold()
    return any(f"{q}{needle}" in lowered or f"{needle}{q}" in lowered for q in ('"', "“", "”"))
