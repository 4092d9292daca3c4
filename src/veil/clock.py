"""Time as an injected dependency.

Every time-dependent part of Veil reads the time through a :class:`Clock` so that tests can
drive it with :class:`veil.testing.FakeClock` and never sleep. Times are always timezone-aware
UTC datetimes; naive datetimes are rejected at the edges (:func:`ensure_utc`).
"""

from __future__ import annotations

from datetime import UTC, datetime
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
