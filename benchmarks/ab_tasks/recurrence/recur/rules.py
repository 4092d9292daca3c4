"""Rules in plain words."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import time

from recur.calendar import WORKDAYS, weekday_number

_TIME = r"at (?P<hour>\d{1,2}):(?P<minute>\d{2})"
PATTERNS = (
    ("daily", re.compile(rf"^every day {_TIME}$")),
    ("weekdays", re.compile(rf"^every weekday {_TIME}$")),
    ("weekly", re.compile(rf"^every (?P<days>[a-z]+(?:,[a-z]+)*) {_TIME}$")),
    ("weekly", re.compile(rf"^every (?P<n>\d+) weeks on (?P<days>[a-z]+(?:,[a-z]+)*) {_TIME}$")),
    ("monthly", re.compile(rf"^every month on day (?P<day>\d{{1,2}}) {_TIME}$")),
)


class RuleError(ValueError):
    """A rule that does not parse."""


@dataclass(frozen=True)
class Rule:
    kind: str  # "daily", "weekly" or "monthly"
    at: time
    interval: int = 1
    weekdays: frozenset[int] = frozenset()
    day: int | None = None

    def describe(self) -> str:
        every = "every" if self.interval == 1 else f"every {self.interval}"
        if self.kind == "daily":
            return f"{every} day at {self.at:%H:%M}"
        if self.kind == "monthly":
            return f"{every} month on day {self.day} at {self.at:%H:%M}"
        names = ",".join(
            ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")[d]
            for d in sorted(self.weekdays)
        )
        unit = "week" if self.interval == 1 else "weeks"
        return f"{every} {unit} on {names} at {self.at:%H:%M}"


def parse(text: str) -> Rule:
    words = " ".join(text.lower().split())
    for kind, pattern in PATTERNS:
        m = pattern.match(words)
        if m is None:
            continue
        hour, minute = int(m.group("hour")), int(m.group("minute"))
        if hour > 23 or minute > 59:
            raise RuleError(f"no such time: {hour:02d}:{minute:02d}")
        at = time(hour, minute)
        groups = m.groupdict()
        if kind == "daily":
            return Rule("daily", at)
        if kind == "weekdays":
            return Rule("weekly", at, weekdays=WORKDAYS)
        if kind == "monthly":
            day = int(groups["day"])
            if not 1 <= day <= 31:
                raise RuleError(f"no such day of a month: {day}")
            return Rule("monthly", at, day=day)
        try:
            days = frozenset(weekday_number(name) for name in groups["days"].split(","))
        except ValueError as exc:
            raise RuleError(str(exc)) from None
        interval = int(groups.get("n") or 1)
        if interval < 1:
            raise RuleError("the interval must be at least 1")
        return Rule("weekly", at, interval=interval, weekdays=days)
    raise RuleError(f"cannot read {text!r}")
