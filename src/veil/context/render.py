"""What the model sees: evicted items replaced by one-line stubs. Pure.

A stub names the tool, its target and the size, and gives the pointer that ``veil_expand``
resolves. Stub text depends only on the item, never on the turn, so providers' prompt caches
keep working across turns.
"""

from __future__ import annotations

from collections.abc import Sequence

from veil.context.items import ContextItem

EXPAND = "veil_expand"
"""The tool a stub names for restoring (Veil's own; the proxy's agents call the ``expand`` tool
of Veil's MCP server)."""


def stub(item: ContextItem, max_chars: int = 160, tool: str = EXPAND) -> str:
    """The one-line stub of an evicted item — or, for a result clipped because it could not
    fit (``item.excerpt``), its head and tail around a line that says what is left out."""
    if item.excerpt:
        return excerpt(item, tool)
    what = item.tool_name or item.kind
    target = (item.target or "").replace("\n", " ")
    if len(target) > 80:
        target = target[:77] + "..."
    about = f" {target}" if target else ""
    text = (
        f"[veil: {what}{about} — {item.tokens:,} tokens moved to {item.tier} memory; "
        f"{tool} {item.pointer} restores it]"
    )
    return text if len(text) <= max_chars + 80 else text[: max_chars + 77] + "...]"


def excerpt(item: ContextItem, tool: str = EXPAND) -> str:
    """Head and tail of a result (``item.excerpt`` characters in all, cut at line ends)."""
    half = max(1, item.excerpt // 2)
    text = item.content
    head = text[:half]
    head = head[: head.rfind("\n") + 1] or head
    tail = text[-half:]
    tail = tail[tail.find("\n") + 1 :] or tail
    omitted = max(0, len(text) - len(head) - len(tail))
    note = (
        f"[veil: {omitted:,} characters of this output are left out here (it is larger than "
        f"the context window); {tool} {item.pointer} returns all of it]"
    )
    return f"{head}{note}\n{tail}"


RANGE_POINTERS = 5
"""Pointers listed in a collapsed run's note (the newest; veil_recall finds the others)."""


def range_note(results: Sequence[ContextItem], tokens: int, steps: int, tool: str = EXPAND) -> str:
    """The note standing for a run of ``steps`` steps out of the prompt (their turns and the
    ``results`` of their calls, ``tokens`` in all)."""
    shown = [f"{i.tool_name or i.kind} {(i.target or '')[:60]} {i.pointer}" for i in results]
    listed = "; ".join(shown[-RANGE_POINTERS:])
    more = len(shown) - RANGE_POINTERS
    extra = f"; {more} more (veil_recall finds them)" if more > 0 else ""
    return (
        f"[veil: {steps} earlier step{'s' if steps != 1 else ''} ({tokens:,} tokens) "
        f"moved to warm memory: {listed}{extra}. {tool} a pointer restores one]"
    )


def turn_stub(item: ContextItem, tool: str = EXPAND) -> str:
    """What an evicted conversation turn becomes in the transcript."""
    return (
        f"[veil: earlier {item.turn_kind or 'turn'} moved to {item.tier} memory; "
        f"{tool} {item.pointer} restores it]"
    )


def shown_elsewhere(item: ContextItem) -> str:
    """What an entry says when its item is in full at an earlier place of the conversation
    (the model asked to expand an item that was already there)."""
    what = f"{item.tool_name or item.turn_kind or item.kind} {item.target or ''}".strip()
    return f"[veil: {what} ({item.tokens:,} tokens) is shown in full above; {item.pointer}]"
