"""Timing a call, and the one summary of samples every benchmark reports.

:func:`summary` names what it returns by key: ``n``, ``mean``, ``min``, ``max``, ``median`` and
``pNN`` (``p50``, ``p95``, ``p99``, ``p90``...). Percentiles are numpy's: linear interpolation
between closest ranks (``method="linear"``, the default, what ``statistics.quantiles(...,
method="inclusive")`` computes too), or ``method="higher"``: the sample at rank ``int(q × n)``
of the sorted samples (the redaction cost table and the convergence replay's p90 use it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import numpy as np

MS = 1e3
"""Scale for samples in seconds reported in milliseconds."""
Method = Literal["linear", "higher"]


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` takes."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def summary(
    samples: Iterable[float],
    keys: Sequence[str] = ("p50", "p95", "p99", "mean", "max"),
    *,
    scale: float = 1.0,
    digits: int | None = 3,
    method: Method = "linear",
) -> dict[str, Any]:
    """``keys`` of ``samples × scale``, each rounded to ``digits`` (``None``: not rounded).

    With no samples, ``n`` is 0 and every other key is ``None``."""
    a = np.asarray(list(samples), dtype=np.float64) * scale
    out: dict[str, Any] = {}
    for key in keys:
        if key == "n":
            out[key] = int(a.size)
            continue
        if a.size == 0:
            out[key] = None
            continue
        if key == "mean":
            value = float(a.mean())
        elif key == "min":
            value = float(a.min())
        elif key == "max":
            value = float(a.max())
        elif key == "median":
            value = float(np.percentile(a, 50, method=method))
        elif key.startswith("p") and key[1:].isdigit():
            value = float(np.percentile(a, int(key[1:]), method=method))
        else:
            raise ValueError(f"unknown statistic {key!r}")
        out[key] = value if digits is None else round(value, digits)
    return out
