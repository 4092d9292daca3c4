"""StaticEmbedder: the packaged default embedder."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from veil.embed import StaticEmbedder, default_embedder
from veil.embed.static import packaged_weights
from veil.testing import EmbedderContract


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


class TestStaticEmbedder(EmbedderContract):
    blank = "zero"  # no known token: the zero vector (no direction), like model2vec
    spec = "static"

    def make_embedder(self) -> StaticEmbedder:
        return StaticEmbedder()  # a separate load of the packaged weights each time


@pytest.fixture(scope="module")
def emb() -> StaticEmbedder:
    return default_embedder()


def test_default_is_cached_and_named_by_its_weights(emb: StaticEmbedder) -> None:
    assert default_embedder() is emb
    assert emb.dim == 256
    name, _, digest = emb.name.partition("@")
    assert name == "m2v-minilm-l6-v2-256d"
    assert len(digest) == 12 and int(digest, 16) >= 0


def test_semantically_meaningful(emb: StaticEmbedder) -> None:
    dogs, puppies, tax = emb.embed(["I love dogs", "I adore puppies", "tax return deadline"])
    assert cos(dogs, puppies) > cos(dogs, tax) + 0.2


def test_one_enormous_token_is_finite(emb: StaticEmbedder) -> None:
    v = emb.embed(["x" * 100_000])
    assert v.shape == (1, 256) and np.isfinite(v).all()


_WORDS = (
    "the a dog puppies love adore tax return deadline Caroline Melanie went to support "
    "group yesterday painting canoe camping 2023 May 8th naïve café résumé 日本語 中文 "
    "Привет мир emoji 🐕 🎉 don't I'm co-operate e-mail http://example.com a@b.c #tag "
    "UPPER lower MiXeD supercalifragilisticexpialidocious pneumonoultramicroscopic "
    "\u2603 \u00a0 \t tab-separated ... !!! ??? (parens) [brackets] {braces} 3.14 -7 1,000"
)


def varied_sentences(n: int) -> list[str]:
    rng = random.Random(7)
    words = _WORDS.split(" ")
    out = ["", " ", "?", "🐕", "x" * 150, "word " * 700, "a" * 3000]
    while len(out) < n:
        k = rng.randint(1, 40)
        out.append(" ".join(rng.choice(words) for _ in range(k)))
    return out


def test_equals_model2vec_static_model(emb: StaticEmbedder) -> None:
    from model2vec import StaticModel

    oracle = StaticModel.from_pretrained(str(packaged_weights()))
    # model2vec computes in the table's float16; compare on the same table upcast to float32
    # (exact), which is what StaticEmbedder computes in.
    oracle.embedding = oracle.embedding.astype(np.float32)
    texts = varied_sentences(200)
    expected = np.asarray(oracle.encode(texts), dtype=np.float32)
    got = emb.embed(texts)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)


def test_float16_model2vec_agrees_closely(emb: StaticEmbedder) -> None:
    from model2vec import StaticModel

    oracle = StaticModel.from_pretrained(str(packaged_weights()))
    texts = varied_sentences(50)
    expected = np.asarray(oracle.encode(texts), dtype=np.float32)
    np.testing.assert_allclose(emb.embed(texts), expected, atol=2e-3, rtol=0)


def test_loads_from_a_directory(tmp_path: Path) -> None:
    root = packaged_weights()
    for name in ("model.safetensors", "tokenizer.json", "config.json"):
        (tmp_path / name).write_bytes(root.joinpath(name).read_bytes())
    copy = StaticEmbedder(tmp_path)
    assert copy.name == default_embedder().name
    assert copy.embed(["dogs"]).tobytes() == default_embedder().embed(["dogs"]).tobytes()


def test_weights_carry_a_licence_notice() -> None:
    notice = packaged_weights().joinpath("NOTICE").read_text()
    assert "Apache" in notice and "all-MiniLM-L6-v2" in notice
