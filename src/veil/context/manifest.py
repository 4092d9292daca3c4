"""The manifest: a compact list of what is loaded, appended to the system prompt. Pure.

Budget-aware: at most ``max_items`` rows (highest score first), with a count of the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

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
) -> str:
    fill = live_tokens / budget if budget else 0.0
    lines = [
        MANIFEST_OPEN,
        f"window: {live_tokens:,}/{budget:,} tokens ({fill:.0%}); threshold T={threshold:.3f}; "
        f"warm {warm}, cold {cold} (veil_expand restores a pointer)",
    ]
    ordered = sorted(rows, key=lambda r: (not r.pinned, -r.score, r.id))
    for row in ordered[:max_items]:
        pin = " pinned" if row.pinned else ""
        lines.append(f"- {row.id} {row.kind} {row.tokens}t score={row.score:.2f}{pin} {row.label}")
    if len(ordered) > max_items:
        lines.append(f"- … and {len(ordered) - max_items} more live items")
    if conflicts:
        lines.append("unresolved contradictions (settle with veil_conflicts / veil_resolve):")
        lines.extend(f"- {c}" for c in conflicts)
    lines.extend(notes)
    lines.append(MANIFEST_CLOSE)
    return "\n".join(lines)
