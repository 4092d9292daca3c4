"""Values of the long-term memory: facts, provenance, episodes and write reports.

All frozen. A :class:`Fact` is never edited: supersession closes its validity window by a new
event and the projection shows the result; ``history()`` returns every version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

Author = Literal["user", "system", "assistant", "tool", "third_party"]
Disclosure = Literal["first_hand", "quoted", "reported", "inferred"]
Volatility = Literal["permanent", "durable", "slow", "transient", "ephemeral"]
EpisodeKind = Literal["interaction", "failure", "fix", "commitment", "outcome"]
FactState = Literal["current", "superseded", "quarantined", "disputed"]
FactStatus = Literal["current", "stale", "lapsed", "superseded", "quarantined", "disputed"]
"""``FactState`` is what the tape says; ``FactStatus`` adds what the clock says at read time
(``stale``: a durable/slow fact past its lifetime; ``lapsed``: a transient/ephemeral one)."""

AUTHORS: tuple[Author, ...] = ("user", "system", "assistant", "tool", "third_party")
VOLATILITIES: tuple[Volatility, ...] = ("permanent", "durable", "slow", "transient", "ephemeral")
EPISODE_KINDS: tuple[EpisodeKind, ...] = ("interaction", "failure", "fix", "commitment", "outcome")

AUTHORITY: dict[Author, int] = {"user": 3, "system": 2, "assistant": 1, "tool": 0, "third_party": 0}
"""Who may override whom: a new value supersedes an old one only with at least its authority."""


@dataclass(frozen=True)
class Provenance:
    """Where a fact came from. Trust is capped by the weakest link in this chain."""

    author_of_evidence: Author
    disclosure: Disclosure
    event_id: str
    derived_from: tuple[str, ...] = ()
    session_id: str | None = None
    tool_call_id: str | None = None
    source: str | None = None
    claimant: str = "user"


@dataclass(frozen=True)
class Fact:
    id: str
    user_id: str
    subject: str
    relation: str
    object: str
    statement: str
    volatility: Volatility
    valid_from: datetime
    valid_to: datetime | None
    status: FactStatus
    superseded_by: str | None
    reason: str | None
    provenance: Provenance
    trust: int
    last_confirmed_at: datetime
    flags: tuple[str, ...] = ()
    contested_with: tuple[str, ...] = ()
    relation_class: Literal["registered", "unclassified"] = "registered"
    times_used: int = 0
    last_outcome: bool | None = None

    @property
    def is_current(self) -> bool:
        return self.status in ("current", "stale")


@dataclass(frozen=True)
class Episode:
    id: str
    user_id: str
    kind: EpisodeKind
    text: str
    at: datetime
    due: str | None
    event_id: str
    session_id: str | None = None


@dataclass(frozen=True)
class InvalidItem:
    """An extracted item that was not stored, and why. Its evidence stays on the tape."""

    item: object
    reason: str


@dataclass(frozen=True)
class WriteReport:
    """What one ``remember`` did. Tuples hold ids; ``len()`` gives the counts."""

    evidence_id: str
    facts: tuple[str, ...] = ()
    superseded: tuple[str, ...] = ()
    reinforced: tuple[str, ...] = ()
    quarantined: tuple[str, ...] = ()
    episodes: tuple[str, ...] = ()
    contested: tuple[str, ...] = ()
    invalid: tuple[InvalidItem, ...] = ()
    llm_calls: int = 0
    error: str | None = None
    ungrounded: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.error is None

    def counts(self) -> dict[str, int]:
        return {
            "facts": len(self.facts),
            "superseded": len(self.superseded),
            "reinforced": len(self.reinforced),
            "quarantined": len(self.quarantined),
            "episodes": len(self.episodes),
            "contested": len(self.contested),
            "invalid": len(self.invalid),
        }
