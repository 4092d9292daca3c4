"""A rule's occurrences."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime, timedelta
from itertools import islice

from recur.calendar import add_months, clamp_day, iso_week
from recur.rules import Rule

MAX_DAYS = 366 * 20
"""How far ahead to look before giving up (a rule that never fires)."""


def _days(start: date) -> Iterator[date]:
    for n in range(MAX_DAYS):
        yield start + timedelta(days=n)


def _in_interval(rule: Rule, day: date, anchor: date) -> bool:
    """Whether ``day`` falls in a week the rule fires in (every ``interval`` weeks from the
    anchor's week)."""
    if rule.interval == 1:
        return True
    return (iso_week(day) - iso_week(anchor)) % rule.interval == 0


def _candidates(rule: Rule, start: datetime) -> Iterator[datetime]:
    anchor = start.date()
    if rule.kind == "daily":
        for day in _days(anchor):
            yield datetime.combine(day, rule.at)
    elif rule.kind == "weekly":
        for day in _days(anchor):
            if day.weekday() in rule.weekdays and _in_interval(rule, day, anchor):
                yield datetime.combine(day, rule.at)
    else:
        assert rule.day is not None
        first = clamp_day(anchor.year, anchor.month, rule.day)
        for k in range(MAX_DAYS // 28):
            yield datetime.combine(add_months(first, k, rule.day), rule.at)


def occurrences(rule: Rule, start: datetime, count: int) -> list[datetime]:
    """The first ``count`` occurrences at or after ``start``."""
    found = (moment for moment in _candidates(rule, start) if moment >= start)
    return list(islice(found, count))


def next_occurrence(rule: Rule, after: datetime) -> datetime | None:
    found = occurrences(rule, after + timedelta(minutes=1), 1)
    return found[0] if found else None
