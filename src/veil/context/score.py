"""The score of a context item: a weighted sum of five signals, then multipliers. Pure.

``score`` works on one item; ``score_many`` computes the same arithmetic over numpy columns
(the engine's hot path) and must agree with it to floating-point precision (tested). The same
inputs give the same score on every call and in every process.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from veil.context import fsrs
from veil.context.config import ContextConfig
from veil.context.items import ContextItem
from veil.context.signals import cognitive, frequency, jaccard, structure

Floats = NDArray[np.float64]


@dataclass(frozen=True)
class Task:
    """What the session is working on: its tags and the code it touched (and neighbours)."""

    tags: frozenset[str] = frozenset()
    touched: frozenset[str] = frozenset()
    neighbours: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Signals:
    recency: float
    frequency: float
    relevance: float
    structure: float
    cognitive: float


def signals(item: ContextItem, task: Task, tick: int, config: ContextConfig) -> Signals:
    elapsed = fsrs.ticks_to_days(tick - item.last_access_tick, config.ticks_per_day)
    return Signals(
        recency=fsrs.retrievability(elapsed, item.stability),
        frequency=frequency(item.access_count, config.weights.frequency_cap),
        relevance=jaccard(item.tags, task.tags),
        structure=structure(item.code_refs, task.touched, task.neighbours),
        cognitive=cognitive(item.cognitive_weight),
    )


def score(item: ContextItem, task: Task, tick: int, config: ContextConfig) -> float:
    w = config.weights
    s = signals(item, task, tick, config)
    base = (
        w.recency * s.recency
        + w.frequency * s.frequency
        + w.relevance * s.relevance
        + w.structure * s.structure
        + w.cognitive * s.cognitive
    )
    if item.kind == "procedural":
        base *= w.procedural
    if item.manual:
        base *= w.manual
    if item.pinned:
        base += w.pin_boost
    return base


def static_part(
    *,
    access: int,
    relevance: float,
    structure_signal: float,
    cognitive_weight: float,
    procedural: bool,
    manual: bool,
    pinned: bool,
    config: ContextConfig,
) -> tuple[float, float, float]:
    """:func:`static_parts` for one item, in plain floats: the working set recomputes the few
    rows that changed since the last call this way (a handful of numpy calls on a few elements
    costs more than the arithmetic)."""
    w = config.weights
    rest = (
        w.frequency * frequency(access, w.frequency_cap)
        + w.relevance * relevance
        + w.structure * structure_signal
        + w.cognitive * cognitive(cognitive_weight)
    )
    multiplier = (w.procedural if procedural else 1.0) * (w.manual if manual else 1.0)
    return rest, multiplier, (w.pin_boost if pinned else 0.0)


def static_parts(
    *,
    access: Floats,
    relevance: Floats,
    structure_signal: Floats,
    cognitive_weight: Floats,
    procedural: NDArray[np.bool_],
    manual: NDArray[np.bool_],
    pinned: NDArray[np.bool_],
    config: ContextConfig,
) -> tuple[Floats, Floats, Floats]:
    """The parts of :func:`score` that do not move with the clock, over columns: ``(rest,
    multiplier, boost)`` with ``score = (w.recency × recency + rest) × multiplier + boost``
    (:func:`combine`). :func:`score_many` uses it; the working set keeps the same parts per
    item, recomputed row by row with :func:`static_part` when an item or the task changes."""
    w = config.weights
    freq = np.minimum(1.0, np.log1p(np.maximum(access, 0)) / np.log1p(max(1, w.frequency_cap)))
    cog = np.clip(0.5 + cognitive_weight / 2.0, 0.0, 1.0)
    rest = (
        w.frequency * freq
        + w.relevance * relevance
        + w.structure * structure_signal
        + w.cognitive * cog
    )
    multiplier = np.where(procedural, w.procedural, 1.0) * np.where(manual, w.manual, 1.0)
    return rest, multiplier, np.where(pinned, w.pin_boost, 0.0)


def combine(
    recency: Floats, rest: Floats, multiplier: Floats, boost: Floats, config: ContextConfig
) -> Floats:
    """The score from its recency and its :func:`static_parts`."""
    return (config.weights.recency * recency + rest) * multiplier + boost


def score_many(
    *,
    stability: Floats,
    last_tick: Floats,
    access: Floats,
    relevance: Floats,
    structure_signal: Floats,
    cognitive_weight: Floats,
    procedural: NDArray[np.bool_],
    manual: NDArray[np.bool_],
    pinned: NDArray[np.bool_],
    tick: int,
    config: ContextConfig,
) -> Floats:
    """Vectorised :func:`score` over columns (relevance and structure precomputed per task)."""
    rate = fsrs.decay_rate_many(stability, config.ticks_per_day)
    recency = fsrs.retrievability_after_ticks(tick - last_tick, rate)
    parts = static_parts(
        access=access,
        relevance=relevance,
        structure_signal=structure_signal,
        cognitive_weight=cognitive_weight,
        procedural=procedural,
        manual=manual,
        pinned=pinned,
        config=config,
    )
    return combine(recency, *parts, config)
