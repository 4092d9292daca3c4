"""FSRS-6 as pure functions over floats.

Retrievability ``R(t, S) = (1 + F·t/S)^(−w20)`` with ``F = 0.9^(−1/w20) − 1``, so an item is at
R = 0.9 exactly when the elapsed time equals its stability. A successful recall raises
stability to ``S·(1 + e^w8·(11−D)·S^(−w9)·(e^(w10·(1−R)) − 1))``: the lower R was at the recall,
the larger the gain (an item recalled late gains more than one recalled constantly).

Unlike the ``fsrs`` package (the test oracle), elapsed time is a float — the live tier runs on
a session clock of tool calls, not whole days.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

Floats = np.ndarray[Any, np.dtype[np.float64]]

DEFAULT_WEIGHTS: tuple[float, ...] = (
    0.212,
    1.2931,
    2.3065,
    8.2956,
    6.4133,
    0.8334,
    3.0194,
    0.001,
    1.8722,
    0.1666,
    0.796,
    1.4835,
    0.0614,
    0.2629,
    1.6483,
    0.6014,
    1.8729,
    0.5425,
    0.0912,
    0.0658,
    0.1542,
)
"""FSRS-6 default parameters w0..w20 (as shipped by the ``fsrs`` package 6.x)."""

STABILITY_MIN = 0.001
GOOD = 3
EASY = 4


def decay(w: Sequence[float] = DEFAULT_WEIGHTS) -> float:
    return -w[20]


def factor(w: Sequence[float] = DEFAULT_WEIGHTS) -> float:
    return 0.9 ** (1.0 / decay(w)) - 1.0


def retrievability(
    elapsed_days: float, stability: float, w: Sequence[float] = DEFAULT_WEIGHTS
) -> float:
    """Probability-like recall strength after ``elapsed_days`` (≥ 0) at ``stability`` days."""
    if elapsed_days <= 0:
        return 1.0
    return (1.0 + factor(w) * elapsed_days / max(stability, STABILITY_MIN)) ** decay(w)


def retrievability_many(elapsed_days: Floats, stability: Floats) -> Floats:
    """:func:`retrievability` over arrays (the hot path scores every item at once): 1 where
    no time has passed."""
    r = (1.0 + factor() * elapsed_days / np.maximum(stability, STABILITY_MIN)) ** decay()
    return np.where(elapsed_days <= 0, 1.0, r)


def decay_rate_many(stability: Floats, ticks_per_day: float) -> Floats:
    """``F / (S · ticks_per_day)`` per item: what :func:`retrievability_after_ticks` needs
    besides the elapsed ticks. It changes only when an item's stability does, so the hot path
    keeps it per item instead of dividing every item's stability on every call."""
    return factor() / (np.maximum(stability, STABILITY_MIN) * ticks_per_day)


def decay_rate(stability: float, ticks_per_day: float) -> float:
    """:func:`decay_rate_many` for one item."""
    return factor() / (max(stability, STABILITY_MIN) * ticks_per_day)


def retrievability_after_ticks(elapsed_ticks: Floats, rate: Floats) -> Floats:
    """:func:`retrievability_many` on the session clock, from :func:`decay_rate_many`'s rate:
    ``(1 + rate · t)^(−w20)``, exactly 1 when no tick has passed (or the clock is behind)."""
    return (1.0 + np.maximum(elapsed_ticks, 0.0) * rate) ** decay()


def initial_stability(rating: int = GOOD, w: Sequence[float] = DEFAULT_WEIGHTS) -> float:
    return max(w[rating - 1], STABILITY_MIN)


def initial_difficulty(rating: int = GOOD, w: Sequence[float] = DEFAULT_WEIGHTS) -> float:
    return clamp_difficulty(w[4] - math.exp(w[5] * (rating - 1)) + 1)


def clamp_difficulty(d: float) -> float:
    return min(10.0, max(1.0, d))


def next_difficulty(
    difficulty: float, rating: int = GOOD, w: Sequence[float] = DEFAULT_WEIGHTS
) -> float:
    """FSRS-6 difficulty update with linear damping and mean reversion toward D0(Easy)."""
    delta = -(w[6] * (rating - 3))
    damped = difficulty + (10.0 - difficulty) * delta / 9.0
    target = w[4] - math.exp(w[5] * (EASY - 1)) + 1
    return clamp_difficulty(w[7] * target + (1 - w[7]) * damped)


def recall_stability(
    stability: float,
    difficulty: float,
    r: float,
    *,
    w: Sequence[float] = DEFAULT_WEIGHTS,
    cap_days: float | None = None,
) -> float:
    """Stability after a successful recall at retrievability ``r`` (rating Good)."""
    gain = (
        math.exp(w[8])
        * (11.0 - difficulty)
        * stability ** (-w[9])
        * (math.exp((1.0 - r) * w[10]) - 1.0)
    )
    new = max(stability * (1.0 + gain), STABILITY_MIN)
    return min(new, cap_days) if cap_days is not None else new


def ticks_to_days(ticks: float, ticks_per_day: float) -> float:
    """The live tier's session clock: one tick per tool call, ``ticks_per_day`` per day."""
    return max(0.0, ticks) / ticks_per_day
