"""Bringing an item back: pointers, and the verbs that return an item to the prompt.

Nothing is dropped from working memory, so anything that left the prompt can come back, byte
for byte. A pointer (``veil://warm/<id>``, ``veil://cold/<id>``, ``veil://live/<id>``), a bare
item id or the id of the tool call whose result an item holds all name the same item
(:func:`pointer_id`); an item of another session of the same project is adopted when named,
never one of another project.

:class:`Restorer` is the part of :class:`~veil.context.engine.ContextEngine` that does it, over
the session's :class:`~veil.context.working_memory.WorkingMemory` (every change through it):

- :meth:`~Restorer.expand` brings an item back live (a truncated result: its full output).
  Coming back is a regret — T halves — and the item is protected for ``manual_protect_ticks``,
  so window pressure does not stub it again before the model has read it;
- :meth:`~Restorer.load` is an expansion by hand: it also counts ×1.5;
- :meth:`~Restorer.pin` keeps an item live above any threshold (expanding it first).
"""

from __future__ import annotations

import re
from dataclasses import replace

from veil.context import events
from veil.context.items import ContextItem
from veil.context.working_memory import UnknownItem, WorkingMemory

POINTER = re.compile(r"^veil://(warm|cold|live)/([A-Za-z0-9_\-]+)$")


def pointer_id(pointer_or_id: str) -> str:
    """The item id a pointer names (anything else is taken as an id already)."""
    match = POINTER.match(pointer_or_id.strip())
    return match.group(2) if match else pointer_or_id.strip()


def restoring(item: ContextItem) -> bool:
    """Whether expanding ``item`` brings something into the prompt that is not there: it is
    out of it, or only its truncated output is in it."""
    return item.tier != "live" or item.partial


class Restorer:
    """Resolving pointers and bringing items back in ``memory`` (see the module docstring)."""

    def __init__(self, memory: WorkingMemory) -> None:
        self.memory = memory

    def resolve_pointer(self, pointer_or_id: str) -> ContextItem:
        item_id = pointer_id(pointer_or_id)
        ws = self.memory.working_set
        # A tool-call id names the item holding that call's result (models know those ids).
        item_id = ws.call_item(item_id) or item_id
        item = ws.items.get(item_id) or self.memory.adopt(item_id)
        if item is None:
            raise UnknownItem(f"{pointer_or_id!r} names no item of this project's memory")
        return item

    def restores(self, pointer_or_id: str) -> bool:
        """Whether expanding this pointer would bring something into the prompt that is not
        there: the item is out of it, or only its truncated output is in it."""
        return restoring(self.resolve_pointer(pointer_or_id))

    def expand(self, pointer_or_id: str) -> ContextItem:
        """Bring an evicted item back live, byte-identical (a truncated result: its full
        output). Coming back is a regret: T halves. It is protected for
        ``manual_protect_ticks`` like a load by hand (without the ×1.5), so that window
        pressure does not stub it again before the model has read it."""
        memory = self.memory
        item = self.resolve_pointer(pointer_or_id)
        was_out = restoring(item)
        if item.partial:
            item = self._whole(item)
        if item.tier != "live":
            memory.regret(item.id, "expanded")
            item = memory.move(item, "live", stage=0, reason="expanded")
        if was_out:
            item = replace(item, manual_tick=memory.tick)
            memory.update(item)
            memory.emit(events.MANUAL, events.Manual(item.id, memory.tick, protect_only=True))
        return memory.touch(item.id)

    def _whole(self, item: ContextItem) -> ContextItem:
        """A truncated result's full output is asked for: the item shows it from now on."""
        memory = self.memory
        updated = replace(item, partial=False, tokens=memory.count_tokens(item.content))
        memory.update(updated, look_changed=True)
        memory.emit(events.WHOLE, events.Whole(item.id, updated.tokens))
        return updated

    def load(self, pointer_or_id: str) -> ContextItem:
        """Load an item by hand: it comes back live, counts ×1.5 and is protected a few ticks."""
        memory = self.memory
        item = self.expand(pointer_or_id)
        updated = replace(item, manual=True, manual_tick=memory.tick)
        ws = memory.working_set
        ws.cols.f["manual_tick"][ws.row(item.id)] = memory.tick
        memory.update(updated)
        memory.emit(events.MANUAL, events.Manual(item.id, memory.tick))
        return updated

    def pin(self, item_id: str, pinned: bool = True) -> ContextItem:
        memory = self.memory
        item = memory.item(item_id)
        if item.tier != "live" and pinned:
            item = self.expand(item_id)
        updated = replace(item, pinned=pinned)
        memory.update(updated)
        memory.emit(events.PIN, events.Pinned(item.id, pinned))
        return updated

    def unpin(self, item_id: str) -> ContextItem:
        return self.pin(item_id, False)


__all__ = ["POINTER", "Restorer", "pointer_id", "restoring"]
