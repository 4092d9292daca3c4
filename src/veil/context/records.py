"""Context items and conflicts as tape payloads and projection rows (and back), each through
its one codec (:mod:`veil.tape.codec`)."""

from __future__ import annotations

from veil.context.conflicts import Belief, Conflict
from veil.context.items import ContextItem
from veil.tape import JSONValue, Row
from veil.tape.codec import Codec

ITEM_CODEC: Codec[ContextItem] = Codec(
    ContextItem, renames={"id": "item_id"}, times=frozenset({"last_access_at"}), keys=("item_id",)
)
"""A context item as the ``context.item`` payload and a ``ctx_items`` row: one codec."""
BELIEF_CODEC: Codec[Belief] = Codec(Belief)


def item_payload(item: ContextItem) -> dict[str, JSONValue]:
    return ITEM_CODEC.payload(item)


def item_from_row(row: Row) -> ContextItem:
    return ITEM_CODEC.decode(row)


def conflict_payload(conflict: Conflict, session_id: str) -> dict[str, JSONValue]:
    return {
        "id": conflict.id,
        "session_id": session_id,
        "subject": conflict.subject,
        "relation": conflict.relation,
        "a": BELIEF_CODEC.payload(conflict.a),
        "b": BELIEF_CODEC.payload(conflict.b),
    }
