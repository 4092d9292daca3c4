"""Choosing a SQLite that can load sqlite-vec.

The stdlib ``sqlite3`` is used when it was built with extension loading; many Pythons (this
project's CI interpreter, macOS system Python) are not, and then the bundled SQLite of
``sqlean.py`` (a drop-in DB-API module with FTS5 and extension loading) is used. Both expose
the same DB-API surface, so the backend code is identical on either path.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sqlite3
from types import ModuleType
from typing import Any


@functools.cache
def vec_extension() -> str:
    """The path of sqlite-vec's loadable extension, found without importing ``sqlite_vec``
    (whose import loads numpy when it is installed: 120 ms a hook cannot afford)."""
    spec = importlib.util.find_spec("sqlite_vec")
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise ImportError("sqlite-vec is not installed (pip install sqlite-vec)")
    return os.path.normpath(os.path.join(locations[0], "vec0"))


def _stdlib_can_load() -> bool:
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        return False
    try:
        conn = sqlite3.connect(":memory:")
        try:
            conn.enable_load_extension(True)
            conn.load_extension(vec_extension())
            conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        finally:
            conn.close()
    except Exception:
        return False
    return True


@functools.cache
def driver() -> ModuleType:
    """The DB-API module to use: stdlib ``sqlite3`` if it can load extensions, else sqlean."""
    if _stdlib_can_load():
        return sqlite3
    import sqlean  # pyright: ignore[reportMissingTypeStubs]

    return sqlean


def connect(path: str, *, timeout_s: float) -> Any:
    """Open a connection in autocommit mode (transactions are explicit) with sqlite-vec loaded."""
    module = driver()
    conn: Any = module.connect(
        path, timeout=timeout_s, isolation_level=None, check_same_thread=False
    )
    conn.enable_load_extension(True)
    conn.load_extension(vec_extension())
    conn.enable_load_extension(False)
    return conn


def driver_name() -> str:
    module = driver()
    return f"{module.__name__} (SQLite {module.sqlite_version})"
