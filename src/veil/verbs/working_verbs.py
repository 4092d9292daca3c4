"""The working memory's verbs: expand and load (any working memory), and the agent's own
context verbs — manifest, pin, evict, conflicts, resolve, mark_turn — over its engine.

Defined once here like the memory verbs (:mod:`veil.verbs.memory_verbs`); ``expand`` is
offered by the agent, ``veil mcp --project`` and both adapters, the rest by the agent alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from veil.verbs.signature import NON_EMPTY
from veil.verbs.verb import Binding, Restored, Services, WorkingMemory, verb

if TYPE_CHECKING:
    from veil.context import ContextEngine
    from veil.context.conflicts import Conflict
    from veil.context.items import ContextItem

TurnKindName = Literal["intent", "correction", "decision", "action", "status", "exploration"]
"""``veil.context.items.TURN_KINDS``, spelt out (a test checks they agree)."""


def _working(on: Services) -> WorkingMemory:
    if on.working is None:
        raise LookupError("no working memory here")
    return on.working


def _engine(on: Services) -> ContextEngine:
    if on.engine is None:
        raise LookupError("no context engine here")
    return on.engine


@verb(needs=("working",), read_only=True, text=lambda r: r.content)
def expand(on: Services, who: Binding, *, pointer: Annotated[str, NON_EMPTY]) -> Restored:
    """Restore an evicted result from its stub's pointer, byte-identical (instead of running
    the tool again).

    Args:
        pointer: The pointer from a stub, veil://warm/… or veil://cold/…, or an item's id.
    """
    return _working(on).expand(pointer.strip())


def _loaded_text(r: Restored) -> str:
    return f"loaded {r.item_id} ({r.tokens} tokens):\n{r.content}"


@verb(needs=("working",), read_only=True, text=_loaded_text)
def load(on: Services, who: Binding, *, pointer: Annotated[str, NON_EMPTY]) -> Restored:
    """Load an item (pointer or id) back into the context by hand.

    Args:
        pointer: The pointer from a stub, veil://warm/… or veil://cold/…, or an item's id.
    """
    return _working(on).load(pointer.strip())


@verb(needs=("engine",), read_only=True, text=str)
def manifest(on: Services, who: Binding) -> str:
    """What is loaded in the context window now, with scores."""
    return _engine(on).manifest()


def _pinned_text(item: ContextItem) -> str:
    return f"{'pinned' if item.pinned else 'unpinned'} {item.id}"


@verb(needs=("engine",), read_only=False, text=_pinned_text)
def pin(
    on: Services, who: Binding, *, id: Annotated[str, NON_EMPTY], pinned: bool = True
) -> ContextItem:
    """Pin an item so it is never evicted (pinned=false unpins).

    Args:
        id: An item's id (ci_…) as the manifest or a stub shows it, or the id of the tool call
            whose result it is (call_…).
        pinned: true pins, false unpins.
    """
    return _engine(on).pin(id, pinned)


def _evicted_text(item: ContextItem) -> str:
    return f"evicted {item.id} to warm memory; {item.pointer} restores it"


@verb(needs=("engine",), read_only=False, text=_evicted_text)
def evict(on: Services, who: Binding, *, id: Annotated[str, NON_EMPTY]) -> ContextItem:
    """Move an item out of the context to warm memory.

    Args:
        id: An item's id (ci_…) as the manifest or a stub shows it, or the id of the tool call
            whose result it is (call_…).
    """
    return _engine(on).evict(id)


def _conflicts_text(found: list[Conflict]) -> str:
    if not found:
        return "no unresolved contradictions"
    return "\n".join(f"- {c.describe()}" for c in found)


@verb(needs=("engine",), read_only=True, text=_conflicts_text)
def conflicts(on: Services, who: Binding) -> list[Conflict]:
    """Unresolved contradictions between beliefs in the context."""
    return list(_engine(on).conflicts())


def _resolved_text(settled: Conflict) -> str:
    return f"resolved {settled.id}: kept {settled.kept}"


@verb(needs=("engine",), read_only=False, text=_resolved_text)
def resolve(
    on: Services,
    who: Binding,
    *,
    conflict_id: Annotated[str, NON_EMPTY],
    keep: Annotated[str, NON_EMPTY],
    reason: Annotated[str, NON_EMPTY],
) -> Conflict:
    """Settle a contradiction: which item to keep and why.

    Args:
        conflict_id: The contradiction's id, as conflicts lists it.
        keep: The id of the item that is right.
        reason: Why, in a sentence.
    """
    return _engine(on).resolve(conflict_id, keep=keep, reason=reason, actor="model")


def _marked_text(item: ContextItem) -> str:
    return f"{item.id} is now a {item.turn_kind} turn"


@verb(needs=("engine",), read_only=False, text=_marked_text)
def mark_turn(
    on: Services, who: Binding, *, id: Annotated[str, NON_EMPTY], kind: TurnKindName
) -> ContextItem:
    """Reclassify a turn (intent, correction, decision, action, status, exploration).

    Args:
        id: The turn's item id, as the manifest shows it.
        kind: What the turn is.
    """
    return _engine(on).mark_turn(id, kind)


__all__ = [
    "conflicts",
    "evict",
    "expand",
    "load",
    "manifest",
    "mark_turn",
    "pin",
    "resolve",
]
