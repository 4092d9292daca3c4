"""Sidecar files: the in-process vector indexes of a SQLite store, kept next to its file.

``<db>.vectors/<index>/<scope hash>.npz`` holds one :class:`~veil.tape.vectors.Snapshot` (the
ids by position, the normalised float32 matrix, the projection basis when there is one)
with a header: the format version, the index's epoch (a token the store renews whenever the
vector table is recreated or rebuilt), the number of erasure receipts when it was written, the
embedder's name and dimension, and the watermark — the highest tape ``seq`` it reflects.

A sidecar is a cache of a projection, never the truth: a file that is missing, unreadable, of
another format, epoch or embedder is ignored (and the index rebuilt from the vector table), and
a valid one is caught up from the table's rows with ``seq`` above its watermark. Files are
written to a temporary name and renamed, so a reader never sees half a file. The scope appears
only as a SHA-256 hash in the file name; ``erase`` deletes the file with the scope's rows.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from veil.tape.vectors import Snapshot

FORMAT = 1


@dataclass(frozen=True)
class Header:
    """What a sidecar must agree with before its content is used."""

    epoch: str
    erasures: int
    embedder: str
    dim: int


def scope_hash(scope: str) -> str:
    return hashlib.sha256(scope.encode()).hexdigest()[:32]


def root_of(db_path: str) -> Path | None:
    """The sidecar directory of a SQLite file (``None`` for ``:memory:``)."""
    return None if db_path == ":memory:" else Path(f"{db_path}.vectors")


def path_of(root: Path, index: str, scope: str) -> Path:
    return root / index / f"{scope_hash(scope)}.npz"


def save(path: Path, header: Header, snapshot: Snapshot) -> None:
    """Write ``snapshot`` atomically (temporary file, then rename)."""
    lengths = np.asarray(
        [-1 if doc is None else len(doc.encode()) for doc in snapshot.ids], dtype=np.int64
    )
    blob = "".join(doc for doc in snapshot.ids if doc is not None).encode()
    meta = {
        "format": FORMAT,
        "epoch": header.epoch,
        "erasures": header.erasures,
        "embedder": header.embedder,
        "dim": header.dim,
        "watermark": snapshot.watermark,
        "fitted_at": snapshot.fitted_at,
    }
    arrays: dict[str, np.ndarray] = {
        "meta": np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
        "id_lengths": lengths,
        "id_bytes": np.frombuffer(blob, dtype=np.uint8),
        "matrix": np.ascontiguousarray(snapshot.matrix, dtype=np.float32),
    }
    if snapshot.basis is not None:
        arrays["basis"] = np.ascontiguousarray(snapshot.basis, dtype=np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            np.savez(out, allow_pickle=False, **arrays)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def load(path: Path, expected: Header) -> Snapshot | None:
    """The snapshot in ``path`` if it exists, is readable and matches ``expected`` (same
    epoch, embedder and dimension; written at or after ``expected.erasures`` receipts is not
    required: the caller checks receipts newer than the file's). ``None`` otherwise."""
    found = read_header(path)
    if found is None:
        return None
    header, watermark, fitted_at = found
    if (header.epoch, header.embedder, header.dim) != (
        expected.epoch,
        expected.embedder,
        expected.dim,
    ):
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            lengths = data["id_lengths"]
            blob = bytes(data["id_bytes"].tobytes())
            matrix = np.array(data["matrix"], dtype=np.float32)
            basis = np.array(data["basis"], dtype=np.float32) if "basis" in data.files else None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None
    ids: list[str | None] = []
    offset = 0
    for length in lengths.tolist():
        if length < 0:
            ids.append(None)
            continue
        ids.append(blob[offset : offset + length].decode())
        offset += length
    if matrix.shape != (len(ids), expected.dim):
        return None
    return Snapshot(expected.dim, watermark, tuple(ids), matrix, basis, fitted_at)


def read_header(path: Path) -> tuple[Header, int, int] | None:
    """The header, watermark and fit size of a sidecar (``None`` if absent or unreadable)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            raw: Any = json.loads(data["meta"].tobytes().decode())
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        return None
    if not isinstance(raw, dict):
        return None
    meta = cast(dict[str, Any], raw)
    if meta.get("format") != FORMAT:
        return None
    try:
        header = Header(
            str(meta["epoch"]), int(meta["erasures"]), str(meta["embedder"]), int(meta["dim"])
        )
        return header, int(meta["watermark"]), int(meta.get("fitted_at", 0))
    except (KeyError, TypeError, ValueError):
        return None


def files(root: Path, index: str) -> list[Path]:
    folder = root / index
    return sorted(folder.glob("*.npz")) if folder.is_dir() else []


def remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def remove_index(root: Path, index: str) -> None:
    shutil.rmtree(root / index, ignore_errors=True)
