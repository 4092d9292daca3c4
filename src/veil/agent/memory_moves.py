"""What working memory moved, as the events the loop yields: the items a turn boundary took out
of the prompt (:class:`~veil.agent.events.Evicted`, from the engine's eviction report) and the
ones the model brought back (:class:`~veil.agent.events.Expanded`). Print mode, the TUI and
``--json`` show them; nothing here decides anything.
"""

from __future__ import annotations

from veil.agent.events import Evicted, EvictedItem, Expanded
from veil.context import ContextEngine, EvictionReport
from veil.context.items import ContextItem


def what(item: ContextItem) -> str:
    """An item in a few words: its tool (or turn kind, or kind) and its target."""
    return f"{item.tool_name or item.turn_kind or item.kind} {item.target or ''}".strip()


def evicted(engine: ContextEngine, report: EvictionReport, turn: int) -> Evicted | None:
    """The items ``report`` moved out of the prompt (None when none left it)."""
    out: list[EvictedItem] = []
    for move in report.moves:
        if move.to == "live":
            continue
        item = engine.item(move.id)
        where = (move.to, move.stage, item.pointer, item.tool_call_id)
        out.append(EvictedItem(item.id, what(item), item.tokens, *where))
    if not out:
        return None
    return Evicted(
        turn, tuple(out), report.threshold_after, report.live_tokens_after, report.budget
    )


def expanded(engine: ContextEngine, item_id: str, turn: int) -> Expanded:
    """The item ``item_id`` came back into the prompt."""
    item = engine.item(item_id)
    return Expanded(turn, item.id, what(item), item.tokens)
