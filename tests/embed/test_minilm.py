"""MiniLMEmbedder: all-MiniLM-L6-v2 int8 ONNX (the `minilm` extra)."""

from __future__ import annotations

import os

import pytest

from veil.embed import MiniLMEmbedder
from veil.embed.onnx import minilm_available
from veil.testing import EmbedderContract

# `make test` installs the extra, so in CI a missing extra is a failure, never a skip.
pytestmark = pytest.mark.skipif(
    not minilm_available() and not os.environ.get("CI"),
    reason="the `minilm` extra is not installed (the minilm extra)",
)


class TestMiniLMEmbedder(EmbedderContract):
    blank = "unit"  # [CLS] [SEP] alone still has a direction
    batch_atol = 1e-6  # padding in a batch moves the floats a little
    spec = "minilm"

    def make_embedder(self) -> MiniLMEmbedder:
        return MiniLMEmbedder()


@pytest.fixture(scope="module")
def emb() -> MiniLMEmbedder:
    return MiniLMEmbedder().load()


def test_dim_and_name(emb: MiniLMEmbedder) -> None:
    assert emb.dim == 384
    assert emb.name.startswith("all-minilm-l6-v2-int8@")


def test_semantically_meaningful(emb: MiniLMEmbedder) -> None:
    dogs, puppies, tax = emb.embed(["I love dogs", "I adore puppies", "tax return deadline"])
    assert float(dogs @ puppies) > float(dogs @ tax) + 0.2
