"""Full-text indexes of the SQLite backend: FTS5, scoped by rowid range.

Each text index is a contentless FTS5 table ``fts_<name>`` (porter stemmer; the text, and a
scope token that only keeps BM25's document lengths as they were: see :func:`scope_token`), a
table of its documents ``fts_<name>_docs (id, scope, doc_id, body)`` (the body is needed to
delete a document from a contentless index) and ``fts_<name>_scopes (slot, scope)``. Every
scope gets a slot when its first document is indexed (AUTOINCREMENT: never reused), and its
documents' rowids are ``slot << 32 | n``: a scope is one contiguous rowid range. A query is
``MATCH ... AND rowid BETWEEN lo AND hi ORDER BY rank LIMIT k`` on the FTS table alone — the
range bounds the doclist walk to the scope and there is no scope token to AND (which would
make FTS5 read the scope's whole posting list) — and only the ``k`` winners are looked up in
the documents table, which also re-checks their scope.

BM25 top-k in FTS5 scores every document that matches any term (``ORDER BY rank`` cannot stop
early), so an OR of a rare and a common term costs the common term's whole posting list in
the scope. The query is therefore bounded: the terms are ordered by how many of the scope's
documents hold them (counted with an unranked ``MATCH``, about twenty times cheaper per posting
than ranking, and cached per scope until the scope grows by a quarter), the rarest is always
kept, and each further term only while the kept terms' postings stay within
``max(2 x the rarest's, 1,000)`` (:func:`~veil.tape.store.bounded_terms`). A term left out
matches too many documents to tell them apart anyway (its inverse document frequency is the
lowest of the query's); a scope small enough (every query of a LoCoMo conversation) keeps
every term, so ranking there is plain BM25.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import Any

from veil.tape.projection import Hit
from veil.tape.store import bounded_terms, fts_terms

_SLOT_BITS = 32
_LOCAL = (1 << _SLOT_BITS) - 1
_CHUNK = 500
_CACHED_TERMS = 20_000


class TermCounts:
    """Per (index, scope) document frequencies of query terms, cached until the scope has
    grown by a quarter (a stale count only changes which terms a query keeps, never what a
    kept term matches). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str, int], tuple[int, dict[str, int]]] = {}

    def of(self, cur: Any, index: str, scope: str, slot: int, terms: Sequence[str]) -> list[int]:
        low, high = _range(slot)
        cur.execute(
            f"SELECT COALESCE(MAX(id), ?) - ? FROM fts_{index}_docs WHERE id BETWEEN ? AND ?",
            (low, low, low, high),
        )
        size = int(cur.fetchone()[0])
        key = (index, scope, slot)
        with self._lock:
            cached_size, counts = self._counts.get(key, (size, {}))
            if size > cached_size * 1.25 + 16 or len(counts) > _CACHED_TERMS:
                cached_size, counts = size, {}
            self._counts[key] = (cached_size, counts)
            missing = [t for t in terms if t not in counts]
        found: dict[str, int] = {}
        for term in missing:
            cur.execute(
                f"SELECT COUNT(*) FROM fts_{index} WHERE fts_{index} MATCH ? "
                "AND rowid BETWEEN ? AND ?",
                (f"body : {_phrase(term)}", low, high),
            )
            found[term] = int(cur.fetchone()[0])
        with self._lock:
            counts.update(found)
            return [counts.get(t, found.get(t, 0)) for t in terms]


def _phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def ddl(name: str) -> list[str]:
    return [
        f"CREATE TABLE IF NOT EXISTS fts_{name}_scopes (slot INTEGER PRIMARY KEY AUTOINCREMENT, "
        "scope TEXT NOT NULL UNIQUE)",
        f"CREATE TABLE IF NOT EXISTS fts_{name}_docs (id INTEGER PRIMARY KEY, "
        "scope TEXT NOT NULL, doc_id TEXT NOT NULL, body TEXT NOT NULL, "
        "UNIQUE (scope, doc_id))",
        f"CREATE VIRTUAL TABLE IF NOT EXISTS fts_{name} USING fts5(body, scopekey, "
        "content='', tokenize='porter unicode61 remove_diacritics 2')",
    ]


def drop_ddl(name: str) -> list[str]:
    return [
        f"DROP TABLE IF EXISTS fts_{name}",
        f"DROP TABLE IF EXISTS fts_{name}_docs",
        f"DROP TABLE IF EXISTS fts_{name}_scopes",
    ]


def scope_token(scope: str) -> str:
    """The one token of a document's second column: a hash of its scope. Never queried; it
    keeps every document one token longer, as the index was before rowid ranges replaced the
    scope token as the filter, so BM25's length normalisation (and every ranking) is the
    same as it was."""
    return "s" + hashlib.sha256(scope.encode()).hexdigest()[:24]


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
    deletes: list[tuple[int, str, str]] = []
    inserts: dict[int, tuple[str, str, str]] = {}
    for scope, doc_id, text in items:
        old = existing.pop((scope, doc_id), None)
        if old is not None:
            if old[0] in inserts:
                del inserts[old[0]]  # indexed earlier in this batch: never written
            else:
                deletes.append((*old, scope))
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
            f"INSERT INTO fts_{index} (fts_{index}, rowid, body, scopekey) "
            "VALUES ('delete', ?, ?, ?)",
            [(rowid, body, scope_token(scope)) for rowid, body, scope in deletes],
        )
        cur.executemany(f"DELETE FROM fts_{index}_docs WHERE id = ?", [(d[0],) for d in deletes])
    if inserts:
        rows = [(rowid, *values) for rowid, values in inserts.items()]
        cur.executemany(
            f"INSERT INTO fts_{index}_docs (id, scope, doc_id, body) VALUES (?, ?, ?, ?)", rows
        )
        cur.executemany(
            f"INSERT INTO fts_{index} (rowid, body, scopekey) VALUES (?, ?, ?)",
            [(r[0], r[3], scope_token(r[1])) for r in rows],
        )


def search(
    cur: Any, index: str, scope: str, query: str, limit: int, counts: TermCounts
) -> list[Hit]:
    """The ``limit`` best documents of ``scope`` by BM25 over the query's bounded terms
    (higher score is better)."""
    slot = _slot(cur, index, scope, create=False)
    terms = fts_terms(query)
    if slot is None or not terms:
        return []
    kept = bounded_terms(terms, counts.of(cur, index, scope, slot, terms))
    if not kept:
        return []
    low, high = _range(slot)
    cur.execute(
        f"SELECT rowid, bm25(fts_{index}, 1.0, 0.0) AS rank FROM fts_{index} "
        f"WHERE fts_{index} MATCH ? "
        "AND rowid BETWEEN ? AND ? ORDER BY rank LIMIT ?",
        ("body : (" + " OR ".join(_phrase(t) for t in kept) + ")", low, high, limit),
    )
    ranked = [(int(r[0]), float(r[1])) for r in cur.fetchall()]
    if not ranked:
        return []
    cur.execute(docs_sql(index, len(ranked)), (scope, *(r[0] for r in ranked)))
    docs = {int(r[0]): str(r[1]) for r in cur.fetchall()}
    return [Hit(docs[rowid], -rank) for rowid, rank in ranked if rowid in docs]


def docs_sql(index: str, n: int) -> str:
    """The lookup of ``n`` ranked rowids' document ids. ``+scope`` keeps the planner on the
    rowids: without table statistics (a handle that has just imported, before any ``ANALYZE``)
    it took the scope's index instead and read every document of the scope — 20x slower at 30k
    documents."""
    marks = ", ".join("?" for _ in range(n))
    return f"SELECT id, doc_id FROM fts_{index}_docs WHERE +scope = ? AND id IN ({marks})"


def dump(cur: Any, index: str) -> list[tuple[Any, ...]]:
    cur.execute(f"SELECT scope, doc_id, body FROM fts_{index}_docs")
    return [tuple(r) for r in cur.fetchall()]


def erase(cur: Any, index: str, scope: str) -> None:
    cur.execute(f"SELECT id, body FROM fts_{index}_docs WHERE scope = ?", (scope,))
    token = scope_token(scope)
    rows = [(int(r[0]), str(r[1]), token) for r in cur.fetchall()]
    cur.executemany(
        f"INSERT INTO fts_{index} (fts_{index}, rowid, body, scopekey) VALUES ('delete', ?, ?, ?)",
        rows,
    )
    cur.execute(f"DELETE FROM fts_{index}_docs WHERE scope = ?", (scope,))
    cur.execute(f"DELETE FROM fts_{index}_scopes WHERE scope = ?", (scope,))
    # Merge segments so deleted terms are dropped from the index, not just masked.
    cur.execute(f"INSERT INTO fts_{index} (fts_{index}) VALUES ('optimize')")
