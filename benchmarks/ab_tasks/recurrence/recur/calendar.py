"""Calendar helpers: weekday names, month lengths, weeks."""

from __future__ import annotations

import calendar as _calendar
from datetime import date, timedelta

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
"""In the order of :meth:`datetime.date.weekday` (Monday is 0)."""
ABBREVIATIONS = {name[:3]: i for i, name in enumerate(WEEKDAYS)}
WORKDAYS = frozenset(range(5))


def weekday_number(name: str) -> int:
    """``"Monday"`` or ``"mon"`` → 0 … ``"sun"`` → 6."""
    key = name.strip().lower()
    if key in WEEKDAYS:
        return WEEKDAYS.index(key)
    if key in ABBREVIATIONS:
        return ABBREVIATIONS[key]
    raise ValueError(f"not a weekday: {name!r}")


def days_in_month(year: int, month: int) -> int:
    return _calendar.monthrange(year, month)[1]


def clamp_day(year: int, month: int, day: int) -> date:
    """``day`` of the month, or its last day when the month is shorter."""
    return date(year, month, min(day, days_in_month(year, month)))


def add_months(d: date, months: int, day: int | None = None) -> date:
    """``d`` moved by ``months`` (on ``day`` if given), clamped to the month's length."""
    index = d.year * 12 + d.month - 1 + months
    year, month = divmod(index, 12)
    return clamp_day(year, month + 1, day or d.day)


def week_start(d: date) -> date:
    """The Monday of ``d``'s week."""
    return d - timedelta(days=d.weekday())


def iso_week(d: date) -> int:
    """The ISO 8601 week number of ``d`` (1 to 53)."""
    return d.isocalendar().week
