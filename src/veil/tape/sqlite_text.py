"""Full-text indexes of the SQLite backend: FTS5, scoped by rowid range.

Each text index is a contentless FTS5 table ``fts_<name>`` (one column, porter stemmer), a
table of its documents ``fts_<name>_docs (id, scope, doc_id, body)`` (the body is needed to
delete a document from a contentless index) and ``fts_<name>_scopes (slot, scope)``. Every
scope gets a slot when its first document is indexed (AUTOINCREMENT: never reused), and its
documents' rowids are ``slot << 32 | n``: a scope is one contiguous rowid range. A query is
``MATCH ... AND rowid BETWEEN lo AND hi ORDER BY rank LIMIT k`` on the FTS table alone — the
range bounds the doclist walk to the scope and there is no scope token to AND (which would
make FTS5 read the scope's whole posting list) — and only the ``k`` winners are looked up in
the documents table, which also re-checks their scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from veil.tape.projection import Hit
from veil.tape.store import fts_query

_SLOT_BITS = 32
_LOCAL = (1 << _SLOT_BITS) - 1
_CHUNK = 500


def ddl(name: str) -> list[str]:
    return [
        f"CREATE TABLE IF NOT EXISTS fts_{name}_scopes (slot INTEGER PRIMARY KEY AUTOINCREMENT, "
        "scope TEXT NOT NULL UNIQUE)",
        f"CREATE TABLE IF NOT EXISTS fts_{name}_docs (id INTEGER PRIMARY KEY, "
        "scope TEXT NOT NULL, doc_id TEXT NOT NULL, body TEXT NOT NULL, "
        "UNIQUE (scope, doc_id))",
        f"CREATE VIRTUAL TABLE IF NOT EXISTS fts_{name} USING fts5(body, "
        "content='', tokenize='porter unicode61 remove_diacritics 2')",
    ]


def drop_ddl(name: str) -> list[str]:
    return [
        f"DROP TABLE IF EXISTS fts_{name}",
        f"DROP TABLE IF EXISTS fts_{name}_docs",
        f"DROP TABLE IF EXISTS fts_{name}_scopes",
    ]


def _range(slot: int) -> tuple[int, int]:
    low = slot << _SLOT_BITS
    return low, low | _LOCAL


def _slot(cur: Any, index: str, scope: str, *, create: bool) -> int | None:
    cur.execute(f"SELECT slot FROM fts_{index}_scopes WHERE scope = ?", (scope,))
    row = cur.fetchone()
    if row is not None:
        return int(row[0])
    if not create:
        return None
    cur.execute(f"INSERT INTO fts_{index}_scopes (scope) VALUES (?) RETURNING slot", (scope,))
    return int(cur.fetchone()[0])


def write(cur: Any, index: str, items: Sequence[tuple[str, str, str]]) -> None:
    """Index ``(scope, doc_id, text)`` in order (empty text removes the document), as a
    handful of ``executemany`` statements for the whole batch."""
    existing: dict[tuple[str, str], tuple[int, str]] = {}
    wanted: dict[str, set[str]] = {}
    for scope, doc_id, _ in items:
        wanted.setdefault(scope, set()).add(doc_id)
    for scope, docs in wanted.items():
        ordered = sorted(docs)
        for start in range(0, len(ordered), _CHUNK):
            chunk = ordered[start : start + _CHUNK]
            cur.execute(
                f"SELECT doc_id, id, body FROM fts_{index}_docs WHERE scope = ? "
                f"AND doc_id IN ({', '.join('?' for _ in chunk)})",
                (scope, *chunk),
            )
            for doc_id, rowid, body in cur.fetchall():
                existing[(scope, str(doc_id))] = (int(rowid), str(body))
    next_id: dict[str, int] = {}
    deletes: list[tuple[int, str]] = []
    inserts: dict[int, tuple[str, str, str]] = {}
    for scope, doc_id, text in items:
        old = existing.pop((scope, doc_id), None)
        if old is not None:
            if old[0] in inserts:
                del inserts[old[0]]  # indexed earlier in this batch: never written
            else:
                deletes.append(old)
        if not text:
            continue
        if scope not in next_id:
            slot = _slot(cur, index, scope, create=True)
            assert slot is not None
            low, high = _range(slot)
            cur.execute(
                f"SELECT COALESCE(MAX(id), ?) FROM fts_{index}_docs WHERE id BETWEEN ? AND ?",
                (low, low, high),
            )
            next_id[scope] = int(cur.fetchone()[0]) + 1
        rowid = next_id[scope]
        next_id[scope] = rowid + 1
        inserts[rowid] = (scope, doc_id, text)
        existing[(scope, doc_id)] = (rowid, text)
    if deletes:
        cur.executemany(
            f"INSERT INTO fts_{index} (fts_{index}, rowid, body) VALUES ('delete', ?, ?)", deletes
        )
        cur.executemany(f"DELETE FROM fts_{index}_docs WHERE id = ?", [(d[0],) for d in deletes])
    if inserts:
        rows = [(rowid, *values) for rowid, values in inserts.items()]
        cur.executemany(
            f"INSERT INTO fts_{index}_docs (id, scope, doc_id, body) VALUES (?, ?, ?, ?)", rows
        )
        cur.executemany(
            f"INSERT INTO fts_{index} (rowid, body) VALUES (?, ?)", [(r[0], r[3]) for r in rows]
        )


def search(cur: Any, index: str, scope: str, query: str, limit: int) -> list[Hit]:
    """The ``limit`` best documents of ``scope`` by BM25 (higher score is better)."""
    slot = _slot(cur, index, scope, create=False)
    if slot is None:
        return []
    low, high = _range(slot)
    cur.execute(
        f"SELECT rowid, rank FROM fts_{index} WHERE fts_{index} MATCH ? "
        "AND rowid BETWEEN ? AND ? ORDER BY rank LIMIT ?",
        (fts_query(query), low, high, limit),
    )
    ranked = [(int(r[0]), float(r[1])) for r in cur.fetchall()]
    if not ranked:
        return []
    cur.execute(
        f"SELECT id, doc_id FROM fts_{index}_docs WHERE scope = ? "
        f"AND id IN ({', '.join('?' for _ in ranked)})",
        (scope, *(r[0] for r in ranked)),
    )
    docs = {int(r[0]): str(r[1]) for r in cur.fetchall()}
    return [Hit(docs[rowid], -rank) for rowid, rank in ranked if rowid in docs]


def dump(cur: Any, index: str) -> list[tuple[Any, ...]]:
    cur.execute(f"SELECT scope, doc_id, body FROM fts_{index}_docs")
    return [tuple(r) for r in cur.fetchall()]


def erase(cur: Any, index: str, scope: str) -> None:
    cur.execute(f"SELECT id, body FROM fts_{index}_docs WHERE scope = ?", (scope,))
    rows = [(int(r[0]), str(r[1])) for r in cur.fetchall()]
    cur.executemany(
        f"INSERT INTO fts_{index} (fts_{index}, rowid, body) VALUES ('delete', ?, ?)", rows
    )
    cur.execute(f"DELETE FROM fts_{index}_docs WHERE scope = ?", (scope,))
    cur.execute(f"DELETE FROM fts_{index}_scopes WHERE scope = ?", (scope,))
    # Merge segments so deleted terms are dropped from the index, not just masked.
    cur.execute(f"INSERT INTO fts_{index} (fts_{index}) VALUES ('optimize')")
