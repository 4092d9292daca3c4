"""Goals: what the attempts are attempts *at*. Pure.

The current goal is the user's current intent — the task message — in one project. Its id is a
stable hash of the normalised intent text and the project scope, so the same task in the same
project gets the same id in every session and the attempt record reloads ("this fix already
failed last Tuesday"). Case, whitespace and trailing punctuation do not change the id; any other
edit to the task text does (a reworded task is treated as a new intent — the conservative
choice: a false match would block a fix the user now wants tried).

A goal is *refined* by the targets it touches (files, test ids): :func:`refine` adds them, so a
goal's record can answer "what was tried on this file" without splitting the goal's
progress accounting across targets.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

MAX_INTENT_CHARS = 4_000
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Goal:
    """A goal: its stable id, the intent text, the project scope and the targets seen so far."""

    id: str
    intent: str
    project: str
    targets: tuple[str, ...] = ()


def normalise_intent(text: str) -> str:
    """Case-folded, whitespace-collapsed, trailing punctuation removed, capped in length."""
    text = _SPACE.sub(" ", text.casefold()).strip()
    return text.rstrip(" .!?;:,")[:MAX_INTENT_CHARS]


def goal_id(intent: str, project: str) -> str:
    """``goal_<16 hex>``: SHA-256 of the project scope and the normalised intent."""
    body = f"{project}\n{normalise_intent(intent)}"
    return "goal_" + hashlib.sha256(body.encode()).hexdigest()[:16]


def goal_for(intent: str, project: str) -> Goal:
    return Goal(id=goal_id(intent, project), intent=intent.strip(), project=project)


def refine(goal: Goal, targets: Iterable[str]) -> Goal:
    """The goal with ``targets`` added (first-seen order kept, duplicates dropped)."""
    seen = dict.fromkeys(goal.targets)
    for target in targets:
        if target:
            seen.setdefault(target, None)
    merged = tuple(seen)
    return goal if merged == goal.targets else replace(goal, targets=merged)
