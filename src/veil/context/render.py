"""What the model sees: evicted items replaced by one-line stubs. Pure.

A stub names the tool, its target and the size, and gives the pointer that the expand tool
resolves. This layer knows no surface: the expand tool's name, as the model sees it, is given by
the caller (``ContextConfig.expand_tool``, which each surface sets); without one a stub gives
the pointer and says to run the call again. Stub text depends only on the item, never on the
turn or its tier, so providers' prompt caches keep working across turns.
"""

from __future__ import annotations

from collections.abc import Sequence

from veil.context.items import ContextItem


def restore_hint(pointer: str, tool: str | None) -> str:
    """How a stub says to get its item back: the expand tool as the model sees it, with the
    pointer; without one (an agent given no expand tool), the pointer and to run the call again."""
    if tool:
        return f"{tool} {pointer} restores it"
    return f"{pointer}; no expand tool here: run the call again to see it"


STUB_TARGET_CHARS = 40
"""Characters of a call's target (a path, a command) a stub repeats by default."""


def stub(item: ContextItem, target_chars: int = STUB_TARGET_CHARS, tool: str | None = None) -> str:
    """The one-line stub of an evicted item — or, for a result clipped when the provider refused
    the request as too long (``item.excerpt``), its head and tail around a line that says so.

    The text depends on the item alone, never on its tier or the turn: a result sent as a stub
    is sent as the same bytes until it is restored, whether it is warm or cold by then (its
    pointer, :attr:`~veil.context.items.ContextItem.stub_pointer`, resolves either way).

    It is short — every stub costs its tokens in every later request — and repeats at most
    ``target_chars`` of what the call addressed (0 where the call, arguments and all, is sent
    right before it, as through the proxy)."""
    if item.excerpt:
        return excerpt(item, tool)
    what = item.tool_name or item.kind
    target = " ".join((item.target or "").split())
    if len(target) > target_chars:
        target = target[: max(0, target_chars - 1)].rstrip() + "…" if target_chars else ""
    about = f" {target}" if target else ""
    return (
        f"[veil: {what}{about} — {item.tokens:,} tokens out of the prompt; "
        f"{restore_hint(item.stub_pointer, tool)}]"
    )


def excerpt(item: ContextItem, tool: str | None = None) -> str:
    """Head and tail of a result (``item.excerpt`` characters in all, cut at line ends): what a
    result too large to fit is sent as after the provider refused the request as too long."""
    half = max(1, item.excerpt // 2)
    text = item.content
    head = text[:half]
    head = head[: head.rfind("\n") + 1] or head
    tail = text[-half:]
    tail = tail[tail.find("\n") + 1 :] or tail
    omitted = max(0, len(text) - len(head) - len(tail))
    how = f"{tool} {item.stub_pointer} returns all of it" if tool else item.stub_pointer
    note = (
        f"[veil: the provider refused this request as too long; {omitted:,} characters of this "
        f"output are left out here; {how}]"
    )
    return f"{head}{note}\n{tail}"


RANGE_POINTERS = 5
"""Pointers listed in a collapsed run's note (the newest; veil_recall finds the others)."""


def range_note(
    results: Sequence[ContextItem], tokens: int, steps: int, tool: str | None = None
) -> str:
    """The note standing for a run of ``steps`` steps out of the prompt (their turns and the
    ``results`` of their calls, ``tokens`` in all)."""
    shown = [f"{i.tool_name or i.kind} {(i.target or '')[:60]} {i.stub_pointer}" for i in results]
    listed = "; ".join(shown[-RANGE_POINTERS:])
    more = len(shown) - RANGE_POINTERS
    extra = f"; {more} more (veil_recall finds them)" if more > 0 else ""
    return (
        f"[veil: {steps} earlier step{'s' if steps != 1 else ''} ({tokens:,} tokens) "
        f"moved out of the prompt: {listed}{extra}. "
        f"{f'{tool} a pointer restores one' if tool else 'run a call again to see it'}]"
    )


def turn_stub(item: ContextItem, tool: str | None = None) -> str:
    """What an evicted conversation turn becomes in the transcript (the same bytes until it is
    restored, as :func:`stub`)."""
    return (
        f"[veil: earlier {item.turn_kind or 'turn'} moved out of the prompt; "
        f"{restore_hint(item.stub_pointer, tool)}]"
    )


def shown_elsewhere(item: ContextItem) -> str:
    """What an entry says when its item is in full at an earlier place of the conversation
    (the model asked to expand an item that was already there)."""
    what = f"{item.tool_name or item.turn_kind or item.kind} {item.target or ''}".strip()
    return f"[veil: {what} ({item.tokens:,} tokens) is shown in full above; {item.stub_pointer}]"
