"""The SQLite the store runs on: the bundled one of ``sqlean.py``, on every platform.

The store needs FTS5 and SQLite 3.35 or later (``RETURNING``). The stdlib ``sqlite3`` has them
only when the interpreter was built against such a library: older system libraries (3.34 and
earlier) lack ``RETURNING`` and some builds leave FTS5 out. ``sqlean.py`` is a drop-in DB-API
module with its own recent SQLite built with FTS5, so every platform runs the SQLite the tests
run on, and nothing is probed at start-up.

No extension is loaded: vectors are searched in process (:mod:`veil.tape.sqlite_vectors`),
measured faster than sqlite-vec on the same rows (``python -m benchmarks.vector_search``).
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any


@functools.cache
def driver() -> ModuleType:
    """The DB-API module of the bundled SQLite."""
    import sqlean  # pyright: ignore[reportMissingTypeStubs]

    return sqlean


def connect(path: str, *, timeout_s: float) -> Any:
    """Open a connection in autocommit mode (transactions are explicit)."""
    module = driver()
    return module.connect(path, timeout=timeout_s, isolation_level=None, check_same_thread=False)


def driver_name() -> str:
    module = driver()
    return f"{module.__name__} (SQLite {module.sqlite_version})"
