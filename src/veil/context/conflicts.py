"""Contradictions: two beliefs that disagree are kept, with provenance, until resolved. Pure.

A belief is a (subject, relation, value) claim from a fact or a note the model wrote, or a
file's content as read at some point. Two live beliefs with the same subject and relation and
different values, or two reads of the same file with different content, conflict. Nothing is
resolved quietly: resolution is an explicit event (keep, reason, actor).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Belief:
    item_id: str
    subject: str
    relation: str
    value: str
    tool_call_id: str | None
    session_id: str | None


@dataclass(frozen=True)
class Conflict:
    id: str
    subject: str
    relation: str
    a: Belief
    b: Belief
    resolved: bool = False
    kept: str | None = None
    reason: str | None = None

    def describe(self) -> str:
        return (
            f"{self.id}: {self.subject} {self.relation}: {self.a.value[:60]!r} "
            f"({self.a.item_id}, call {self.a.tool_call_id}) vs {self.b.value[:60]!r} "
            f"({self.b.item_id}, call {self.b.tool_call_id})"
        )


def content_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def find_conflicts(new: Belief, existing: list[Belief]) -> list[tuple[Belief, Belief]]:
    return [
        (old, new)
        for old in existing
        if old.subject == new.subject
        and old.relation == new.relation
        and old.value != new.value
        and old.item_id != new.item_id
    ]


def conflict_id(a: Belief, b: Belief) -> str:
    key = "|".join(sorted((a.item_id, b.item_id)))
    return "cf_" + hashlib.sha256(key.encode()).hexdigest()[:12]


class ConflictBook:
    """The beliefs seen so far and the contradictions between them (state, no I/O).

    A file read conflicts with an earlier read of the same file only when this session did not
    write the file in between (our own edits are not contradictions).
    """

    def __init__(self) -> None:
        self._beliefs: dict[tuple[str, str], list[tuple[Belief, int]]] = {}
        self._conflicts: dict[str, Conflict] = {}
        self._last_write: dict[str, int] = {}

    def note_write(self, path: str, tick: int) -> None:
        self._last_write[path] = tick

    def add(self, belief: Belief, tick: int, *, file_path: str | None = None) -> list[Conflict]:
        """Record ``belief`` (seen at ``tick``); returns the contradictions it opens."""
        existing = self._beliefs.get((belief.subject, belief.relation), [])
        since = self._last_write.get(file_path, -1) if file_path is not None else -1
        candidates = [b for b, seen in existing if seen > since]
        opened: list[Conflict] = []
        for old, new in find_conflicts(belief, candidates):
            conflict = Conflict(conflict_id(old, new), belief.subject, belief.relation, old, new)
            if conflict.id not in self._conflicts:
                self._conflicts[conflict.id] = conflict
                opened.append(conflict)
        self._beliefs.setdefault((belief.subject, belief.relation), []).append((belief, tick))
        return opened

    def restore(self, conflict: Conflict) -> None:
        self._conflicts[conflict.id] = conflict

    def list(self, *, unresolved_only: bool = True) -> list[Conflict]:
        return [c for c in self._conflicts.values() if not (unresolved_only and c.resolved)]

    def settle(self, conflict_id_: str, *, keep: str, reason: str) -> Conflict:
        """Mark a contradiction resolved; ``KeyError`` for an unknown id, ``ValueError`` when
        ``keep`` is neither side or the reason is empty."""
        conflict = self._conflicts[conflict_id_]
        if keep not in (conflict.a.item_id, conflict.b.item_id):
            raise ValueError(f"keep must be {conflict.a.item_id} or {conflict.b.item_id}")
        if not reason.strip():
            raise ValueError("resolve needs a reason")
        settled = Conflict(
            conflict.id,
            conflict.subject,
            conflict.relation,
            conflict.a,
            conflict.b,
            resolved=True,
            kept=keep,
            reason=reason,
        )
        self._conflicts[conflict.id] = settled
        return settled
