"""Turns as context items: classification and the turn eviction score. Pure.

The last ``protected_turns`` (12) are protected outright. An older turn's eviction score is
``min(1, (age − 12) / 20) × weight(kind)`` (intent 0, correction 0, decision 0.1, action 0.6,
status 0.7, exploration 0.8); a turn whose embedding has cosine similarity above 0.7 with any
recent turn — the current work still refers to it — has that score cut by the similarity.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from veil.context.items import TurnKind

_CORRECTION = re.compile(
    r"^\s*(no\b|nope|wrong|that'?s not|not what i|actually|stop|don'?t|"
    r"do not|instead|i said|correction)",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(let'?s|we will|we'll|i will|i'll|decided|decision|plan is|"
    r"going to|approach)\b",
    re.IGNORECASE,
)
_STATUS = re.compile(
    r"\b(done|passed|passing|fixed|completed|finished|all tests|status|"
    r"summary|failed|failing)\b",
    re.IGNORECASE,
)
CallKind = Literal["act", "look"]
"""A tool call of a turn, as the caller classifies it: it changes something, or only looks."""


def classify_turn(
    role: str, text: str, calls: Sequence[CallKind] = (), *, first_user_turn: bool = False
) -> TurnKind:
    """The kind of a turn from its role, text and tool calls (the model can override it): a
    turn with a call that acts is an ``action``, one whose calls only look ``exploration``."""
    if role == "user":
        if first_user_turn:
            return "intent"
        if _CORRECTION.search(text):
            return "correction"
        return "intent"
    if calls:
        return "action" if "act" in calls else "exploration"
    if _DECISION.search(text):
        return "decision"
    if _STATUS.search(text):
        return "status"
    return "exploration"


def eviction_score(
    age: int,
    kind: TurnKind,
    similarity: float,
    *,
    weights: Mapping[TurnKind, float],
    protected: int = 12,
    span: int = 20,
    threshold: float = 0.7,
) -> float:
    """0 (keep) … 1 (evict first). ``age`` counts turns since this one (0 = the newest)."""
    if age < protected:
        return 0.0
    score = min(1.0, (age - protected) / span) * weights[kind]
    if similarity > threshold:
        score *= 1.0 - similarity
    return score


def max_similarities(
    older: NDArray[np.float32], recent: NDArray[np.float32]
) -> NDArray[np.float32]:
    """For each older turn embedding (rows, L2-normalised), the largest cosine with any recent
    turn: how much the current work still refers to it."""
    if older.size == 0 or recent.size == 0:
        return np.zeros(len(older), dtype=np.float32)
    return (older @ recent.T).max(axis=1)
