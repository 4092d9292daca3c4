"""The tape: an append-only event log that is the truth, and the projections derived from it.

Open a store with :func:`open_store` (a path, ``sqlite:///…`` or ``postgresql://…``), register
projections, append events. Everything else in Veil is a projection that ``rebuild()``
recreates from the tape.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from veil.clock import Clock
from veil.embed.protocol import Embedder
from veil.tape.events import (
    Event,
    EventConflict,
    InvalidEvent,
    JSONObject,
    JSONValue,
    TapeError,
    canonical_json,
    new_id,
)
from veil.tape.projection import (
    Column,
    Hit,
    IndexText,
    IndexVector,
    Op,
    Patch,
    Projection,
    Put,
    Remove,
    Row,
    Table,
    TextIndex,
    VectorIndex,
)
from veil.tape.store import (
    BackendUnavailable,
    CheckReport,
    ErasureReceipt,
    ProjectionMismatch,
    PurgeRefused,
    PurgeSelection,
    Range,
    RebuildReport,
    Store,
    StoreUnreadable,
    UnknownName,
)

__all__ = [
    "BackendUnavailable",
    "CheckReport",
    "Column",
    "ErasureReceipt",
    "Event",
    "EventConflict",
    "Hit",
    "IndexText",
    "IndexVector",
    "InvalidEvent",
    "JSONObject",
    "JSONValue",
    "Op",
    "Patch",
    "Projection",
    "ProjectionMismatch",
    "PurgeRefused",
    "PurgeSelection",
    "Put",
    "Range",
    "RebuildReport",
    "Remove",
    "Row",
    "Store",
    "StoreUnreadable",
    "Table",
    "TapeError",
    "TextIndex",
    "UnknownName",
    "VectorIndex",
    "canonical_json",
    "new_id",
    "open_store",
    "sqlite_path",
]


def sqlite_path(target: str | Path) -> Path | None:
    """The file a SQLite ``target`` (a path or ``sqlite:///path?…``) names; ``None`` for any
    other URL and for ``:memory:``. Lets a command refuse a store that does not exist instead
    of creating an empty one."""
    if isinstance(target, Path):
        return target
    if target.startswith("sqlite:///"):
        target = target[len("sqlite:///") :].split("?", 1)[0]
    elif "://" in target or target.startswith("sqlite:"):
        return None
    return None if target in ("", ":memory:") else Path(target)


def open_store(
    target: str | Path,
    *,
    embedder: Embedder | None = None,
    clock: Clock | None = None,
    **options: Any,
) -> Store:
    """Open the store named by ``target``: a filesystem path or ``sqlite:///path`` (SQLite),
    or ``postgresql://…`` (PostgreSQL, needs the ``postgres`` extra: without it
    :class:`BackendUnavailable` says which package is missing and the command that installs it).

    Unless ``redaction=`` is given, the store redacts with the settings of its project
    (:func:`veil.tape.redacting.redaction_for`)."""
    if "redaction" not in options:
        from veil.tape.redacting import redaction_for

        path = (
            None
            if isinstance(target, str) and "://" in target and not target.startswith("sqlite:")
            else _path_of(target)
        )
        options["redaction"] = redaction_for(path)
    if isinstance(target, Path):
        from veil.tape.sqlite import SQLiteStore

        return SQLiteStore(target, embedder=embedder, clock=clock, **options)
    if target.startswith(("postgresql://", "postgres://")):
        from veil.tape.postgres import PostgresStore

        return PostgresStore(target, embedder=embedder, clock=clock, **options)
    if target.startswith("sqlite:"):
        from veil.tape.sqlite import SQLiteStore

        return SQLiteStore.from_url(target, embedder=embedder, clock=clock, **options)
    if "://" in target:
        raise ValueError(
            f"unsupported store URL {target!r}: use a path, sqlite:/// or postgresql://"
        )
    from veil.tape.sqlite import SQLiteStore

    return SQLiteStore(target, embedder=embedder, clock=clock, **options)


def _path_of(target: str | Path) -> str:
    """The file a SQLite target names."""
    if isinstance(target, Path):
        return str(target)
    if target.startswith("sqlite:///"):
        return target[len("sqlite:///") :].split("?", 1)[0] or ":memory:"
    return target
