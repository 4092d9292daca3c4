"""Row-level security on PostgreSQL: the policy is on every scoped table, and a raw SELECT
under a set ``veil.scope`` sees only that scope's rows (as an ordinary role; superusers
bypass RLS by design)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from tests.server.conftest import EchoModel, app_role_database
from veil.memory import Memory
from veil.testing import HashEmbedder


@pytest.fixture
def app_dsn(pg_server_dsn: str) -> Iterator[str]:
    yield from app_role_database(pg_server_dsn)


def q(template: str, table: str) -> sql.Composed:
    return sql.SQL(template).format(sql.Identifier(table))  # pyright: ignore[reportArgumentType]


def scoped_tables(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT c.table_name FROM information_schema.columns c "
        "JOIN information_schema.tables t ON t.table_schema = c.table_schema "
        "AND t.table_name = c.table_name WHERE c.table_schema = current_schema() "
        "AND c.column_name = 'scope' AND t.table_type = 'BASE TABLE'"
    ).fetchall()
    return sorted(str(r[0]) for r in rows)


def test_raw_select_under_a_scope_sees_only_that_scope(app_dsn: str) -> None:
    with Memory(app_dsn, complete=EchoModel(), embedder=HashEmbedder()) as memory:
        for scope in ("user:a", "user:b", "user:c"):
            memory.remember(f"I prefer vim for tok{scope[-1]}", user_id=scope)
        # the store's scoped reads work under RLS as the owning (non-superuser) role
        assert {f.object for f in memory.facts("user:b")} == {"vim", "tokb"}
        assert "tokb" in memory.recall("tokb", user_id="user:b").text
        assert "tokb" not in memory.recall("tokb tokc", user_id="user:a").text
    with psycopg.connect(app_dsn, autocommit=True) as conn:
        assert conn.execute(
            "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
        ).fetchone() == (False,)
        tables = scoped_tables(conn)
        assert {"tape_events", "mem_facts", "mem_evidence"} <= set(tables)
        assert any(t.startswith("fts_") for t in tables) and any(
            t.startswith("vec_") for t in tables
        )
        flags = dict(
            conn.execute(
                "SELECT relname, relrowsecurity AND relforcerowsecurity FROM pg_class "
                "WHERE relname = ANY(%s)",
                (tables,),
            ).fetchall()
        )
        assert flags == {t: True for t in tables}
        seen_unset: set[str] = set()
        for table in tables:
            with conn.transaction():
                conn.execute("SELECT set_config('veil.scope', 'user:b', true)")
                scopes = {r[0] for r in conn.execute(q("SELECT DISTINCT scope FROM {}", table))}
                assert scopes <= {"user:b"}, (table, scopes)
                # not even a predicate naming another scope gets through
                other = conn.execute(
                    q("SELECT count(*) FROM {} WHERE scope = 'user:a'", table)
                ).fetchone()
                assert other == (0,)
            # after the transaction the setting is '' (not NULL): administrative, sees all
            seen_unset |= {r[0] for r in conn.execute(q("SELECT DISTINCT scope FROM {}", table))}
        assert {"user:a", "user:b", "user:c"} <= seen_unset
        with conn.transaction():
            conn.execute("SELECT set_config('veil.scope', 'user:nobody', true)")
            assert conn.execute("SELECT count(*) FROM tape_events").fetchone() == (0,)


def test_admin_paths_still_work_under_rls(app_dsn: str) -> None:
    with Memory(app_dsn, complete=EchoModel(), embedder=HashEmbedder()) as memory:
        memory.remember("tokone", user_id="user:a")
        memory.remember("toktwo", user_id="user:b")
        store = memory.store
        assert {e.scope for e in store.scan()} == {"user:a", "user:b"}
        assert store.check().ok
        report = store.rebuild()
        assert report.events == len(store.scan())
        receipt = memory.forget("user:a")
        assert receipt.events > 0
        assert memory.facts("user:a") == [] and len(memory.facts("user:b")) == 1
