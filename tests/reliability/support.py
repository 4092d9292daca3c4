"""Shared helpers of the reliability suite: run sizes, deterministic models, store checks.

Default runs are short samples (seconds); ``VEIL_RELIABILITY_FULL=1`` runs the full sizes
documented in docs/reliability.md. ``VEIL_RELIABILITY_SEED`` changes the seed of every run.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from veil.agent.sessions import SessionProjection
from veil.context.projection import ContextProjection
from veil.memory.projection import MemoryProjection
from veil.tape import Store, open_store
from veil.tape.events import seal
from veil.testing import HashEmbedder

FULL = os.environ.get("VEIL_RELIABILITY_FULL", "") not in ("", "0")
SEED = int(os.environ.get("VEIL_RELIABILITY_SEED", "20240611"))
FIGURES = os.environ.get("VEIL_RELIABILITY_FIGURES", "")
"""When set, each full run appends one JSON line of its figures to this file."""

_EVIDENCE = re.compile(r"<evidence [^>]*>\n(.*)\n</evidence>", re.S)


def size(short: int, full: int) -> int:
    """``short`` in the default run, ``full`` with ``VEIL_RELIABILITY_FULL=1``."""
    return full if FULL else short


def record_figures(name: str, **figures: Any) -> None:
    """Print a run's figures (shown with ``-s``); append them to ``$VEIL_RELIABILITY_FIGURES``."""
    line = json.dumps({"test": name, "full": FULL, "seed": SEED, **figures}, sort_keys=True)
    print(f"\n[reliability] {line}")
    if FIGURES:
        with Path(FIGURES).open("a", encoding="utf-8") as out:
            out.write(line + "\n")


def evidence_text(messages: Sequence[dict[str, Any]]) -> str:
    """The evidence block of an extraction prompt (what the user said)."""
    user = next(m for m in reversed(messages) if m["role"] == "user")
    match = _EVIDENCE.search(str(user["content"]))
    return match.group(1) if match else ""


def fact(
    subject: str, relation: str, obj: str, statement: str, *, claimant: str = "user"
) -> dict[str, Any]:
    return {
        "subject": subject,
        "relation": relation,
        "object": obj,
        "statement": statement,
        "volatility": "durable",
        "claimant": claimant,
        "supersedes": None,
    }


class TokenEchoModel:
    """Deterministic, stateless extraction: every ``tok…`` word of the evidence becomes
    (user, works_on, tok…), ``prefer(s) X`` becomes (user, prefers, X), and one interaction
    episode repeats the first 200 characters. Canary tokens therefore flow into facts,
    episodes, FTS and vectors of the scope that was told them."""

    def __call__(self, messages: list[dict[str, Any]], *, json_schema: Any = None) -> str:
        text = evidence_text(messages)
        facts: list[dict[str, Any]] = []
        for obj in re.findall(r"\bprefers? (\w+)", text):
            facts.append(fact("user", "prefers", obj, f"The user prefers {obj}."))
        for token in dict.fromkeys(re.findall(r"\b(tok[0-9a-z]+)\b", text)):
            facts.append(fact("user", "works_on", token, f"The user works on {token}."))
        episodes = [{"kind": "interaction", "text": text[:200] or "nothing", "due": None}]
        return json.dumps({"facts": facts, "episodes": episodes})


def is_postgres(target: Path | str) -> bool:
    """``target`` is a PostgreSQL DSN (``postgresql://…``), not a SQLite path."""
    return isinstance(target, str) and target.startswith(("postgresql://", "postgres://"))


def open_all(path: Path | str) -> Store:
    """A store with every projection the writers use registered (memory, working memory,
    sessions), so ``check()`` compares all of them with a rebuild. ``path`` is a SQLite file,
    or a PostgreSQL DSN."""
    store = open_store(path if is_postgres(path) else Path(path), embedder=HashEmbedder())
    store.register(MemoryProjection(), ContextProjection(), SessionProjection())
    return store


def event_digest_problems(path: Path | str) -> list[str]:
    """Every event row must decode and re-seal to the digest stored with it: no partial or
    torn event can hide on the tape. ``path`` is a SQLite file, or a PostgreSQL DSN (the rows
    are then read over a connection of their own)."""
    problems: list[str] = []
    store = open_store(path if is_postgres(path) else Path(path), embedder=HashEmbedder())
    try:
        events = store.scan()
    finally:
        store.close()
    if is_postgres(path):
        import psycopg

        with psycopg.connect(str(path)) as pg:
            stored = dict(pg.execute("SELECT id, digest FROM tape_events").fetchall())
    else:
        conn = sqlite3.connect(str(path))
        try:
            stored = dict(conn.execute("SELECT id, digest FROM tape_events").fetchall())
        finally:
            conn.close()
    for event in events:
        if stored.get(event.id) != seal(event).digest:
            problems.append(f"event {event.id} does not match its digest")
    if len(stored) != len(events):
        problems.append(f"{len(stored)} rows but {len(events)} decodable events")
    return problems


class CanaryModel(TokenEchoModel):
    """:class:`TokenEchoModel` that also attaches the first ``tok…`` word to the first two
    capitalised names (shared LoCoMo speakers, so many scopes hold the same entity), and
    answers consolidation prompts (``maintain``) by merging old episodes in pairs."""

    def __call__(self, messages: list[dict[str, Any]], *, json_schema: Any = None) -> str:
        if json_schema is not None and "facts" not in json.dumps(json_schema):
            return merge_pairs(messages)
        out = json.loads(super().__call__(messages, json_schema=json_schema))
        text = evidence_text(messages)
        tokens = re.findall(r"\b(tok[0-9a-z]+)\b", text)
        if tokens:
            for name in list(dict.fromkeys(re.findall(r"\b([A-Z][a-z]{3,})\b", text)))[:2]:
                out["facts"].append(
                    fact(name, "works_on", tokens[0], f"{name} works on {tokens[0]}.")
                )
        return json.dumps(out)


def merge_pairs(messages: Sequence[dict[str, Any]]) -> str:
    """A consolidation answer merging the listed episodes in pairs."""
    ids = [
        line.split("id=", 1)[1].split(" |", 1)[0]
        for line in str(messages[-1]["content"]).splitlines()
        if line.startswith("- id=")
    ]
    pairs = [ids[i : i + 2] for i in range(0, len(ids) - 1, 2)]
    episodes = [
        {"kind": "interaction", "text": f"merged {len(p)} episodes", "source_ids": p} for p in pairs
    ]
    return json.dumps({"episodes": episodes})


def pg_durability_settings(dsn: str) -> dict[str, str]:
    """The server settings a PostgreSQL commit's durability depends on (for the figures)."""
    import psycopg

    names = ("server_version", "fsync", "synchronous_commit", "full_page_writes", "wal_sync_method")
    settings: dict[str, str] = {}
    with psycopg.connect(dsn) as pg:
        for name in names:
            row = pg.execute(f"SHOW {name}").fetchone()
            settings[name] = str(row[0]) if row else "?"
    return settings


def with_pg_options(dsn: str, options: str) -> str:
    """``dsn`` (a ``postgresql://`` URI) with libpq ``options`` added, e.g.
    ``-c lock_timeout=5000``: server settings for every connection opened with it."""
    from urllib.parse import quote

    return f"{dsn}{'&' if '?' in dsn else '?'}options={quote(options, safe='')}"
