"""The embedder contract.

An embedder turns texts into L2-normalised float32 vectors of a fixed dimension. It must be
deterministic (the same text gives the same vector in every process), because vector indexes
are projections that ``rebuild()`` recreates from the tape and must come out identical.
``name`` identifies the model and its weights; a store that finds a different name recorded
re-embeds its vector indexes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

Vectors = NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return an array of shape ``(len(texts), dim)``, float32, rows L2-normalised."""
        ...
