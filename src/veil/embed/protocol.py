"""The embedder contract.

An embedder turns texts into L2-normalised float32 vectors of a fixed dimension; a text with
nothing to embed (empty, say) may give the zero row instead (no direction: its cosine with
anything is 0), never NaN. It must be deterministic (the same text gives the same vector in
every process, and to float rounding in any batch), because vector indexes are projections that
``rebuild()`` recreates from the tape and must come out identical. ``name`` identifies the
model and its weights; a store that finds a different name recorded re-embeds its vector
indexes. ``veil.testing.EmbedderContract`` is the suite that checks all of this.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:  # numpy is not imported for the protocol: a hook that embeds nothing stays light
    import numpy as np
    from numpy.typing import NDArray

Vectors: TypeAlias = "NDArray[np.float32]"


@runtime_checkable
class Embedder(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return an array of shape ``(len(texts), dim)``, float32, rows L2-normalised (or
        zero, for a text with nothing to embed)."""
        ...
