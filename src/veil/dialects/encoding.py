"""A request body's ``Content-Encoding``, decoded: what every dialect's clients may send (Codex
compresses its requests with zstd). Pure; ``zstandard`` is imported only for a zstd body.
"""

from __future__ import annotations

import gzip
import importlib
import zlib
from typing import Any


class Unsupported(ValueError):
    """A coding this decoder does not know (or ``zstandard`` is not installed)."""


def decode(raw: bytes, encoding: str | None) -> bytes:
    """``raw`` decoded from its ``Content-Encoding``: ``gzip`` (``x-gzip``), ``deflate``,
    ``zstd`` or ``identity``, or a comma-separated chain of them (applied last first).
    Raises :class:`Unsupported` for another coding, ValueError for a body its coding cannot
    decode."""
    for coding in reversed([c.strip().lower() for c in (encoding or "").split(",") if c.strip()]):
        if coding == "identity":
            continue
        if coding not in ("gzip", "x-gzip", "deflate", "zstd"):
            raise Unsupported(f"unsupported Content-Encoding: {coding}")
        zstandard = _zstandard() if coding == "zstd" else None
        try:
            if zstandard is not None:
                # stream_reader copes with frames that do not state their content size
                with zstandard.ZstdDecompressor().stream_reader(raw) as reader:
                    raw = bytes(reader.read())
            elif coding == "deflate":
                raw = zlib.decompress(raw)
            else:
                raw = gzip.decompress(raw)
        except Exception as exc:  # each codec has its own error classes
            raise ValueError(f"cannot decode a {coding} body: {exc}") from None
    return raw


def _zstandard() -> Any:
    try:
        return importlib.import_module("zstandard")
    except ImportError:
        raise Unsupported(
            "a zstd request body needs the 'zstandard' package (pip install zstandard)"
        ) from None
