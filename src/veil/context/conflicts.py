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
