"""Time as an injected dependency.

Every time-dependent part of Veil reads the time through a :class:`Clock` so that tests can
drive it with :class:`veil.testing.FakeClock` and never sleep. Times are always timezone-aware
UTC datetimes; naive datetimes are rejected at the edges (:func:`ensure_utc`).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Anything with a ``now()`` returning an aware UTC datetime."""

    def now(self) -> datetime: ...


class SystemClock:
    """The wall clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


def ensure_utc(value: datetime) -> datetime:
    """Return ``value`` in UTC; a naive datetime is an error, not a guess."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"naive datetime {value.isoformat()!r}: pass a timezone-aware datetime")
    return value.astimezone(UTC)


def format_time(value: datetime) -> str:
    """Fixed-width ISO-8601 UTC text (microseconds, ``+00:00``) that sorts chronologically."""
    return ensure_utc(value).isoformat(timespec="microseconds")


def parse_time(text: str) -> datetime:
    """Inverse of :func:`format_time`; accepts any ISO-8601 string with an offset (or ``Z``)."""
    return ensure_utc(datetime.fromisoformat(text.replace("Z", "+00:00")))


class FakeClock:
    """A clock that only moves when told to. ``start`` defaults to 2026-01-05 09:00 UTC."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = ensure_utc(start) if start else datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> datetime:
        """Move forward by ``timedelta(**delta)`` (e.g. ``advance(days=3)``); never backwards."""
        step = timedelta(**delta)
        if step < timedelta(0):
            raise ValueError("FakeClock only moves forward")
        self._now += step
        return self._now

    def set(self, when: datetime) -> None:
        when = ensure_utc(when)
        if when < self._now:
            raise ValueError("FakeClock only moves forward")
        self._now = when
