"""Bringing an item back: pointers, and the verbs that return an item to the prompt.

Nothing is dropped from working memory, so anything that left the prompt can come back, byte
for byte. A pointer (``veil://warm/<id>``, ``veil://cold/<id>``, ``veil://live/<id>``), a bare
item id or the id of the tool call whose result an item holds all name the same item
(:func:`pointer_id`); an item of another session of the same project is adopted when named,
never one of another project.

:class:`RestoreVerbs` is a layer of :class:`~veil.context.engine.ContextEngine` over
:class:`~veil.context.working_memory.WorkingMemory`:

- :meth:`~RestoreVerbs.expand` brings an item back live (a truncated result: its full output).
  Coming back is a regret — T halves — and the item is protected for ``manual_protect_ticks``,
  so window pressure does not stub it again before the model has read it;
- :meth:`~RestoreVerbs.load` is an expansion by hand: it also counts ×1.5;
- :meth:`~RestoreVerbs.pin` keeps an item live above any threshold (expanding it first).
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


class RestoreVerbs(WorkingMemory):
    """Resolving pointers and bringing items back (see the module docstring)."""

    def resolve_pointer(self, pointer_or_id: str) -> ContextItem:
        item_id = pointer_id(pointer_or_id)
        # A tool-call id names the item holding that call's result (models know those ids).
        item_id = self._set.call_item(item_id) or item_id
        item = self._set.items.get(item_id) or self._load_foreign(item_id)
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
        item = self.resolve_pointer(pointer_or_id)
        was_out = restoring(item)
        if item.partial:
            item = self._whole(item)
        if item.tier != "live":
            self._regret(item.id, "expanded")
            item = self._move(item, "live", stage=0, reason="expanded")
        if was_out:
            item = replace(item, manual_tick=self.tick)
            self._set.update(item)
            self._emit(events.MANUAL, events.Manual(item.id, self.tick, protect_only=True))
        return self.touch(item.id)

    def _whole(self, item: ContextItem) -> ContextItem:
        """A truncated result's full output is asked for: the item shows it from now on."""
        updated = replace(item, partial=False, tokens=self.count_tokens(item.content))
        self._set.update(updated)
        self._looks_changed.add(item.id)
        self._emit(events.WHOLE, events.Whole(item.id, updated.tokens))
        return updated

    def load(self, pointer_or_id: str) -> ContextItem:
        """Load an item by hand: it comes back live, counts ×1.5 and is protected a few ticks."""
        item = self.expand(pointer_or_id)
        updated = replace(item, manual=True, manual_tick=self.tick)
        self._set.cols.f["manual_tick"][self._set.row(item.id)] = self.tick
        self._set.update(updated)
        self._emit(events.MANUAL, events.Manual(item.id, self.tick))
        return updated

    def pin(self, item_id: str, pinned: bool = True) -> ContextItem:
        item = self.item(item_id)
        if item.tier != "live" and pinned:
            item = self.expand(item_id)
        updated = replace(item, pinned=pinned)
        self._set.update(updated)
        self._emit(events.PIN, events.Pinned(item.id, pinned))
        return updated

    def unpin(self, item_id: str) -> ContextItem:
        return self.pin(item_id, False)


__all__ = ["POINTER", "RestoreVerbs", "pointer_id", "restoring"]
