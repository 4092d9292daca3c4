"""The working memory's projection of the tape (``.veil/context.db``).

``context.item`` carries the full content, so an evicted item is restored byte-identical from
the tape; warm and cold items are indexed for search (FTS5 + vectors) and live ones are not
(they are in the prompt already). Turn embeddings live in the engine's memory only (they are
recomputed on resume); version 5 dropped the ``ctx_turn_vec`` index nothing read; version 6
takes the item's columns from its codec (field order), so a field added to the dataclass is
stored without being written out here; version 7 stores a truncated result's full output with
its item (``partial``) and the session's token calibration.
"""

from __future__ import annotations

from typing import cast

from veil.context import events
from veil.context.records import ITEM_CODEC
from veil.tape import (
    Column,
    Event,
    IndexText,
    IndexVector,
    JSONValue,
    Op,
    Patch,
    Put,
    Table,
    TextIndex,
    VectorIndex,
)

ITEMS = "ctx_items"
CONFLICTS = "ctx_conflicts"
STATE = "ctx_state"
ITEMS_TEXT = "ctx_text"
ITEMS_VEC = "ctx_vec"

ITEM_COLUMNS = (
    *ITEM_CODEC.columns(),
    Column("seq", "int"),
    Column("indexed", "bool"),
)
ITEM_FIELDS = tuple(c.name for c in ITEM_COLUMNS)


class ContextProjection:
    name = "context"
    version = 7
    tables = (
        Table(
            ITEMS,
            ITEM_COLUMNS,
            key=("item_id",),
            indexes=(("session_id", "tier"), ("target",), ("tool_call_id",)),
        ),
        Table(
            CONFLICTS,
            (
                Column("conflict_id", "text", nullable=False),
                Column("session_id", "text"),
                Column("subject", "text"),
                Column("relation", "text"),
                Column("a", "json"),
                Column("b", "json"),
                Column("resolved", "bool"),
                Column("kept", "text"),
                Column("reason", "text"),
                Column("actor", "text"),
            ),
            key=("conflict_id",),
            indexes=(("session_id", "resolved"),),
        ),
        Table(
            STATE,
            (
                Column("session_id", "text", nullable=False),
                Column("tick", "int"),
                Column("threshold", "real"),
                Column("last_regret_tick", "int"),
                Column("task", "text"),
                Column("turns", "int"),
                Column("ratio", "real"),
                Column("samples", "int"),
            ),
            key=("session_id",),
        ),
    )
    text_indexes = (TextIndex(ITEMS_TEXT),)
    vector_indexes = (VectorIndex(ITEMS_VEC),)

    def apply(self, event: Event) -> list[Op]:
        p = event.payload
        scope = event.scope
        kind = event.kind
        if kind == events.ITEM.name:
            item = cast(dict[str, JSONValue], p["item"])
            row: dict[str, JSONValue] = {"scope": scope, **{k: item.get(k) for k in ITEM_FIELDS}}
            row["seq"] = event.seq
            return [Put(ITEMS, row)]
        key = {"scope": scope, "item_id": p.get("id")}
        if kind == events.ACCESS.name:
            return [
                Patch(
                    ITEMS,
                    key,
                    {
                        "last_access_tick": p["tick"],
                        "last_access_at": p["at"],
                        "access_count": p["access_count"],
                        "stability": p["stability"],
                        "difficulty": p["difficulty"],
                        "durable_stability": p["durable_stability"],
                    },
                )
            ]
        if kind == events.TIER.name:
            excerpt = int(cast(int, p.get("excerpt") or 0))
            ops: list[Op] = [
                Patch(ITEMS, key, {"tier": p["tier"], "indexed": False, "excerpt": excerpt})
            ]
            if p["tier"] == "live":  # back in the prompt: no longer a search result
                ops.append(IndexText(ITEMS_TEXT, scope, str(p["id"]), ""))
                ops.append(IndexVector(ITEMS_VEC, scope, str(p["id"]), ""))
            return ops
        if kind == events.INDEXED.name:
            # Indexing of demoted items is spread over the following calls (a burst of
            # evictions must not stall one tool call); the engine drains it before searching.
            text = str(p.get("search_text") or "")
            return [
                IndexText(ITEMS_TEXT, scope, str(p["id"]), text),
                # Vectors need the gist, not every line: embedding 20k characters per
                # item would dominate the cost for no gain in nearest-neighbour quality.
                IndexVector(ITEMS_VEC, scope, str(p["id"]), text[:1000]),
            ]
        if kind == events.WHOLE.name:  # a truncated result's full output is shown from now on
            return [Patch(ITEMS, key, {"partial": False, "tokens": p["tokens"]})]
        if kind == events.PIN.name:
            return [Patch(ITEMS, key, {"pinned": p["pinned"]})]
        if kind == events.MANUAL.name:
            # protect_only: an expand (protected a few ticks, not counted as a load by hand)
            if p.get("protect_only"):
                return [Patch(ITEMS, key, {"manual_tick": p["tick"]})]
            return [Patch(ITEMS, key, {"manual": True, "manual_tick": p["tick"]})]
        if kind == events.COGNITIVE.name:
            return [
                Patch(ITEMS, {"scope": scope, "item_id": item_id}, {"cognitive_weight": w})
                for item_id, w in cast(dict[str, JSONValue], p["weights"]).items()
            ]
        if kind == events.TURN_KIND.name:
            return [Patch(ITEMS, key, {"turn_kind": p["kind"]})]
        if kind == events.STATE.name:
            return [
                Put(
                    STATE,
                    {
                        "scope": scope,
                        "session_id": p["session_id"],
                        "tick": p["tick"],
                        "threshold": p["threshold"],
                        "last_regret_tick": p.get("last_regret_tick"),
                        "task": p.get("task"),
                        "turns": p.get("turns"),
                        "ratio": p.get("ratio"),
                        "samples": p.get("samples"),
                    },
                )
            ]
        if kind == events.CONFLICT.name:
            c = cast(dict[str, JSONValue], p["conflict"])
            return [
                Put(
                    CONFLICTS,
                    {
                        "scope": scope,
                        "conflict_id": c["id"],
                        "session_id": c.get("session_id"),
                        "subject": c["subject"],
                        "relation": c["relation"],
                        "a": c["a"],
                        "b": c["b"],
                        "resolved": False,
                        "kept": None,
                        "reason": None,
                        "actor": None,
                    },
                )
            ]
        if kind == events.RESOLVED.name:
            return [
                Patch(
                    CONFLICTS,
                    {"scope": scope, "conflict_id": p["id"]},
                    {
                        "resolved": True,
                        "kept": p["kept"],
                        "reason": p["reason"],
                        "actor": p["actor"],
                    },
                )
            ]
        return []
