"""Embedders: texts -> L2-normalised float32 vectors (see :mod:`veil.embed.protocol`).

- :class:`StaticEmbedder` (default, spec ``static``): Model2Vec table shipped in the wheel;
  numpy + tokenizers only, ~0.2 s to load, thousands of texts per second.
- :class:`MiniLMEmbedder` (spec ``minilm``): all-MiniLM-L6-v2 int8 ONNX; needs
  the ``minilm`` extra (:func:`veil.extras.install_command`); onnxruntime is imported only
  when it is first used.
- :class:`OllamaEmbedder` (spec ``ollama:<model>``): a local Ollama server, stdlib HTTP.
- :class:`HashEmbedder` (spec ``hash`` or ``hash:<dim>``): feature hashing, for tests.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from veil.embed.errors import EmbedderUnavailable
from veil.embed.protocol import Embedder, Vectors

if TYPE_CHECKING:
    from veil.embed.hashing import HashEmbedder
    from veil.embed.ollama import OllamaEmbedder
    from veil.embed.onnx import MiniLMEmbedder
    from veil.embed.static import StaticEmbedder

_LAZY = {
    "HashEmbedder": "veil.embed.hashing",
    "OllamaEmbedder": "veil.embed.ollama",
    "MiniLMEmbedder": "veil.embed.onnx",
    "StaticEmbedder": "veil.embed.static",
}
"""Embedders are imported on first use (numpy, tokenizers, HTTP): importing this package, or
the protocol, costs nothing — a hook that embeds nothing stays fast."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'veil.embed' has no attribute {name!r}")


__all__ = [
    "Embedder",
    "EmbedderUnavailable",
    "HashEmbedder",
    "MiniLMEmbedder",
    "OllamaEmbedder",
    "StaticEmbedder",
    "Vectors",
    "default_embedder",
    "embedder_from_spec",
    "spec_of",
]

SPEC_HELP = "static (default), hash, hash:<dim>, minilm, ollama:<model>"


def default_embedder() -> StaticEmbedder:
    """The process-wide cached :class:`StaticEmbedder` on the packaged weights."""
    from veil.embed.static import default_static_embedder

    return default_static_embedder()


def embedder_from_spec(spec: str = "static", env: Mapping[str, str] | None = None) -> Embedder:
    """Build an embedder from a short spec string (e.g. from a CLI flag or a config file).

    Specs: ``static`` or empty (the cached default), ``hash`` / ``hash:<dim>``, ``minilm``,
    ``ollama:<model>`` (``ollama`` alone means ``nomic-embed-text``). The Ollama base URL comes
    from ``VEIL_OLLAMA_URL``, else ``OLLAMA_HOST``, else ``http://127.0.0.1:11434``. Nothing is
    loaded or contacted here; that happens on first use. Raises ``ValueError`` on a bad spec,
    and :class:`EmbedderUnavailable` (naming the missing package and the ``pip install``) when
    the spec is ``minilm`` and the ``minilm`` extra is not installed.
    """
    from veil.embed.hashing import HashEmbedder
    from veil.embed.ollama import OllamaEmbedder, ollama_url_from_env
    from veil.embed.onnx import MiniLMEmbedder, require_minilm

    kind, sep, arg = spec.strip().partition(":")
    kind = kind.lower()
    if kind in ("", "static") and not sep:
        return default_embedder()
    if kind == "hash":
        if not sep:
            return HashEmbedder()
        try:
            return HashEmbedder(dim=int(arg))
        except ValueError as exc:
            raise ValueError(f"bad embedder spec {spec!r}: {exc}; expected {SPEC_HELP}") from exc
    if kind == "minilm" and not sep:
        require_minilm()
        return MiniLMEmbedder()
    if kind == "ollama":
        url = ollama_url_from_env(os.environ if env is None else env)
        if sep and not arg:
            raise ValueError(f"bad embedder spec {spec!r}: missing model; expected {SPEC_HELP}")
        return OllamaEmbedder(model=arg, base_url=url) if arg else OllamaEmbedder(base_url=url)
    raise ValueError(f"unknown embedder spec {spec!r}; expected {SPEC_HELP}")


def spec_of(name: str) -> str | None:
    """The spec that builds the embedder called ``name`` (an :attr:`Embedder.name`, as a store
    records it), or ``None`` for an embedder no spec builds: the inverse of
    :func:`embedder_from_spec`, so a message can say which ``--embedder`` a store needs."""
    from veil.embed.hashing import HashEmbedder
    from veil.embed.onnx import MODEL_NAME as MINILM_NAME
    from veil.embed.static import MODEL_NAME as STATIC_NAME

    if name == f"hash-{HashEmbedder().dim}":
        return "hash"
    if name.startswith("hash-") and name[5:].isdigit():
        return f"hash:{name[5:]}"
    if name.startswith(f"{STATIC_NAME}@"):
        return "static"
    if name.startswith(f"{MINILM_NAME}@"):
        return "minilm"
    if name.startswith("ollama:"):
        return name
    return None
