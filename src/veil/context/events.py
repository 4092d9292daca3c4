"""The working memory's event kinds, their payloads, and the builders that take them from values.

:data:`ContextKind` names every kind the context engine appends (through its
:class:`~veil.context.writer.ContextWriter`); each has one frozen payload dataclass and one
:class:`~veil.tape.kinds.EventKind`, registered with the tape when this module is imported
(the engine's modules import it to build their events). :mod:`veil.context.projection` reads
them back — as stored, so events written by any earlier version replay.

An item travels whole in ``context.item`` (its codec is :data:`~veil.context.records.ITEM_CODEC`,
the one the ``ctx_items`` rows use), so an evicted item is restored byte-identical.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from veil.context.conflicts import Belief, Conflict
from veil.context.items import ContextItem, Tier, TurnKind
from veil.context.records import BELIEF_CODEC, ITEM_CODEC
from veil.tape.codec import SPARSE, Ident, TimeText
from veil.tape.kinds import EventKind, catalogue

ContextKind = Literal[
    "context.item",
    "context.access",
    "context.tier",
    "context.indexed",
    "context.whole",
    "context.pin",
    "context.manual",
    "context.cognitive",
    "context.turn_kind",
    "context.state",
    "context.conflict",
    "context.resolved",
    "context.regret",
]


@dataclass(frozen=True)
class ItemAdded:
    item: ContextItem


@dataclass(frozen=True, kw_only=True)
class Accessed:
    """An access: the item's FSRS state and count as it left them."""

    id: Ident
    tick: int
    at: TimeText | None
    access_count: int
    stability: float
    difficulty: float
    durable_stability: float


@dataclass(frozen=True, kw_only=True)
class TierMoved:
    """A move, with its eviction stage (0: by hand) and reason; ``excerpt`` (characters of
    head and tail still shown) only when there is one."""

    id: Ident
    tier: Tier
    stage: int
    reason: str
    tick: int
    excerpt: Annotated[int, SPARSE] = 0


@dataclass(frozen=True)
class Indexed:
    """A demoted item made searchable (empty text: nothing to index)."""

    id: Ident
    search_text: str


@dataclass(frozen=True)
class Whole:
    """A truncated result's full output is shown from now on."""

    id: Ident
    tokens: int


@dataclass(frozen=True)
class Pinned:
    id: Ident
    pinned: bool


@dataclass(frozen=True)
class Manual:
    """Loaded by hand at ``tick``; ``protect_only``: an expand (protected a few ticks, not
    counted as a load by hand)."""

    id: Ident
    tick: int
    protect_only: Annotated[bool, SPARSE] = False


@dataclass(frozen=True)
class Cognitive:
    """A step passed (``ok``) or failed: the new cognitive weight of the items it used."""

    ok: bool
    weights: dict[str, float]


@dataclass(frozen=True)
class TurnKindSet:
    id: Ident
    kind: TurnKind


@dataclass(frozen=True, kw_only=True)
class State:
    """What a resumed session takes back besides its items."""

    session_id: str
    tick: int
    threshold: float
    last_regret_tick: int | None
    task: str
    turns: int
    ratio: float
    samples: int


@dataclass(frozen=True, kw_only=True)
class ConflictRecord:
    id: Ident
    session_id: str
    subject: str
    relation: str
    a: Belief
    b: Belief


@dataclass(frozen=True)
class ConflictAdded:
    conflict: ConflictRecord


@dataclass(frozen=True, kw_only=True)
class Resolved:
    id: Ident
    kept: str
    reason: str
    actor: str


@dataclass(frozen=True, kw_only=True)
class Regret:
    """An evicted item came back (``how``); the threshold after the decrease."""

    id: Ident
    how: str
    tick: int
    threshold: float


_CODECS = {ContextItem: ITEM_CODEC, Belief: BELIEF_CODEC}
ITEM = EventKind("context.item", ItemAdded, nested=_CODECS)
ACCESS = EventKind("context.access", Accessed)
TIER = EventKind("context.tier", TierMoved)
INDEXED = EventKind("context.indexed", Indexed)
WHOLE = EventKind("context.whole", Whole)
PIN = EventKind("context.pin", Pinned)
MANUAL = EventKind("context.manual", Manual)
COGNITIVE = EventKind("context.cognitive", Cognitive)
TURN_KIND = EventKind("context.turn_kind", TurnKindSet)
STATE = EventKind("context.state", State)
CONFLICT = EventKind("context.conflict", ConflictAdded, nested=_CODECS)
RESOLVED = EventKind("context.resolved", Resolved)
REGRET = EventKind("context.regret", Regret)
KINDS = catalogue(
    ContextKind,
    ITEM,
    ACCESS,
    TIER,
    INDEXED,
    WHOLE,
    PIN,
    MANUAL,
    COGNITIVE,
    TURN_KIND,
    STATE,
    CONFLICT,
    RESOLVED,
    REGRET,
)


def accessed(item: ContextItem, tick: int) -> Accessed:
    """``context.access``: ``item`` as an access at ``tick`` left it."""
    return Accessed(
        id=item.id,
        tick=tick,
        at=item.last_access_at,
        access_count=item.access_count,
        stability=item.stability,
        difficulty=item.difficulty,
        durable_stability=item.durable_stability,
    )


def conflict_added(conflict: Conflict, session_id: str) -> ConflictAdded:
    """``context.conflict``: two beliefs that disagree, found in ``session_id``."""
    record = ConflictRecord(
        id=conflict.id,
        session_id=session_id,
        subject=conflict.subject,
        relation=conflict.relation,
        a=conflict.a,
        b=conflict.b,
    )
    return ConflictAdded(record)
