"""A deterministic, dependency-free embedder for tests: signed feature hashing.

It has no notion of meaning, only of shared surface form: texts that share words (and, more
weakly, character trigrams, so "dog"/"dogs" overlap) have a higher cosine similarity. That is
enough to exercise vector indexes, ranking and rebuilds without loading any model.

Hashing uses :func:`hashlib.blake2b`, never the built-in ``hash()``, whose salt changes with
every process (``PYTHONHASHSEED``) and would make vectors differ between processes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from veil.embed._norm import l2_normalise
from veil.embed.protocol import Vectors

_WORD = re.compile(r"\w+")
_WORD_WEIGHT = 1.0
_TRIGRAM_WEIGHT = 0.5


@lru_cache(maxsize=1 << 16)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    """The (index, sign) a feature hashes to: 8 bytes of blake2b, sign from the top bit."""
    value = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "big")
    return value % dim, (1.0 if value >> 63 else -1.0)


def _features(text: str) -> list[tuple[str, float]]:
    feats: list[tuple[str, float]] = []
    for word in _WORD.findall(text.lower()):
        feats.append(("w:" + word, _WORD_WEIGHT))
        padded = f"<{word}>"
        feats.extend(("c:" + padded[i : i + 3], _TRIGRAM_WEIGHT) for i in range(len(padded) - 2))
    return feats


@dataclass(frozen=True)
class HashEmbedder:
    """Feature-hashing embedder of lowercased word tokens and character trigrams.

    ``name`` is ``hash-<dim>``. Output rows are float32 and L2-normalised; a text without any
    word character embeds as the zero vector.
    """

    dim: int = 256

    def __post_init__(self) -> None:
        if self.dim < 1:
            raise ValueError(f"dim must be positive, got {self.dim}")

    @property
    def name(self) -> str:
        return f"hash-{self.dim}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature, weight in _features(text):
                index, sign = _bucket(feature, self.dim)
                out[row, index] += sign * weight
        return l2_normalise(out)
