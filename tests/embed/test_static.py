"""StaticEmbedder: the packaged default embedder."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import veil
from veil.embed import Embedder, StaticEmbedder, default_embedder
from veil.embed.static import packaged_weights


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


@pytest.fixture(scope="module")
def emb() -> StaticEmbedder:
    return default_embedder()


def test_default_is_cached_and_satisfies_the_protocol(emb: StaticEmbedder) -> None:
    assert default_embedder() is emb
    assert isinstance(emb, Embedder)
    assert emb.dim == 256
    name, _, digest = emb.name.partition("@")
    assert name == "m2v-minilm-l6-v2-256d"
    assert len(digest) == 12 and int(digest, 16) >= 0


def test_semantically_meaningful(emb: StaticEmbedder) -> None:
    dogs, puppies, tax = emb.embed(["I love dogs", "I adore puppies", "tax return deadline"])
    assert cos(dogs, puppies) > cos(dogs, tax) + 0.2


def test_shape_dtype_norm_and_determinism(emb: StaticEmbedder) -> None:
    texts = ["hello world", "Caroline: I went to the LGBTQ support group yesterday.", "42"]
    a = emb.embed(texts)
    assert a.shape == (3, 256)
    assert a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert a.tobytes() == emb.embed(texts).tobytes()
    # A text's vector does not depend on its batch.
    assert emb.embed([texts[1]]).tobytes() == a[1:2].tobytes()
    # A fresh instance (separate load) gives the same bytes.
    assert StaticEmbedder().embed(texts).tobytes() == a.tobytes()


def test_same_bytes_in_another_process(emb: StaticEmbedder) -> None:
    texts = ["I love dogs", "naïve café, 日本語 and emoji 🐕"]
    code = (
        "import sys; from veil.embed import default_embedder; "
        f"sys.stdout.write(default_embedder().embed({texts!r}).tobytes().hex())"
    )
    src = str(Path(veil.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert bytes.fromhex(out) == emb.embed(texts).tobytes()


def test_edge_inputs(emb: StaticEmbedder) -> None:
    assert emb.embed([]).shape == (0, 256)
    assert emb.embed([]).dtype == np.float32
    v = emb.embed(["", "   ", "word " * 20_000, "x" * 100_000])
    assert v.shape == (4, 256)
    assert np.isfinite(v).all()
    # Texts without any known token embed as the zero vector (no direction), like model2vec.
    assert not v[0].any() and not v[1].any()
    assert np.linalg.norm(v[2]) == pytest.approx(1.0, abs=1e-5)


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
