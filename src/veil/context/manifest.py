"""The manifest: what is loaded, in a bounded share of the window. Pure.

Budget-aware: a line of counts (what is in the prompt, in warm and cold memory, the window's
fill and the threshold), then rows of the loaded items — pinned first, then by score — and the
pointers of the items that left the prompt most recently (what the model may want back), as many
as fit ``max_tokens``. Contradictions and notes (the convergence note) are always shown: they
are what the model must act on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from veil.context.items import ContextItem

if TYPE_CHECKING:
    from veil.context.workingset import WorkingSet

MANIFEST_OPEN = "<veil-manifest>"
MANIFEST_CLOSE = "</veil-manifest>"


@dataclass(frozen=True)
class ManifestRow:
    id: str
    kind: str
    tokens: int
    score: float
    pinned: bool
    label: str


@dataclass(frozen=True)
class EvictedRow:
    label: str
    pointer: str


def render_manifest(
    rows: Sequence[ManifestRow],
    *,
    threshold: float,
    live_tokens: int,
    budget: int,
    warm: int,
    cold: int,
    conflicts: Sequence[str],
    notes: Sequence[str] = (),
    max_items: int = 40,
    evicted: Sequence[EvictedRow] = (),
    max_tokens: int | None = None,
    count_tokens: Callable[[str], int] = lambda s: len(s) // 4,
    expand: str | None = None,
) -> str:
    """The manifest text; rows are added while the whole stays within ``max_tokens`` (the
    count line, contradictions and notes always come). ``expand``: the expand tool as the
    model sees it (None: it has none)."""
    fill = live_tokens / budget if budget else 0.0
    how = f"{expand} restores a pointer" if expand else "no expand tool: run a call again"
    head = [
        MANIFEST_OPEN,
        f"loaded: {live_tokens:,}/{budget:,} tokens of the conversation's budget ({fill:.0%}); "
        f"threshold T={threshold:.3f}; "
        f"{len(rows)} items loaded, warm {warm}, cold {cold} ({how})",
    ]
    tail: list[str] = []
    if conflicts:
        tail.append("unresolved contradictions (settle with veil_conflicts / veil_resolve):")
        tail.extend(f"- {c}" for c in conflicts)
    tail.extend(notes)
    tail.append(MANIFEST_CLOSE)
    room = None if max_tokens is None else max_tokens - count_tokens("\n".join(head + tail))
    body: list[str] = []

    def add(line: str) -> bool:
        nonlocal room
        cost = count_tokens(line) + 1
        if room is not None and cost > room:
            return False
        body.append(line)
        if room is not None:
            room -= cost
        return True

    ordered = sorted(rows, key=lambda r: (not r.pinned, -r.score, r.id))
    shown = 0
    for row in ordered[:max_items]:
        pin = " pinned" if row.pinned else ""
        if not add(f"- {row.id} {row.kind} {row.tokens}t score={row.score:.2f}{pin} {row.label}"):
            break
        shown += 1
    if evicted:
        listed = 0
        if add("left the prompt most recently:"):
            for row in evicted:
                if not add(f"- {row.label} {row.pointer}"):
                    break
                listed += 1
            if not listed:
                body.pop()
    if len(ordered) > shown:
        add(f"- … and {len(ordered) - shown} more loaded items")
    return "\n".join(head + body + tail)


def label(item: ContextItem) -> str:
    """An item in a few words: its call and target, else the head of its content."""
    if item.target:
        text = f"{item.tool_name or ''} {item.target}".strip()
    else:
        text = item.content.replace("\n", " ")
    return text[:60]


def manifest_of(
    ws: WorkingSet,
    *,
    tick: int,
    threshold: float,
    budget: int,
    conflicts: Sequence[str],
    notes: Sequence[str] = (),
) -> str:
    """The manifest of a working set at ``tick``: every live item as a row (with its score),
    the latest items that left the prompt (turns aside) as pointers, within the window share
    the set's config allows."""
    config = ws.config
    values = ws.scores(tick)
    rows = [
        ManifestRow(
            i.id, i.turn_kind or i.kind, i.tokens, float(values[ws.row(i.id)]), i.pinned, label(i)
        )
        for i in ws.items.values()
        if i.tier == "live"
    ]
    gone = sorted(
        (i for i in ws.items.values() if i.tier != "live" and i.kind != "turn"),
        key=lambda i: -i.created_tick,
    )[: config.manifest_evicted]
    return render_manifest(
        rows,
        threshold=threshold,
        live_tokens=ws.live_tokens(),
        budget=budget,
        warm=int(ws.cols.flag("warm").sum()),
        cold=sum(1 for i in ws.items.values() if i.tier == "cold"),
        conflicts=conflicts,
        notes=notes,
        max_items=config.manifest_max_items,
        evicted=[EvictedRow(label(i), i.pointer) for i in gone],
        max_tokens=max(64, int(config.manifest_max_share * config.request_budget)),
        count_tokens=ws.count_tokens,
        expand=config.expand_tool,
    )
