"""Embeddings from a local Ollama server, with the standard library only.

Ollama's ``POST /api/embed`` takes ``{"model": ..., "input": [texts]}`` and answers
``{"embeddings": [[...], ...]}``. This module speaks that with :mod:`urllib`, so using a local
model costs no dependency. Vectors are L2-normalised here (Ollama's usually are already, but
the contract must not depend on the model). The dimension is whatever the model returns; it is
learnt from the first answer unless given, and every later answer must agree.

Whether an Ollama model is deterministic across processes depends on the model and the
runtime; that is the caller's responsibility when choosing it.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence

import numpy as np

from veil.embed._norm import l2_normalise
from veil.embed.errors import EmbedderUnavailable
from veil.embed.protocol import Vectors

DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"
DEFAULT_OLLAMA_MODEL = "nomic-embed-text"
_DEFAULT_PORT = 11434


def ollama_url_from_env(env: Mapping[str, str] | None = None) -> str:
    """The Ollama base URL: ``VEIL_OLLAMA_URL``, else ``OLLAMA_HOST``, else the default.

    ``OLLAMA_HOST`` is often written as ``host:port`` or a bare host (as the ``ollama`` CLI
    accepts); a missing scheme becomes ``http://`` and a missing port 11434.
    """
    env = os.environ if env is None else env
    raw = (env.get("VEIL_OLLAMA_URL") or env.get("OLLAMA_HOST") or "").strip()
    if not raw:
        return DEFAULT_OLLAMA_URL
    if "://" not in raw:
        raw = "http://" + raw
    parts = urllib.parse.urlsplit(raw)
    netloc = parts.netloc
    if parts.port is None:
        netloc = f"{netloc}:{_DEFAULT_PORT}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


class OllamaEmbedder:
    """An :class:`~veil.embed.protocol.Embedder` backed by Ollama's ``/api/embed``.

    Raises :class:`EmbedderUnavailable` when nothing answers at ``base_url`` or the server
    rejects the request (e.g. the model is not pulled), naming the URL and the fix.
    Thread-safe: requests are independent and the learnt dimension is set under a lock.
    """

    def __init__(
        self,
        model: str = DEFAULT_OLLAMA_MODEL,
        base_url: str = DEFAULT_OLLAMA_URL,
        timeout: float = 60.0,
        dim: int | None = None,
        batch_size: int = 64,
    ) -> None:
        self._model = model
        self._base_url = base_url.rstrip("/")
        self._timeout = timeout
        self._dim = dim
        self._batch_size = batch_size
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return self._model

    @property
    def url(self) -> str:
        return f"{self._base_url}/api/embed"

    @property
    def name(self) -> str:
        return f"ollama:{self._model}"

    @property
    def dim(self) -> int:
        """The vector dimension; asks the server once if it was neither given nor seen yet.

        Note that on Python 3.11 ``isinstance(x, Embedder)`` reads this property, so pass
        ``dim`` when constructing if an ``isinstance`` check must not contact the server.
        """
        if self._dim is None:
            self._request(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._request(list(texts[i : i + self._batch_size]))
            for i in range(0, len(texts), self._batch_size)
        ]
        return l2_normalise(np.concatenate(parts, axis=0))

    def _unavailable(self, why: str) -> EmbedderUnavailable:
        return EmbedderUnavailable(
            f"Ollama embedder {self._model!r} is unavailable at {self.url}: {why}. "
            f"Start Ollama with `ollama serve` and fetch the model with "
            f"`ollama pull {self._model}`, or point VEIL_OLLAMA_URL (or OLLAMA_HOST) at a "
            f"running server."
        )

    def _request(self, texts: list[str]) -> np.ndarray[tuple[int, int], np.dtype[np.float32]]:
        body = json.dumps({"model": self._model, "input": texts}).encode("utf-8")
        request = urllib.request.Request(
            self.url, data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                payload: object = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            try:
                detail = exc.read().decode("utf-8", "replace").strip()
            finally:
                exc.close()
            raise self._unavailable(f"HTTP {exc.code} {detail}") from exc
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise self._unavailable(f"no answer ({reason})") from exc
        except json.JSONDecodeError as exc:
            raise self._unavailable(f"the answer is not JSON ({exc})") from exc

        vectors = _parse_embeddings(payload)
        if vectors is None or vectors.shape[0] != len(texts):
            raise self._unavailable("the answer has no `embeddings` list matching the input")
        with self._lock:
            if self._dim is None:
                self._dim = int(vectors.shape[1])
        if vectors.shape[1] != self._dim:
            raise self._unavailable(f"got {vectors.shape[1]}-d vectors, expected {self._dim}")
        return vectors


def _parse_embeddings(payload: object) -> np.ndarray[tuple[int, int], np.dtype[np.float32]] | None:
    if not isinstance(payload, dict):
        return None
    rows = payload.get("embeddings")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(rows, list) or not rows:
        return None
    try:
        array = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError):
        return None
    if array.ndim != 2 or array.shape[1] == 0:
        return None
    return array
