"""How much of a sequence is what it was last time.

A conversation only grows: each request carries the last one's messages, entries and parts
again (the same objects, where a layer kept them) and then a few new ones. Finding where the
two differ one element at a time is a Python loop over the whole conversation on every
request; comparing slices is the same loop in C, where identical objects are equal without
calling ``__eq__``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def shared_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading elements ``a`` and ``b`` share (compared with ``==``; identical
    objects compare equal at once)."""
    n = min(len(a), len(b))
    if list(a[:n]) == list(b[:n]):
        return n
    lo, hi = 0, n - 1  # a[:lo] == b[:lo]; they differ before n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if list(a[lo:mid]) == list(b[lo:mid]):
            lo = mid
        else:
            hi = mid - 1
    return lo
