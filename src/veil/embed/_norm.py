"""Shared numeric helper for embedders."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from veil.embed.protocol import Vectors


def l2_normalise(rows: NDArray[np.floating]) -> Vectors:
    """Return ``rows`` as float32 with every row scaled to unit length.

    All-zero rows stay zero (they have no direction; their cosine with anything is 0) instead
    of becoming NaN.
    """
    out = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
