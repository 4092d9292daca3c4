"""HashEmbedder: deterministic feature hashing for tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import veil
from veil.embed import Embedder, HashEmbedder


def test_protocol_name_dim_shape() -> None:
    emb = HashEmbedder()
    assert isinstance(emb, Embedder)
    assert emb.name == "hash-256" and emb.dim == 256
    assert HashEmbedder(dim=64).name == "hash-64"
    v = emb.embed(["a b c", "Hello"])
    assert v.shape == (2, 256) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-6)
    assert emb.embed([]).shape == (0, 256)


def test_empty_text_is_zero_and_long_text_is_fine() -> None:
    v = HashEmbedder(dim=32).embed(["", "!!!", "word " * 10_000])
    assert not v[0].any() and not v[1].any()
    assert np.linalg.norm(v[2]) == pytest.approx(1.0, abs=1e-6)


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


def test_same_bytes_in_another_process_with_another_hash_seed() -> None:
    texts = ["I love dogs", "日本語 text"]
    code = (
        "import sys; from veil.embed import HashEmbedder; "
        f"sys.stdout.write(HashEmbedder().embed({texts!r}).tobytes().hex())"
    )
    src = str(Path(veil.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONHASHSEED": "999"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert bytes.fromhex(out) == HashEmbedder().embed(texts).tobytes()
