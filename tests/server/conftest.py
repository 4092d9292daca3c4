"""Fixtures of the server tests: real uvicorn servers on 127.0.0.1 over SQLite and PostgreSQL.

On PostgreSQL the server connects as an ordinary (non-superuser) role that owns its database,
as docs/deploy.md recommends, so the row-level-security policies are in force for the whole
API suite (superusers bypass RLS).
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from tests.conftest import with_dbname
from veil.memory import Memory, MemoryConfig
from veil.server.app import ServerSettings, create_app
from veil.server.keys import Authority, KeyRing
from veil.testing import HashEmbedder

APP_ROLE = "veil_app"

_EVIDENCE = re.compile(r"<evidence [^>]*>\n(.*)\n</evidence>", re.S)


class EchoModel:
    """A deterministic extraction model for tests: ``prefer(s) X`` gives the fact
    (user, prefers, X); every ``tok…`` word gives (user, works_on, tok…). Thread-safe, no
    state, so any number of concurrent writers get facts derived from their own evidence."""

    def __call__(self, messages: list[dict[str, Any]], *, json_schema: Any = None) -> str:
        user = next(m for m in reversed(messages) if m["role"] == "user")
        match = _EVIDENCE.search(str(user["content"]))
        text = match.group(1) if match else ""
        facts: list[dict[str, Any]] = []
        for obj in re.findall(r"\bprefers? (\w+)", text):
            facts.append(fact("user", "prefers", obj, f"The user prefers {obj}."))
        for token in dict.fromkeys(re.findall(r"\b(tok[0-9a-z]+)\b", text)):
            facts.append(fact("user", "works_on", token, f"The user works on {token}."))
        return json.dumps({"facts": facts, "episodes": []})


def fact(subject: str, relation: str, obj: str, statement: str) -> dict[str, Any]:
    return {
        "subject": subject,
        "relation": relation,
        "object": obj,
        "statement": statement,
        "volatility": "durable",
        "claimant": "user",
        "supersedes": None,
    }


def free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@dataclass
class LiveServer:
    """A running API server: its base URL, key ring and memory."""

    url: str
    keys: KeyRing
    memory: Memory
    backend: str

    def key(self, *scopes: str, authority: Authority = "user", admin: bool = False) -> str:
        return self.keys.create(scopes, authority=authority, admin=admin).token

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30.0)


@dataclass
class _Running:
    server: uvicorn.Server
    thread: threading.Thread
    sock: socket.socket


def start_uvicorn(app: Any) -> tuple[str, Callable[[], None]]:
    """Serve ``app`` on a free 127.0.0.1 port in a thread; returns (url, stop)."""
    sock = free_socket()
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    running = _Running(server, thread, sock)

    def stop() -> None:
        running.server.should_exit = True
        running.thread.join(timeout=10)
        running.sock.close()

    return f"http://127.0.0.1:{port}", stop


def app_role_database(server_dsn: str) -> Iterator[str]:
    """A fresh database owned by the non-superuser role :data:`APP_ROLE` (vector extension
    pre-created by the superuser, as a DBA would); yields a DSN that logs in as that role."""
    import psycopg
    from psycopg import sql

    name = f"veil_srv_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (APP_ROLE,)).fetchone()
        if exists is None:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(APP_ROLE)))
        conn.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(name), sql.Identifier(APP_ROLE)
            )
        )
    admin_dsn = with_dbname(server_dsn, name)
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    yield as_role(admin_dsn, APP_ROLE)
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def as_role(dsn: str, role: str) -> str:
    """The DSN with its user replaced (the test server trusts local connections)."""
    match = re.match(r"^(postgres(?:ql)?://)([^@/]*@)?(.*)$", dsn)
    if not match:
        raise ValueError(f"unsupported DSN {dsn!r}")
    return f"{match.group(1)}{role}@{match.group(3)}"


def memory_target(backend: str, request: pytest.FixtureRequest, tmp: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield str(tmp / "memory.db")
        return
    yield from app_role_database(request.getfixturevalue("pg_server_dsn"))


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    """One real server per backend per test module (tests use their own scopes)."""
    backend = str(request.param)
    targets = memory_target(backend, request, tmp_path_factory.mktemp("srv"))
    target = next(targets)
    memory = Memory(
        target,
        complete=EchoModel(),
        embedder=HashEmbedder(),
        config=MemoryConfig(),
        actor="server",
    )
    keys = KeyRing(memory.store)
    app = create_app(memory, keys, ServerSettings(rate_per_s=0))
    url, stop = start_uvicorn(app)
    try:
        yield LiveServer(url, keys, memory, backend)
    finally:
        stop()
        memory.close()
        for _ in targets:
            pass
