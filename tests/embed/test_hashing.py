"""HashEmbedder: deterministic feature hashing for tests."""

from __future__ import annotations

import pytest

from veil.embed import HashEmbedder
from veil.testing import EmbedderContract


class TestHashEmbedder(EmbedderContract):
    blank = "zero"
    spec = "hash"

    def make_embedder(self) -> HashEmbedder:
        return HashEmbedder()


def test_name_and_dim() -> None:
    emb = HashEmbedder()
    assert emb.name == "hash-256" and emb.dim == 256
    assert HashEmbedder(dim=64).name == "hash-64"
    assert HashEmbedder(dim=32).embed(["x"]).shape == (1, 32)


def test_a_text_without_word_characters_is_zero() -> None:
    assert not HashEmbedder(dim=32).embed(["!!!", "🐕"]).any()


def test_shared_words_are_closer() -> None:
    a, b, c = HashEmbedder().embed(
        ["the cat sat on the mat", "a cat sat on a rug", "quarterly revenue forecast"]
    )
    assert float(a @ b) > float(a @ c) + 0.2


def test_case_insensitive_and_value_semantics() -> None:
    emb = HashEmbedder(dim=128)
    assert emb.embed(["Dogs RUN"]).tobytes() == emb.embed(["dogs run"]).tobytes()
    assert emb == HashEmbedder(dim=128)
    with pytest.raises(ValueError):
        HashEmbedder(dim=0)
