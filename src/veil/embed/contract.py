"""The embedder contract suite (shipped through :mod:`veil.testing`). Every embedder subclasses
:class:`EmbedderContract`.

No pytest here — the checks are plain ``assert`` and numpy's ``assert_allclose``, and a check
an embedder cannot take part in raises :class:`unittest.SkipTest`, which pytest reports as a
skip — so ``import veil`` never needs pytest.
"""

from __future__ import annotations

import os
import subprocess
import sys
import unittest
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np

from veil.embed.protocol import Embedder, Vectors

TEXTS = (
    "hello world",
    "Caroline: I went to the LGBTQ support group yesterday.",
    "a much longer sentence that needs plenty of padding when it shares a batch with short ones",
    "42",
    "naïve café, 日本語 and emoji 🐕",
)
"""Ordinary texts: every one has something to embed."""

BLANK = ("", "   ")
"""Texts with nothing to embed."""

LONG = "word " * 5_000
"""Far longer than any model's input: it must still give one unit row."""

NORM_ATOL = 1e-5


class EmbedderContract:
    """The behaviours every :class:`Embedder` keeps (see :mod:`veil.embed.protocol`).

    Subclass it as ``TestMyEmbedder(EmbedderContract)``, implement :meth:`make_embedder` and
    set :attr:`blank`; set :attr:`batch_atol`, :attr:`spec` and :meth:`spec_env` where they
    apply. The contract:

    - it is an :class:`Embedder`: a non-empty ``name`` and a positive ``dim``;
    - ``embed(texts)`` is float32 of shape ``(len(texts), dim)``, finite, every row of an
      ordinary text (and of one far longer than the model reads) of L2 norm 1;
    - ``embed([])`` is a float32 array of shape ``(0, dim)``;
    - a text with nothing to embed (empty, blank) is a finite row: the zero row (no direction)
      or a unit row, as :attr:`blank` declares — never NaN, never an error;
    - determinism: the same texts give the same bytes again, from a second instance too, and in
      another process with another hash seed (built from :attr:`spec`);
    - a text's row does not depend on its batch: each text embedded alone equals its row of
      the batch (to :attr:`batch_atol`; exact by default).
    """

    blank: ClassVar[Literal["zero", "unit"]]
    """What a text with nothing to embed gives: the zero row, or a unit row."""
    batch_atol: ClassVar[float] = 0.0
    """How far a row embedded alone may be from its row in a batch (padding moves a
    transformer's floats a little; a table lookup's not at all)."""
    spec: ClassVar[str | None] = None
    """The :func:`veil.embed.embedder_from_spec` spec that builds the same embedder in another
    process; None skips that check."""

    def make_embedder(self) -> Embedder:
        """A new instance of the embedder under test (the determinism check builds two)."""
        raise NotImplementedError

    def spec_env(self) -> Mapping[str, str]:
        """Environment the other process needs to build :attr:`spec` (a server's URL, say)."""
        return {}

    def test_is_an_embedder(self) -> None:
        embedder = self.make_embedder()
        assert isinstance(embedder, Embedder)
        assert isinstance(embedder.name, str) and embedder.name
        assert isinstance(embedder.dim, int) and embedder.dim > 0

    def test_shape_dtype_and_unit_rows(self) -> None:
        embedder = self.make_embedder()
        for texts in (TEXTS, [LONG]):
            vectors = embedder.embed(texts)
            assert vectors.shape == (len(texts), embedder.dim), vectors.shape
            assert vectors.dtype == np.float32
            assert np.isfinite(vectors).all()
            np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=NORM_ATOL)

    def test_nothing_in_is_an_empty_array(self) -> None:
        embedder = self.make_embedder()
        vectors = embedder.embed([])
        assert vectors.shape == (0, embedder.dim) and vectors.dtype == np.float32

    def test_blank_text_is_a_finite_row_as_declared(self) -> None:
        vectors = self.make_embedder().embed(BLANK)
        assert np.isfinite(vectors).all()
        norms = np.linalg.norm(vectors, axis=1)
        if self.blank == "zero":
            assert not vectors.any(), norms
        else:
            np.testing.assert_allclose(norms, 1.0, atol=NORM_ATOL)

    def test_same_texts_same_bytes_from_any_instance(self) -> None:
        embedder = self.make_embedder()
        first = embedder.embed(TEXTS)
        assert embedder.embed(TEXTS).tobytes() == first.tobytes()
        assert self.make_embedder().embed(TEXTS).tobytes() == first.tobytes()

    def test_same_bytes_in_another_process(self) -> None:
        if self.spec is None:
            raise unittest.SkipTest("no spec builds this embedder in another process")
        texts = list(TEXTS)
        code = (
            "import sys; from veil.embed import embedder_from_spec; "
            f"sys.stdout.write(embedder_from_spec({self.spec!r}).embed({texts!r})"
            ".tobytes().hex())"
        )
        assert bytes.fromhex(_run_elsewhere(code, self.spec_env())) == (
            self.make_embedder().embed(texts).tobytes()
        )

    def test_a_row_does_not_depend_on_its_batch(self) -> None:
        embedder = self.make_embedder()
        texts = [*TEXTS, *BLANK]
        batch = embedder.embed(texts)
        alone: Vectors = np.concatenate([embedder.embed([text]) for text in texts])
        np.testing.assert_allclose(alone, batch, atol=self.batch_atol, rtol=0)


def _run_elsewhere(code: str, env: Mapping[str, str]) -> str:
    """``code``'s stdout from a fresh interpreter on this Veil, with another hash seed."""
    src = str(Path(__file__).resolve().parents[2])
    full = {**os.environ, "PYTHONHASHSEED": "12345", **env}
    full["PYTHONPATH"] = os.pathsep.join(p for p in (src, full.get("PYTHONPATH")) if p)
    argv = [sys.executable, "-c", code]
    done = subprocess.run(argv, env=full, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout
