"""Context items and beliefs as tape payloads and projection rows (and back), each through its
one codec (:mod:`veil.tape.codec`). The events that carry them, and the payloads of the events
that change an item, are declared in :mod:`veil.context.events`."""

from __future__ import annotations

from veil.context.conflicts import Belief
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
