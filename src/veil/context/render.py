"""What the model sees: evicted items replaced by one-line stubs. Pure.

A stub names the tool, its target and the size, and gives the pointer that ``veil_expand``
resolves. Stub text depends only on the item, never on the turn, so providers' prompt caches
keep working across turns.
"""

from __future__ import annotations

from veil.context.items import ContextItem


def stub(item: ContextItem, max_chars: int = 160) -> str:
    what = item.tool_name or item.kind
    target = (item.target or "").replace("\n", " ")
    if len(target) > 80:
        target = target[:77] + "..."
    about = f" {target}" if target else ""
    text = (
        f"[veil: {what}{about} — {item.tokens:,} tokens moved to {item.tier} memory; "
        f"veil_expand {item.pointer} restores it]"
    )
    return text if len(text) <= max_chars + 80 else text[: max_chars + 77] + "...]"


def turn_stub(item: ContextItem) -> str:
    """What an evicted conversation turn becomes in the transcript."""
    return (
        f"[veil: earlier {item.turn_kind or 'turn'} moved to {item.tier} memory; "
        f"veil_expand {item.pointer} restores it]"
    )
