"""The need detector the replay reads its misses from: :mod:`veil.replay.needs` (one detector
for the data sets and for ``veil replay`` on the agents' own transcripts), re-exported here for
the benchmark's modules."""

from __future__ import annotations

from veil.replay.needs import (
    COPY_MIN_CHARS,
    RULES,
    Need,
    Region,
    Rule,
    SimpleStep,
    StepLike,
    copied_lines,
    detect_needs,
    identifiers,
    misses,
    norm_path,
    region_of,
)

__all__ = [
    "COPY_MIN_CHARS",
    "RULES",
    "Need",
    "Region",
    "Rule",
    "SimpleStep",
    "StepLike",
    "copied_lines",
    "detect_needs",
    "identifiers",
    "misses",
    "norm_path",
    "region_of",
]
