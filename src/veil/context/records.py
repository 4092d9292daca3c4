"""Context items and conflicts as tape payloads and projection rows (and back)."""

from __future__ import annotations

from typing import cast

from veil.context.conflicts import Belief, Conflict
from veil.context.items import ContextItem, Effect, ItemKind, Tier, TurnKind
from veil.tape import JSONValue, Row


def item_payload(item: ContextItem) -> dict[str, JSONValue]:
    return {
        "item_id": item.id,
        "session_id": item.session_id,
        "kind": item.kind,
        "content": item.content,
        "tokens": item.tokens,
        "tags": list(item.tags),
        "code_refs": list(item.code_refs),
        "pinned": item.pinned,
        "manual": item.manual,
        "manual_tick": item.manual_tick,
        "stability": item.stability,
        "difficulty": item.difficulty,
        "durable_stability": item.durable_stability,
        "last_access_tick": item.last_access_tick,
        "last_access_at": item.last_access_at,
        "access_count": item.access_count,
        "cognitive_weight": item.cognitive_weight,
        "tier": item.tier,
        "turn_kind": item.turn_kind,
        "tool_call_id": item.tool_call_id,
        "tool_name": item.tool_name,
        "target": item.target,
        "created_tick": item.created_tick,
        "effect": item.effect,
        "parent": item.parent,
        "excerpt": item.excerpt,
    }


def item_from_row(row: Row) -> ContextItem:
    def opt(name: str) -> str | None:
        value = row[name]
        return None if value is None else str(value)

    return ContextItem(
        id=str(row["item_id"]),
        kind=cast(ItemKind, row["kind"]),
        content=str(row["content"]),
        tokens=int(cast(int, row["tokens"])),
        tags=tuple(cast(list[str], row["tags"] or [])),
        code_refs=tuple(cast(list[str], row["code_refs"] or [])),
        pinned=bool(row["pinned"]),
        manual=bool(row["manual"]),
        manual_tick=int(cast(int, row["manual_tick"])) if row["manual_tick"] is not None else None,
        stability=float(cast(float, row["stability"])),
        difficulty=float(cast(float, row["difficulty"])),
        durable_stability=float(cast(float, row["durable_stability"])),
        last_access_tick=int(cast(int, row["last_access_tick"])),
        last_access_at=opt("last_access_at"),
        access_count=int(cast(int, row["access_count"])),
        cognitive_weight=float(cast(float, row["cognitive_weight"] or 0.0)),
        tier=cast(Tier, row["tier"]),
        turn_kind=cast(TurnKind | None, row["turn_kind"]),
        tool_call_id=opt("tool_call_id"),
        tool_name=opt("tool_name"),
        target=opt("target"),
        session_id=opt("session_id"),
        created_tick=int(cast(int, row["created_tick"])),
        effect=cast(Effect | None, row.get("effect")),
        parent=cast(str | None, row.get("parent")),
        excerpt=int(cast(int, row.get("excerpt") or 0)),
    )


def conflict_payload(conflict: Conflict, session_id: str) -> dict[str, JSONValue]:
    def belief(b: Belief) -> dict[str, JSONValue]:
        return {
            "item_id": b.item_id,
            "subject": b.subject,
            "relation": b.relation,
            "value": b.value,
            "tool_call_id": b.tool_call_id,
            "session_id": b.session_id,
        }

    return {
        "id": conflict.id,
        "session_id": session_id,
        "subject": conflict.subject,
        "relation": conflict.relation,
        "a": belief(conflict.a),
        "b": belief(conflict.b),
    }
