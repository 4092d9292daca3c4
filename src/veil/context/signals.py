"""The five signals of the score, as pure functions over values. No LLM, no I/O."""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Iterable

_STOP = frozenset(
    {
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "are",
        "was",
        "were",
        "you",
        "your",
        "have",
        "has",
        "had",
        "not",
        "but",
        "all",
        "any",
        "can",
        "will",
        "would",
        "should",
        "could",
        "into",
        "onto",
        "over",
        "under",
        "then",
        "than",
        "them",
        "they",
        "their",
        "there",
        "here",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "how",
        "its",
        "our",
        "out",
        "use",
        "used",
        "using",
        "get",
        "got",
        "set",
        "one",
        "two",
        "also",
        "just",
        "more",
        "most",
        "some",
        "such",
        "only",
        "own",
        "same",
        "very",
        "too",
        "may",
        "might",
        "must",
        "shall",
        "none",
        "true",
        "false",
        "self",
        "return",
        "def",
        "class",
        "import",
        "pass",
        "else",
        "elif",
        "try",
        "except",
        "finally",
        "while",
        "yield",
        "lambda",
        "global",
        "nonlocal",
        "assert",
    }
)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_PATH = re.compile(
    # The lookbehind only skips starts inside a run of path characters (the leftmost start of
    # the run matches whenever a later one would): the same matches, without retrying each.
    r"(?<![\w.-])(?:[\w.-]+/)+[\w.-]+\.\w+|\b[\w-]+\.(?:py|js|ts|tsx|go|rs|java|rb|md|toml|"
    r"json|yaml|yml|cfg|ini|txt|sh|c|h|cpp)\b"
)


def tags_of(text: str, limit: int = 32) -> tuple[str, ...]:
    """Salient lower-case tokens of ``text``: file names and the most frequent identifiers.
    Deterministic: ties break alphabetically.

    Runs on every capture: the text is lowered once (not word by word), stop words never enter
    the counts, and only the top of the ranking is taken (not a sort of every word)."""
    head = text[:20_000]
    paths = {p.rsplit("/", 1)[-1].lower() for p in _PATH.findall(head)}
    stop = _STOP
    words = Counter(w for w in _WORD.findall(head.lower()) if w not in stop)
    out = sorted(paths)[: limit // 2]
    taken = set(out)
    top = heapq.nsmallest(limit + len(out), words.items(), key=lambda kv: (-kv[1], kv[0]))
    for word, _ in top:
        if len(out) >= limit:
            break
        if word not in taken:
            out.append(word)
            taken.add(word)
    return tuple(out)


def paths_in(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_PATH.findall(text[:20_000])))


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    sa, sb = set(a), set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


def frequency(access_count: int, cap: int) -> float:
    """Log-scaled access count in [0, 1]."""
    return min(1.0, math.log1p(max(0, access_count)) / math.log1p(max(1, cap)))


def structure(
    code_refs: Iterable[str], touched: frozenset[str], neighbours: frozenset[str]
) -> float:
    """1 when the item points at a file/symbol this task touched, 0.5 when at one they import
    or are imported by, else 0."""
    refs = set(code_refs)
    if not refs:
        return 0.0
    if refs & touched:
        return 1.0
    if refs & neighbours:
        return 0.5
    return 0.0


def cognitive(weight: float) -> float:
    """Map a cognitive weight in [-1, 1] to a signal in [0, 1] (0.5 = no evidence)."""
    return min(1.0, max(0.0, 0.5 + weight / 2.0))
