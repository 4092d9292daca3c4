"""FSRS-6 formulas against the ``fsrs`` package (oracle, whole days) and as properties."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fsrs import Card, Rating, Scheduler, State
from hypothesis import given
from hypothesis import strategies as st

from veil.context import fsrs

SCHEDULER = Scheduler(enable_fuzzing=False)
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_default_weights_match_the_package() -> None:
    assert tuple(SCHEDULER.parameters) == pytest.approx(fsrs.DEFAULT_WEIGHTS)


@pytest.mark.parametrize("stability", [0.5, 1.0, 2.3065, 7.0, 30.0, 365.0])
@pytest.mark.parametrize("days", [0, 1, 2, 5, 10, 100])
def test_retrievability_matches_the_oracle(stability: float, days: int) -> None:
    card = Card(state=State.Review, stability=stability, difficulty=5.0, last_review=T0)
    expected = SCHEDULER.get_card_retrievability(card, current_datetime=T0 + timedelta(days=days))
    assert fsrs.retrievability(days, stability) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("stability", [0.5, 2.0, 10.0])
@pytest.mark.parametrize("difficulty", [1.0, 5.0, 9.0])
@pytest.mark.parametrize("days", [1, 3, 20])
def test_recall_stability_and_difficulty_match_the_oracle(
    stability: float, difficulty: float, days: int
) -> None:
    card = Card(
        state=State.Review, stability=stability, difficulty=difficulty, last_review=T0, due=T0
    )
    reviewed, _ = SCHEDULER.review_card(
        card, Rating.Good, review_datetime=T0 + timedelta(days=days)
    )
    r = fsrs.retrievability(days, stability)
    assert fsrs.recall_stability(stability, difficulty, r) == pytest.approx(reviewed.stability)
    assert fsrs.next_difficulty(difficulty) == pytest.approx(reviewed.difficulty)


def test_initial_values_match_the_oracle() -> None:
    card, _ = SCHEDULER.review_card(Card(), Rating.Good, review_datetime=T0)
    assert fsrs.initial_stability() == pytest.approx(card.stability)
    assert fsrs.initial_difficulty() == pytest.approx(card.difficulty)


stabilities = st.floats(min_value=0.01, max_value=365.0)


@given(stabilities)
def test_retrievability_is_point_nine_at_its_own_stability(s: float) -> None:
    assert fsrs.retrievability(s, s) == pytest.approx(0.9, abs=1e-12)


@given(stabilities, st.floats(0.0, 1000.0), st.floats(0.001, 1000.0))
def test_retrievability_decreases_with_time(s: float, t: float, dt: float) -> None:
    assert fsrs.retrievability(t + dt, s) < fsrs.retrievability(t, s) or t + dt == t


@given(stabilities, st.floats(1.0, 10.0), st.floats(0.05, 0.95), st.floats(0.01, 0.5))
def test_a_later_recall_gains_more(s: float, d: float, r: float, drop: float) -> None:
    lower = max(0.01, r - drop)
    assert fsrs.recall_stability(s, d, lower) > fsrs.recall_stability(s, d, r)
    assert fsrs.recall_stability(s, d, r) >= s


def test_caps_per_horizon() -> None:
    assert fsrs.recall_stability(6.0, 1.0, 0.1, cap_days=7.0) == 7.0
    assert fsrs.recall_stability(300.0, 1.0, 0.1, cap_days=365.0) == 365.0


def test_session_clock_conversion() -> None:
    assert fsrs.ticks_to_days(24, 24) == 1.0
    assert fsrs.ticks_to_days(-3, 24) == 0.0
