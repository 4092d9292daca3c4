"""Supersession: what a new piece of evidence does to the current facts. Pure.

Rules (SPEC 4, issue 2):
- the same value restated reinforces the current fact (refreshes its confirmation);
- a new value of a *functional* relation closes the window of every current value whose trust
  is at most the new one's; a current value with more trust stays, and both are contested;
- for a non-functional relation only the model's named target (a current fact of the same
  subject and relation) is superseded, under the same authority rule; otherwise the value is added;
- evidence older than the current value (backfill, import) does not displace it: the new fact is
  recorded as already superseded by the newer one, so history stays in order;
- quarantined claims never supersede and are never superseded;
- a value the evidence does not contain (``grounded=False``, see :mod:`veil.memory.guardrails`)
  supersedes no trusted fact — it is contested with it — and does not reinforce one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal


@dataclass(frozen=True)
class CurrentFact:
    id: str
    value_key: str
    trust: int
    valid_from: datetime
    contested_with: tuple[str, ...] = ()


@dataclass(frozen=True)
class Candidate:
    value_key: str
    trust: int
    at: datetime
    functional: bool
    target: str | None = None
    """The model's ``supersedes`` id; used only if it names one of the current facts."""
    grounded: bool = True
    """False when the value is not in the evidence: such a fact supersedes nothing with trust
    (it is contested with it instead) and a restatement of a current value does not reinforce
    it — reinforcement needs support in the evidence."""


@dataclass(frozen=True)
class Decision:
    action: Literal["add", "reinforce", "ignore"]
    reinforce: str | None = None
    supersede: tuple[str, ...] = ()
    contest: tuple[str, ...] = ()
    superseded_by: str | None = None
    """For backfilled evidence: the newer current fact that already replaces this one."""
    notes: tuple[str, ...] = field(default=())


def decide(candidate: Candidate, current: Sequence[CurrentFact]) -> Decision:
    same = [f for f in current if f.value_key == candidate.value_key]
    if same and not candidate.grounded:
        best = max(same, key=lambda f: f.trust)
        return Decision(
            "ignore",
            notes=(f"not a reinforcement of {best.id}: the evidence does not mention its value",),
        )
    if same:
        return Decision("reinforce", reinforce=max(same, key=lambda f: f.trust).id)
    notes: list[str] = []
    if candidate.functional:
        rivals = list(current)
    else:
        rivals = [f for f in current if f.id == candidate.target]
        if candidate.target and not rivals:
            notes.append(
                f"ignored supersession target {candidate.target}: not a current fact "
                "of this subject and relation"
            )
    newer = [f for f in rivals if f.valid_from > candidate.at]
    if newer and candidate.functional:
        latest = max(newer, key=lambda f: f.valid_from)
        if latest.trust >= candidate.trust:
            return Decision(
                "add",
                superseded_by=latest.id,
                notes=(*notes, "older evidence than the current value"),
            )
    if not candidate.grounded:
        trusted = [f for f in rivals if f.trust > 0]
        supersede = tuple(f.id for f in rivals if f.trust <= 0 and f.valid_from <= candidate.at)
        contest = tuple(f.id for f in trusted)
        if trusted:
            notes.append("an ungrounded value does not supersede a trusted fact: contested")
        return Decision("add", supersede=supersede, contest=contest, notes=tuple(notes))
    supersede = tuple(
        f.id for f in rivals if f.trust <= candidate.trust and f.valid_from <= candidate.at
    )
    contest = tuple(f.id for f in rivals if f.trust > candidate.trust)
    return Decision("add", supersede=supersede, contest=contest, notes=tuple(notes))


_CORRECTION = re.compile(
    r"\b(no,|nope|actually|correction|i meant|not\s+\w+|wrong|mistake|rather than|instead of)\b",
    re.IGNORECASE,
)


def supersession_reason(evidence: str, old_value: str) -> Literal["corrected", "updated"]:
    """``corrected`` when the evidence reads as a correction of the old value ("no, it's X, not
    Y"; "actually X"), else ``updated`` (the world changed)."""
    text = evidence.casefold()
    if old_value and old_value.casefold() in text and _CORRECTION.search(evidence):
        return "corrected"
    if re.search(r"\b(correction|i meant|actually)\b", text):
        return "corrected"
    return "updated"
