"""The generic finder: spans of a regex's matches, with the boundary, extent and plausibility
checks that every token rule shares."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence

from .shapes import looks_secret, token_is_plausible

Span = tuple[int, int]
Finder = Callable[[str], Iterator[Span]]
Check = Callable[[str, str], bool]
"""``check(secret, whole_match)``: whether a candidate is kept."""

ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
WORD = ALNUM | {"_"}
TOKEN = WORD | {"-"}


def plausible(secret: str, _whole: str) -> bool:
    """The default check: anything but a documentation stand-in."""
    return token_is_plausible(secret)


def free_value(secret: str, _whole: str) -> bool:
    """For a value found by its context (a header, a flag): it must look generated."""
    return looks_secret(secret)


def regex_finder(
    patterns: Callable[[], Sequence[re.Pattern[str]]],
    *,
    group: int | str = 0,
    not_after: frozenset[str] = frozenset(),
    not_before: frozenset[str] = frozenset(),
    tail: re.Pattern[str] | None = None,
    keep_after: str | None = None,
    check: Check = plausible,
) -> Finder:
    """Spans of ``group`` of every match of ``patterns()``.

    A match right after a character of ``not_after`` is inside a longer token and skipped (an
    ``AKIA…`` inside a base64 blob is not a key id). ``tail`` extends the span over the rest of
    a token the pattern stops short of; else a match followed by a ``not_before`` character is
    skipped. ``keep_after``: the secret starts after this literal inside the match (a webhook
    URL's path, ``AccountKey=``'s value).
    """

    def find(text: str) -> Iterator[Span]:
        for pattern in patterns():
            for m in pattern.finditer(text):
                start, end = m.span(group)
                if start < 0 or start == end:
                    continue
                if m.start() > 0 and text[m.start() - 1] in not_after:
                    continue
                if keep_after is not None:
                    at = text.find(keep_after, m.start(), end)
                    if at >= 0:
                        start = at + len(keep_after)
                if tail is not None:
                    rest = tail.match(text, end)
                    end = rest.end() if rest is not None else end
                elif end < len(text) and text[end] in not_before:
                    continue
                if start < end and check(text[start:end], m.group(0)):
                    yield start, end

    return find


def own(pattern: str, flags: int = 0) -> Callable[[], tuple[re.Pattern[str]]]:
    """A pattern of Veil's own, compiled at first use."""

    @functools.cache
    def compiled() -> tuple[re.Pattern[str]]:
        return (re.compile(pattern, flags),)

    return compiled
