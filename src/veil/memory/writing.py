"""Turning validated extraction items into events: the write half of ``remember``.

Reads the current facts it needs through the store (scoped, indexed lookups), decides with the
pure functions of :mod:`veil.memory.supersession` and :mod:`veil.memory.trust`, and appends the
outcome as one atomic batch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import Any, cast

from veil.clock import format_time, parse_time
from veil.memory.config import MemoryConfig, Relation
from veil.memory.entities import USER, entity_key, value_key
from veil.memory.extraction import EpisodeItem, FactItem, PromptFact
from veil.memory.grounding import ungrounded_specifics
from veil.memory.model import AUTHORITY, Author, InvalidItem, Volatility, WriteReport
from veil.memory.projection import FACTS
from veil.memory.supersession import Candidate, CurrentFact, decide, supersession_reason
from veil.memory.trust import disclosure_of, is_third_party_claim, trust_of
from veil.tape import Event, JSONValue, Store, new_id

ROLE_AUTHORS: Mapping[str, Author] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "tool": "tool",
}


@dataclass(frozen=True)
class Prepared:
    evidence: Event
    text: str
    author: Author
    chain: tuple[Author, ...]
    messages: list[dict[str, str]]
    roles: tuple[tuple[Author, str], ...]
    calendar: frozenset[date]
    shown: tuple[PromptFact, ...] = ()
    """The current facts the prompt showed the model (with ids)."""


@dataclass
class Writer:
    """Plans and appends the events of one extraction (see the module docstring)."""

    store: Store
    config: MemoryConfig

    def extraction_event(
        self,
        evidence: Event,
        status: str,
        error: str | None,
        calls: int,
        invalid: Sequence[InvalidItem],
        notes: Sequence[str] = (),
    ) -> Event:
        return Event(
            id=new_id("ev"),
            scope=evidence.scope,
            kind="memory.extraction",
            at=evidence.at,
            actor="veil",
            payload={
                "evidence_id": evidence.id,
                "status": status,
                "error": error,
                "llm_calls": calls,
                "invalid": [{"item": _jsonable(i.item), "reason": i.reason} for i in invalid],
                "notes": list(notes),
            },
        )

    # ---- decisions ----------------------------------------------------------------------

    def apply(
        self,
        prepared: Prepared,
        facts: list[FactItem],
        episodes: list[EpisodeItem],
        invalid: list[InvalidItem],
        calls: int,
        vetting_notes: Sequence[str] = (),
    ) -> WriteReport:
        evidence = prepared.evidence
        user_id = evidence.scope
        at = evidence.at
        events: list[Event] = []
        added: list[str] = []
        superseded: list[str] = []
        reinforced: list[str] = []
        quarantined: list[str] = []
        contested: list[str] = []
        ungrounded: list[str] = []
        notes: list[str] = list(vetting_notes)
        # Facts decided in this batch are visible to later items of the same batch.
        pending: dict[tuple[str, str], list[CurrentFact]] = {}
        pending_rows: dict[str, dict[str, JSONValue]] = {}
        closed: set[str] = set()

        def emit(kind: str, payload: dict[str, JSONValue]) -> None:
            events.append(
                Event(
                    id=new_id("ev"),
                    scope=user_id,
                    kind=kind,
                    at=at,
                    actor=prepared.author,
                    payload=payload,
                    provenance={"evidence_id": evidence.id},
                )
            )

        for item in facts:
            subject_key = entity_key(
                item.subject, aliases=self.config.aliases, user_names=self.config.user_names
            )
            if not subject_key:
                invalid.append(
                    InvalidItem(item=item.__dict__, reason="fact: subject resolves to nothing")
                )
                continue
            relation: Relation | None = self.config.relation(item.relation)
            author = self._author_for(prepared, item)
            disclosure = disclosure_of(author, item.claimant)
            if disclosure == "reported" and _quoted(item.object, prepared.text):
                disclosure = "quoted"
            trust = trust_of(author, prepared.chain, disclosure)
            volatility: Volatility = item.volatility or (
                relation.volatility if relation else "durable"
            )
            if self.config.guardrails:
                missing = list(item.missing)
            else:
                missing = ungrounded_specifics(
                    f"{item.object} {item.statement}",
                    prepared.text,
                    calendar=set(prepared.calendar),
                )
            flags: list[str] = ["ungrounded"] if missing else []
            fact_id = new_id("f")
            row: dict[str, JSONValue] = {
                "fact_id": fact_id,
                "subject": _display_subject(item.subject, subject_key),
                "subject_key": subject_key,
                "relation": item.relation,
                "relation_class": "registered" if relation else "unclassified",
                "object": item.object,
                "object_key": value_key(item.object),
                "statement": item.statement or f"{item.subject} {item.relation} {item.object}.",
                "volatility": volatility,
                "valid_from": format_time(at),
                "valid_to": None,
                "state": "current",
                "superseded_by": None,
                "reason": None,
                "author": author,
                "disclosure": disclosure,
                "claimant": item.claimant,
                "event_id": evidence.id,
                "derived_from": list(
                    cast(list[JSONValue], evidence.payload.get("derived_from") or [])
                ),
                "session_id": cast(str | None, evidence.payload.get("session_id")),
                "tool_call_id": cast(str | None, evidence.payload.get("tool_call_id")),
                "source": cast(str | None, evidence.payload.get("source")),
                "trust": trust,
                "last_confirmed_at": format_time(at),
                "flags": list(flags),
                "contested_with": [],
                "times_used": 0,
                "last_outcome": None,
            }
            if missing:
                ungrounded.append(fact_id)
                notes.append(f"{fact_id}: not in the evidence: {', '.join(missing)}")
            if is_third_party_claim(
                subject_key=subject_key,
                relation=item.relation,
                author=author,
                chain=prepared.chain,
                claimant=item.claimant,
            ):
                row["state"] = "quarantined"
                row["trust"] = 0
                emit("memory.fact", {"fact": row})
                quarantined.append(fact_id)
                continue
            slot = (subject_key, item.relation)
            # A value for now ("I'm at the airport") of a lasting functional relation sits
            # beside the lasting value instead of closing it.
            passing = self.config.guardrails and volatility in ("transient", "ephemeral")
            lasting = relation is not None and relation.volatility not in ("transient", "ephemeral")
            functional = bool(relation and relation.functional) and not (passing and lasting)
            if functional:
                # One current value per subject: the whole slot is small, cache it.
                if slot not in pending:
                    pending[slot] = self._current(user_id, subject_key, item.relation)
                found = pending[slot]
            else:
                # A non-functional slot can hold many values; only the same value (to
                # reinforce) and the model's named target (to supersede) matter.
                found = [
                    *self._current(
                        user_id,
                        subject_key,
                        item.relation,
                        value=value_key(item.object),
                        target=item.supersedes,
                    ),
                    *pending.setdefault(slot, []),
                ]
            current = list({f.id: f for f in found if f.id not in closed}.values())
            decision = decide(
                Candidate(
                    value_key=value_key(item.object),
                    trust=trust,
                    at=at,
                    functional=functional,
                    target=item.supersedes,
                    grounded=item.grounded,
                ),
                current,
            )
            notes.extend(decision.notes)
            if decision.action == "ignore":
                reason = decision.notes[0] if decision.notes else "not supported by the evidence"
                invalid.append(InvalidItem(item=item.__dict__, reason=f"fact: {reason}"))
                continue
            if decision.action == "reinforce" and decision.reinforce:
                if decision.reinforce in pending_rows:
                    continue  # restated twice in one piece of evidence
                emit(
                    "memory.reinforced",
                    {
                        "fact_id": decision.reinforce,
                        "at": format_time(at),
                        "evidence_id": evidence.id,
                    },
                )
                reinforced.append(decision.reinforce)
                continue
            if decision.superseded_by:
                row["state"] = "superseded"
                row["superseded_by"] = decision.superseded_by
                row["reason"] = "older evidence"
                newer = next(f for f in current if f.id == decision.superseded_by)
                row["valid_to"] = format_time(newer.valid_from)
            emit("memory.fact", {"fact": row})
            added.append(fact_id)
            pending_rows[fact_id] = row
            for old_id in decision.supersede:
                old_value = self._object_of(user_id, old_id, pending_rows)
                emit(
                    "memory.superseded",
                    {
                        "fact_id": old_id,
                        "by": fact_id,
                        "valid_to": format_time(at),
                        "reason": supersession_reason(prepared.text, old_value),
                    },
                )
                superseded.append(old_id)
                closed.add(old_id)
            opposed = self._opposed(user_id, subject_key, relation, item, pending, closed)
            if opposed is not None:
                rival, same_batch = opposed
                if same_batch or not item.grounded or rival.trust > trust:
                    decision = replace(decision, contest=(*decision.contest, rival.id))
                    current = [*current, rival]
                    notes.append(f"{fact_id} contradicts {rival.id}: contested")
                else:
                    decision = replace(decision, supersede=(*decision.supersede, rival.id))
            if decision.contest:
                mine = sorted(decision.contest)
                emit("memory.contested", {"fact_id": fact_id, "contested_with": list(mine)})
                for other in decision.contest:
                    theirs = next(f for f in current if f.id == other)
                    emit(
                        "memory.contested",
                        {
                            "fact_id": other,
                            "contested_with": list(sorted({*theirs.contested_with, fact_id})),
                        },
                    )
                contested.extend([fact_id, *decision.contest])
            if row["state"] == "current":
                pending[slot].append(
                    CurrentFact(fact_id, value_key(item.object), trust, at, tuple(decision.contest))
                )
        episode_ids: list[str] = []
        for ep in episodes:
            episode_id = new_id("ep")
            emit(
                "memory.episode",
                {
                    "episode": {
                        "episode_id": episode_id,
                        "kind": ep.kind,
                        "text": ep.text,
                        "at": format_time(at),
                        "due": ep.due,
                        "event_id": evidence.id,
                        "session_id": cast(str | None, evidence.payload.get("session_id")),
                    }
                },
            )
            episode_ids.append(episode_id)
        events.append(self.extraction_event(evidence, "ok", None, calls, invalid, notes))
        self.store.append(events)
        return WriteReport(
            evidence_id=evidence.id,
            facts=tuple(added),
            superseded=tuple(superseded),
            reinforced=tuple(reinforced),
            quarantined=tuple(quarantined),
            episodes=tuple(episode_ids),
            contested=tuple(dict.fromkeys(contested)),
            invalid=tuple(invalid),
            llm_calls=calls,
            ungrounded=tuple(ungrounded),
        )

    def _opposed(
        self,
        user_id: str,
        subject_key: str,
        relation: Relation | None,
        item: FactItem,
        pending: Mapping[tuple[str, str], list[CurrentFact]],
        closed: set[str],
    ) -> tuple[CurrentFact, bool] | None:
        """A current fact of the opposite relation with the same value (``uses_tool vim``
        against ``avoids_tool vim``), and whether it came from this same evidence."""
        if relation is None or relation.opposite is None:
            return None
        key = value_key(item.object)
        for fact in pending.get((subject_key, relation.opposite), []):
            if fact.value_key == key and fact.id not in closed:
                return fact, True
        for fact in self._current(user_id, subject_key, relation.opposite, value=key):
            if fact.id not in closed:
                return fact, False
        return None

    def _author_for(self, prepared: Prepared, item: FactItem) -> Author:
        """In a conversation, the author of a fact is the author of the message its value came
        from; when no single message contains it, the weakest author present (weakest link)."""
        if len(prepared.roles) == 1:
            return prepared.author
        needle = item.object.casefold()
        holders: list[Author] = [a for a, c in prepared.roles if needle and needle in c.casefold()]
        if holders:
            return min(holders, key=authority_key)
        return prepared.author

    def _current(
        self,
        user_id: str,
        subject_key: str,
        relation: str,
        *,
        value: str | None = None,
        target: str | None = None,
    ) -> list[CurrentFact]:
        where: dict[str, object] = {
            "subject_key": subject_key,
            "relation": relation,
            "state": "current",
        }
        if value is None:
            rows = self.store.fetch(FACTS, scope=user_id, where=where)
        else:
            rows = self.store.fetch(FACTS, scope=user_id, where={**where, "object_key": value})
            if target:
                rows += self.store.fetch(FACTS, scope=user_id, where={**where, "fact_id": target})
        return [
            CurrentFact(
                str(r["fact_id"]),
                str(r["object_key"]),
                int(cast(int, r["trust"])),
                parse_time(str(r["valid_from"])),
                tuple(cast(list[str], r["contested_with"] or [])),
            )
            for r in rows
        ]

    def _object_of(
        self, user_id: str, fact_id: str, pending: Mapping[str, Mapping[str, JSONValue]]
    ) -> str:
        if fact_id in pending:
            return str(pending[fact_id]["object"])
        rows = self.store.fetch(FACTS, scope=user_id, where={"fact_id": fact_id})
        return str(rows[0]["object"]) if rows else ""

    # ---- reads --------------------------------------------------------------------------


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


def _jsonable(value: object) -> JSONValue:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_jsonable(v) for v in cast(list[object], value)]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in cast(dict[object, object], value).items()}
    return repr(value)
