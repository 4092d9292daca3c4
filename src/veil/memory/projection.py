"""The long-term memory's projection of the tape: evidence, facts, entities, episodes.

Event kinds (declared in :mod:`veil.memory.events`; payloads are complete: ``apply`` never
reads the store): ``memory.evidence`` raw evidence, recorded before any LLM call;
``memory.extraction`` how the extraction went; ``memory.fact`` a new fact with full provenance;
``memory.superseded``, ``memory.reinforced``, ``memory.contested``, ``memory.confirmed``,
``memory.disputed``, ``memory.outcome`` lifecycle changes; ``memory.episode`` an episode.
``apply`` reads the payloads as stored (``dict`` access with defaults), so events written by
any earlier version replay.
"""

from __future__ import annotations

from typing import Any, cast

from veil.memory import events as kinds
from veil.memory.records import FACT_CODEC
from veil.tape import (
    Column,
    Event,
    IndexText,
    IndexVector,
    JSONValue,
    Op,
    Patch,
    Put,
    Remove,
    Table,
    TextIndex,
    VectorIndex,
)

EVIDENCE = "mem_evidence"
FACTS = "mem_facts"
ENTITIES = "mem_entities"
EPISODES = "mem_episodes"
FACTS_TEXT = "mem_facts_text"
FACTS_VEC = "mem_facts_vec"
EPISODES_TEXT = "mem_episodes_text"
EPISODES_VEC = "mem_episodes_vec"
WIKI = "mem_wiki"

FACT_COLUMNS = (*FACT_CODEC.columns(), Column("recorded_seq", "int"))
"""A fact's columns: :class:`~veil.memory.records.FactRecord`'s fields, in order, then the seq
of the event that recorded it."""
FACT_FIELDS = tuple(c.name for c in FACT_COLUMNS)
EPISODE_COLUMNS = (
    Column("episode_id", "text", nullable=False),
    Column("kind", "text"),
    Column("text", "text"),
    Column("at", "time"),
    Column("due", "text"),
    Column("event_id", "text"),
    Column("session_id", "text"),
    Column("recorded_seq", "int"),
    Column("derived_from", "json"),
    Column("consolidated_into", "text"),
)


def fact_search_text(fact: dict[str, Any]) -> str:
    return (
        f"{fact.get('subject', '')} {fact.get('relation', '').replace('_', ' ')} "
        f"{fact.get('object', '')}. {fact.get('statement', '')}"
    )


class MemoryProjection:
    name = "memory"
    version = 5
    tables = (
        Table(
            EVIDENCE,
            (
                Column("event_id", "text", nullable=False),
                Column("author", "text"),
                Column("at", "time"),
                Column("session_id", "text"),
                Column("source", "text"),
                Column("chars", "int"),
                Column("status", "text"),
                Column("error", "text"),
            ),
            key=("event_id",),
        ),
        Table(
            FACTS,
            FACT_COLUMNS,
            key=("fact_id",),
            indexes=(
                ("subject_key", "relation", "state", "last_confirmed_at"),
                ("subject_key", "state", "last_confirmed_at"),
                ("state", "valid_from"),
                ("relation", "state"),
                ("object_key", "state"),
                ("state", "trust", "last_confirmed_at"),
                ("state", "recorded_seq"),
            ),
        ),
        Table(
            ENTITIES,
            (
                Column("key", "text", nullable=False),
                Column("name", "text"),
                Column("first_seen", "time"),
            ),
            key=("key",),
        ),
        Table(
            EPISODES,
            EPISODE_COLUMNS,
            key=("episode_id",),
            indexes=(("at",), ("kind", "due")),
        ),
        Table(
            WIKI,
            (
                Column("section", "text", nullable=False),
                Column("title", "text"),
                Column("text", "text"),
                Column("fact_ids", "json"),
                Column("compiled_at", "time"),
            ),
            key=("section",),
        ),
    )
    text_indexes = (TextIndex(FACTS_TEXT), TextIndex(EPISODES_TEXT))
    vector_indexes = (VectorIndex(FACTS_VEC), VectorIndex(EPISODES_VEC))

    def apply(self, event: Event) -> list[Op]:
        p = event.payload
        scope = event.scope
        kind = event.kind
        if kind == kinds.EVIDENCE.name:
            text = p.get("text")
            return [
                Put(
                    EVIDENCE,
                    {
                        "scope": scope,
                        "event_id": event.id,
                        "author": p.get("author"),
                        "at": event.at.isoformat(),
                        "session_id": p.get("session_id"),
                        "source": p.get("source"),
                        "chars": len(text) if isinstance(text, str) else 0,
                        "status": "pending",
                        "error": None,
                    },
                )
            ]
        if kind == kinds.EXTRACTION.name:
            return [
                Patch(
                    EVIDENCE,
                    {"scope": scope, "event_id": p["evidence_id"]},
                    {"status": p.get("status"), "error": p.get("error")},
                )
            ]
        if kind == kinds.FACT.name:
            fact = cast(dict[str, JSONValue], p["fact"])
            row: dict[str, JSONValue] = {"scope": scope, **{k: fact.get(k) for k in FACT_FIELDS}}
            row["recorded_seq"] = event.seq
            ops: list[Op] = [Put(FACTS, row)]
            if fact.get("subject_key"):
                ops.append(
                    Put(
                        ENTITIES,
                        {
                            "scope": scope,
                            "key": fact["subject_key"],
                            "name": fact.get("subject"),
                            "first_seen": event.at.isoformat(),
                        },
                        keep_existing=True,
                    )
                )
            text = fact_search_text(fact)
            fid = str(fact["fact_id"])
            ops.append(IndexText(FACTS_TEXT, scope, fid, text))
            ops.append(IndexVector(FACTS_VEC, scope, fid, text))
            return ops
        key = {"scope": scope, "fact_id": p.get("fact_id")}
        if kind == kinds.SUPERSEDED.name:
            return [
                Patch(
                    FACTS,
                    key,
                    {
                        "state": "superseded",
                        "valid_to": p["valid_to"],
                        "superseded_by": p.get("by"),
                        "reason": p.get("reason"),
                    },
                )
            ]
        if kind == kinds.REINFORCED.name:
            return [Patch(FACTS, key, {"last_confirmed_at": p["at"]})]
        if kind == kinds.CONTESTED.name:
            return [Patch(FACTS, key, {"contested_with": p["contested_with"]})]
        if kind == kinds.CONFIRMED.name:
            return [
                Patch(
                    FACTS,
                    key,
                    {"last_confirmed_at": p["at"], "state": p["state"], "reason": p.get("reason")},
                )
            ]
        if kind == kinds.DISPUTED.name:
            return [Patch(FACTS, key, {"state": "disputed", "reason": p.get("reason")})]
        if kind == kinds.OUTCOME.name:
            return [Patch(FACTS, key, {"times_used": p["times_used"], "last_outcome": p["ok"]})]
        if kind == kinds.EPISODE.name:
            ep = cast(dict[str, JSONValue], p["episode"])
            eid = str(ep["episode_id"])
            return [
                Put(
                    EPISODES,
                    {
                        "scope": scope,
                        "episode_id": eid,
                        "kind": ep.get("kind"),
                        "text": ep.get("text"),
                        "at": ep.get("at"),
                        "due": ep.get("due"),
                        "event_id": ep.get("event_id"),
                        "session_id": ep.get("session_id"),
                        "recorded_seq": event.seq,
                        "derived_from": ep.get("derived_from") or [],
                        "consolidated_into": None,
                    },
                ),
                IndexText(EPISODES_TEXT, scope, eid, str(ep.get("text") or "")),
                IndexVector(EPISODES_VEC, scope, eid, str(ep.get("text") or "")),
            ]
        if kind == kinds.CONSOLIDATED.name:
            # Episodes folded into a consolidated one: they leave the index, keep their rows.
            ops = []
            for eid in cast(list[str], p["episode_ids"]):
                ops.append(
                    Patch(
                        EPISODES,
                        {"scope": scope, "episode_id": eid},
                        {"consolidated_into": p["into"]},
                    )
                )
                ops.append(IndexText(EPISODES_TEXT, scope, eid, ""))
                ops.append(IndexVector(EPISODES_VEC, scope, eid, ""))
            return ops
        if kind == kinds.WIKI.name:
            ops = [
                Remove(WIKI, {"scope": scope, "section": section})
                for section in cast(list[str], p.get("removed") or [])
            ]
            for page in cast(list[dict[str, JSONValue]], p["sections"]):
                ops.append(
                    Put(
                        WIKI,
                        {
                            "scope": scope,
                            "section": page["section"],
                            "title": page["title"],
                            "text": page["text"],
                            "fact_ids": page["fact_ids"],
                            "compiled_at": p["compiled_at"],
                        },
                    )
                )
            return ops
        return []
