"""The default embedder: a Model2Vec static embedding table shipped inside the wheel.

``m2v-minilm-l6-v2-256d`` is a token -> 256-d vector table distilled from all-MiniLM-L6-v2 by
``scripts/distill_embedder.py``. Embedding a text is tokenising it and averaging the rows of its
tokens, so it needs no torch, no ONNX runtime and no network: only ``tokenizers``,
``safetensors`` and ``numpy``. On LoCoMo it retrieves as well as the full transformer it came
from (see ``benchmarks/embedders.py``) at a fraction of the cost, which is why it is the default.

The weights are read with :mod:`importlib.resources`, so they load the same from a source tree,
an installed wheel or a zip, and never from the Hugging Face hub.

:class:`StaticEmbedder` reproduces ``model2vec.StaticModel.encode`` (model2vec 0.10) exactly,
except that it computes in float32 where model2vec keeps the table's float16:

1. each text is cut to ``max_length * median_token_length`` characters (a cheap pre-truncation
   model2vec applies before tokenising);
2. it is tokenised without special tokens (no ``[CLS]``/``[SEP]``), without padding, truncated
   to ``max_length`` (512) tokens;
3. the ``[UNK]`` token is dropped;
4. the vectors of the remaining tokens are averaged and the mean is L2-normalised.

A text with no known token (the empty string, only unknown symbols) embeds as the zero vector,
as in model2vec: it has no direction, so its cosine similarity to anything is 0.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from tokenizers import Tokenizer

    from veil.embed.protocol import Vectors

MODEL_NAME = "m2v-minilm-l6-v2-256d"
DEFAULT_MAX_LENGTH = 512
_BATCH = 1024
_FILES = ("model.safetensors", "tokenizer.json", "config.json")


def packaged_weights() -> Traversable:
    """The directory of the weights shipped in the package (``veil/embed/weights/...``)."""
    return resources.files("veil.embed").joinpath("weights").joinpath(MODEL_NAME)


@dataclass(frozen=True)
class _Model:
    """Everything loaded from the weights directory; immutable once built."""

    table: NDArray[np.float32]  # (vocab, dim)
    tokenizer: Tokenizer
    unk_id: int | None
    max_length: int | None
    char_limit: int | None
    digest: str


@dataclass(frozen=True)
class _Identity:
    digest: str
    dim: int


def _identify(root: Traversable) -> _Identity:
    """The weights' digest and dimension, without numpy or tokenizers (the safetensors header
    is JSON): a store checks them when it opens, and a process that embeds nothing (a hook,
    a briefing) never pays for loading the table."""
    digest = hashlib.sha256()
    header: bytes = b""
    for name in _FILES:
        blob = root.joinpath(name).read_bytes()
        digest.update(hashlib.sha256(blob).digest())
        if name == "model.safetensors":
            (size,) = struct.unpack("<Q", blob[:8])
            header = blob[8 : 8 + size]
    shape = json.loads(header)["embeddings"]["shape"]
    return _Identity(digest.hexdigest(), int(shape[1]))


def _load(root: Traversable) -> _Model:
    import numpy as np
    from safetensors.numpy import load as load_safetensors
    from tokenizers import Tokenizer

    blobs = {name: root.joinpath(name).read_bytes() for name in _FILES}
    digest = hashlib.sha256()
    for name in _FILES:
        digest.update(hashlib.sha256(blobs[name]).digest())

    tensors = load_safetensors(blobs["model.safetensors"])
    table = np.ascontiguousarray(tensors["embeddings"], dtype=np.float32)
    config = json.loads(blobs["config.json"])
    raw_max = config.get("max_length", DEFAULT_MAX_LENGTH)
    max_length = int(raw_max) if raw_max is not None else None

    tokenizer = Tokenizer.from_str(blobs["tokenizer.json"].decode("utf-8"))
    tokenizer.no_padding()  # padding ids would be averaged in
    if max_length is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length)  # pyright: ignore[reportUnknownMemberType]

    vocab = tokenizer.get_vocab()
    if len(vocab) != table.shape[0]:
        raise ValueError(f"{len(vocab)} tokens but {table.shape[0]} vectors in {root}")
    median_token_length = int(np.median([len(token) for token in vocab]))

    unk_id: int | None = None
    unk_token = getattr(tokenizer.model, "unk_token", None)
    if isinstance(unk_token, str):
        unk_id = tokenizer.token_to_id(unk_token)

    return _Model(
        table=table,
        tokenizer=tokenizer,
        unk_id=unk_id,
        max_length=max_length,
        char_limit=None if max_length is None else max_length * median_token_length,
        digest=digest.hexdigest(),
    )


class StaticEmbedder:
    """Model2Vec static embeddings from the packaged weights (or from ``weights_dir``).

    Loading is lazy (first ``embed``/``name``) and thread-safe; after that the object is
    read-only, so one instance may be shared by threads. ``name`` is
    ``m2v-minilm-l6-v2-256d@<12 hex digits>``, the digest of the weight, tokenizer and config
    files, so a store notices when the weights change.
    """

    def __init__(self, weights_dir: str | os.PathLike[str] | None = None) -> None:
        self._root: Traversable = (
            packaged_weights() if weights_dir is None else Path(os.fspath(weights_dir))
        )
        self._model: _Model | None = None
        self._identity: _Identity | None = None
        self._lock = threading.Lock()

    def _get(self) -> _Model:
        model = self._model
        if model is None:
            with self._lock:
                model = self._model
                if model is None:
                    model = _load(self._root)
                    self._model = model
        return model

    def load(self) -> StaticEmbedder:
        """Load the weights now rather than on first use; returns ``self``."""
        self._get()
        return self

    def _id(self) -> _Identity:
        identity = self._identity
        if identity is None:
            model = self._model
            identity = (
                _identify(self._root)
                if model is None
                else _Identity(model.digest, int(model.table.shape[1]))
            )
            self._identity = identity
        return identity

    @property
    def name(self) -> str:
        return f"{MODEL_NAME}@{self._id().digest[:12]}"

    @property
    def dim(self) -> int:
        return self._id().dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return ``(len(texts), dim)`` float32 rows, L2-normalised (zero for token-less texts)."""
        import numpy as np

        model = self._get()
        out = np.zeros((len(texts), model.table.shape[1]), dtype=np.float32)
        for start in range(0, len(texts), _BATCH):
            batch = texts[start : start + _BATCH]
            out[start : start + len(batch)] = _embed_batch(model, batch)
        return out


def _embed_batch(model: _Model, texts: Sequence[str]) -> Vectors:
    import numpy as np

    limit = model.char_limit
    cut = [text if limit is None else text[:limit] for text in texts]
    encodings = model.tokenizer.encode_batch_fast(cut, add_special_tokens=False)

    lengths = np.empty(len(encodings), dtype=np.int64)
    flat: list[int] = []
    unk = model.unk_id
    for i, encoding in enumerate(encodings):
        ids = encoding.ids
        if unk is not None and unk in ids:
            ids = [token for token in ids if token != unk]
        lengths[i] = len(ids)
        flat.extend(ids)

    out = np.zeros((len(texts), model.table.shape[1]), dtype=np.float32)
    nonempty = lengths > 0
    if not nonempty.any():
        return out
    # Gather every token's row once, then sum each text's contiguous run with reduceat.
    rows = model.table[np.asarray(flat, dtype=np.int64)]
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[nonempty]
    sums = np.add.reduceat(rows, starts, axis=0)
    means = sums / lengths[nonempty, None].astype(np.float32)
    norms = np.linalg.norm(means, axis=1, keepdims=True) + np.float32(1e-32)
    out[nonempty] = means / norms
    return out


@functools.cache
def default_static_embedder() -> StaticEmbedder:
    """The process-wide shared :class:`StaticEmbedder` on the packaged weights (loaded lazily)."""
    return StaticEmbedder()
