"""Context items: everything that can sit in the model's context window, as values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ItemKind = Literal[
    "file",
    "tool_output",
    "message",
    "turn",
    "fact",
    "procedural",
    "decision",
    "intent",
    "correction",
    "plan",
]
TurnKind = Literal["intent", "correction", "decision", "action", "status", "exploration"]
Tier = Literal["live", "warm", "cold"]
Effect = Literal["read", "read_part", "write"]
"""What the tool call behind an item did to a file: read it whole, read part of it, wrote it."""
ITEM_KINDS: tuple[ItemKind, ...] = (
    "file",
    "tool_output",
    "message",
    "turn",
    "fact",
    "procedural",
    "decision",
    "intent",
    "correction",
    "plan",
)
TURN_KINDS: tuple[TurnKind, ...] = (
    "intent",
    "correction",
    "decision",
    "action",
    "status",
    "exploration",
)
NEVER_EVICTED: frozenset[str] = frozenset({"intent", "correction"})
"""Kinds with eviction weight 0: never candidates, whatever they score."""


@dataclass(frozen=True)
class ContextItem:
    id: str
    kind: ItemKind
    content: str
    tokens: int
    tags: tuple[str, ...] = ()
    code_refs: tuple[str, ...] = ()
    pinned: bool = False
    manual: bool = False
    stability: float = 1.0
    """Live-horizon stability, in (session) days."""
    difficulty: float = 5.0
    last_access_tick: int = 0
    access_count: int = 1
    cognitive_weight: float = 0.0
    """In [-1, 1]: was this item in use when steps passed (+) or failed (−)."""
    tier: Tier = "live"
    turn_kind: TurnKind | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    target: str | None = None
    """What the item is about: a path for reads, the command for shell runs."""
    session_id: str | None = None
    created_tick: int = 0
    manual_tick: int | None = None
    durable_stability: float = 1.0
    """Durable-horizon stability in wall-clock days (for warm → cold)."""
    last_access_at: str | None = None
    """Wall-clock time of the last access (ISO), for the durable horizon."""
    effect: Effect | None = None
    """For a tool result: what its call did to the file named by ``code_refs[0]``."""
    parent: str | None = None
    """For a tool result: the turn item of the assistant message that made the call. A turn and
    its results that are all out of the prompt leave it together (one note for a run of them,
    as truncation would drop them, but addressable)."""
    excerpt: int = 0
    """For a result too large to fit the window even alone: the characters of its head and
    tail kept in the prompt (its stub), the whole text being warm. 0: a one-line stub."""
    partial: bool = False
    """For a result its tool truncated: the prompt shows the tool's shortened text (what the
    model was given; ``tokens`` counts it) while ``content`` is the full output. Expanding the
    item shows the full output and clears this."""

    @property
    def pointer(self) -> str:
        return f"veil://{'cold' if self.tier == 'cold' else 'warm'}/{self.id}"

    @property
    def stub_pointer(self) -> str:
        """The pointer a stub carries: where every item goes when it leaves the prompt (warm).
        It stays the stub's when the item goes cold — every form of a pointer resolves by the
        item's id — so a stub already sent never changes."""
        return f"veil://warm/{self.id}"
