"""Grounding: a fact whose specifics (numbers, names, dates) are not in its evidence is flagged.

The flag does not block storage — an extraction model paraphrases — but ungrounded facts never
enter the curated wiki and are marked in recall. Pure.
"""

from __future__ import annotations

import re
from datetime import date

_NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "twenty": 20,
    "hundred": 100,
}
_RELATIVE_DAYS = re.compile(
    r"\b(today|tonight|tomorrow|yesterday|monday|tuesday|wednesday|thursday|friday|saturday|"
    r"sunday|weekend|next week|this week|next month|in \w+ days?)\b",
    re.IGNORECASE,
)
ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_ISO_DATE = ISO_DATE
_NAME = re.compile(r"\b[A-Z][a-zA-Z]+(?:\s+[A-Z][a-zA-Z]+)*")


def specifics(text: str) -> set[str]:
    """Numbers, ISO dates and capitalised names (not sentence-initial) in ``text``."""
    found: set[str] = set()
    without_dates = _ISO_DATE.sub(" ", text)
    found.update(m.group(0) for m in _ISO_DATE.finditer(text))
    found.update(re.findall(r"\d+(?:[.,]\d+)?", without_dates))
    for match in _NAME.finditer(without_dates):
        before = without_dates[: match.start()].rstrip()
        if not before or before[-1] in ".!?:\n\"'":
            continue  # sentence-initial capitals are not names
        if match.group(0) not in {"I", "User", "The"}:
            found.add(match.group(0))
    return found


def ungrounded_specifics(
    claim: str, evidence: str, *, calendar: set[date] | None = None
) -> list[str]:
    """Specifics of ``claim`` that ``evidence`` does not contain (case-insensitively).

    An ISO date is grounded when it appears verbatim, or when the evidence uses a relative day
    word and the date is in the calendar the model was shown.
    """
    haystack = evidence.casefold()
    digits_in_words = {str(v) for k, v in _NUMBER_WORDS.items() if re.search(rf"\b{k}\b", haystack)}
    missing: list[str] = []
    for item in sorted(specifics(claim)):
        if _ISO_DATE.fullmatch(item):
            try:
                day = date.fromisoformat(item)
            except ValueError:
                missing.append(item)
                continue
            if item in haystack or (
                calendar and day in calendar and _RELATIVE_DAYS.search(evidence)
            ):
                continue
            missing.append(item)
        elif item.replace(",", "").replace(".", "").isdigit():
            if item in haystack or item in digits_in_words:
                continue
            missing.append(item)
        elif item.casefold() not in haystack:
            missing.append(item)
    return missing
