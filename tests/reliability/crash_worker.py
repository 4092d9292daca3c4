"""Fork server of the crash harness (``python -m tests.reliability.crash_worker``).

Imports Veil once, then for each JSON command on stdin forks a child that opens the database
and writes until it is killed (or finishes). Everything a child says is one line on stdout,
written with a single ``os.write`` (atomic on a pipe):

* ``pid <pid>`` — the child is running; the parent may SIGKILL it from now on;
* ``ack <json>`` — printed only after the call returned: an acknowledged write;
* ``done`` — the child ran out of work;
* ``dead <pid> <status>`` (from the server) — the child is gone.

Commands: ``{"op": "mix" | "maintain" | "forget" | "hold" | "reproject", "db": path,
"seed": n, "ops": n, "synchronous": "full" | "normal", "deferred": bool, "busy_s": x}``.
``db`` is a SQLite path or a PostgreSQL DSN (``postgresql://…``; ``synchronous`` is then ignored).

No database connection crosses a fork: the server itself never opens a store (it only imports
the modules, psycopg and psycopg-pool included, so children start fast); every child opens its
own store, and with it its own SQLite handle or PostgreSQL connection pool.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import veil.tape.postgres  # noqa: F401  # pyright: ignore[reportUnusedImport]
from tests.reliability.support import CanaryModel, TokenEchoModel
from veil.agent.sessions import Sessions
from veil.context import ContextConfig
from veil.context.engine import ContextEngine
from veil.llm.messages import AssistantMessage, Message, UserMessage
from veil.memory import Memory, MemoryConfig
from veil.tape import Column, Event, Op, Put, Table, open_store
from veil.testing import HashEmbedder

MEMORY_SCOPE = "user:crash"
PROJECT_SCOPE = "project:crash"


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())


def is_postgres(db: str) -> bool:
    return db.startswith(("postgresql://", "postgres://"))


def mix(db: str, seed: int, ops: int, synchronous: str, deferred: bool = False) -> None:
    """Remember, context capture (+ step) and session appends, in a seeded random order.
    ``synchronous`` is the SQLite durability mode (``full``: the default; ``normal``: what
    the harness uses for its working-memory database); unused on PostgreSQL.

    ``deferred``: the engine persists as the harness runs it — ``step`` only decides, the
    events are written on the engine's writer thread while the next operation (standing in
    for the model request) runs on the same store, and a capture is acknowledged once that
    write has been waited for."""
    rng = random.Random(seed)
    target = db if is_postgres(db) else f"sqlite:///{db}?synchronous={synchronous}"
    store = open_store(target, embedder=HashEmbedder())
    memory = Memory(store, complete=TokenEchoModel(), embedder=HashEmbedder())
    engine = ContextEngine(
        store,
        session_id=f"ctx{seed}",
        scope=PROJECT_SCOPE,
        config=ContextConfig(window_tokens=4000),
        embedder=HashEmbedder(),
        deferred=deferred,
    )
    sessions = Sessions(store, scope=PROJECT_SCOPE)
    in_flight: str | None = None
    session_id = sessions.start(title=f"crash {seed}", model="scripted")
    idx = 0
    for i in range(ops):
        token = f"tok{seed}x{i}"
        choice = rng.random()
        if in_flight is not None and (choice >= 0.4 or rng.random() < 0.5):
            engine.wait()  # the write that ran during the previous operation is on the tape
            say("ack " + json.dumps({"kind": "capture", "item": in_flight}))
            in_flight = None
        if choice < 0.4:
            report = memory.remember(
                f"I prefer {token} now; see tok{seed}y{i}", user_id=MEMORY_SCOPE
            )
            say(
                "ack "
                + json.dumps(
                    {
                        "kind": "remember",
                        "evidence": report.evidence_id,
                        "facts": list(report.facts),
                        "token": token,
                    }
                )
            )
        elif choice < 0.75:
            body = f"output of {token}\n" + "line of text\n" * rng.randint(1, 200)
            item = engine.capture_tool_result(
                tool_call_id=f"call{seed}x{i}",
                tool_name="bash",
                arguments={"command": f"echo {token}"},
                output=body,
            )
            engine.step()
            if deferred:  # written while the next operation runs; acknowledged after wait()
                engine.persist_in_background()
                in_flight = item.id
            else:  # step flushes: from here the capture is acknowledged
                say("ack " + json.dumps({"kind": "capture", "item": item.id}))
        else:
            messages: list[Message] = [
                UserMessage(f"user says {token}"),
                AssistantMessage(f"reply {token}"),
            ]
            sessions.append(session_id, idx, messages)
            idx += len(messages)
            say("ack " + json.dumps({"kind": "session", "session": session_id, "idx": idx - 1}))
    if in_flight is not None:
        engine.wait()
        say("ack " + json.dumps({"kind": "capture", "item": in_flight}))
    say("done")


def maintain(db: str, seed: int) -> None:
    store = open_store(db, embedder=HashEmbedder())
    memory = Memory(
        store,
        complete=CanaryModel(),
        embedder=HashEmbedder(),
        config=MemoryConfig(consolidate_min_episodes=2),
    )
    memory.maintain(MEMORY_SCOPE)
    say("ack " + json.dumps({"kind": "maintain"}))
    say("done")


def forget(db: str, seed: int) -> None:
    store = open_store(db, embedder=HashEmbedder())
    memory = Memory(store, complete=TokenEchoModel(), embedder=HashEmbedder())
    receipt = memory.forget(MEMORY_SCOPE)
    say("ack " + json.dumps({"kind": "forget", "receipt": receipt.id}))
    say("done")


def hold(db: str, busy_s: float) -> None:
    """Take the store's single-writer lock (PostgreSQL: the transaction-scoped advisory lock;
    SQLite: ``BEGIN IMMEDIATE``), say so, and keep it until killed: idle in the transaction,
    or (``busy_s`` > 0, PostgreSQL) inside a statement that runs for ``busy_s`` seconds."""
    store: Any = open_store(db if is_postgres(db) else Path(db), embedder=HashEmbedder())
    with store._write() as cur:
        say("ack " + json.dumps({"kind": "locked"}))
        if busy_s > 0:
            cur.execute("SELECT pg_sleep(%s)", (busy_s,))
        time.sleep(120)
    say("done")


@dataclass
class Reprojected:
    """A projection whose new version makes the store replay the tape into it (``register``
    rebuilds a projection whose recorded version differs); with ``die``, the process SIGKILLs
    itself in the middle of that replay."""

    version: int = 1
    die: bool = False
    name: str = "reprojected"
    text_indexes: tuple[()] = ()
    vector_indexes: tuple[()] = ()

    @property
    def tables(self) -> list[Table]:
        return [Table("reprojected_rows", (Column("event_id", "text"),), key=("event_id",))]

    def apply(self, event: Event) -> list[Op]:
        if self.die:
            os.kill(os.getpid(), signal.SIGKILL)
        return [Put("reprojected_rows", {"scope": event.scope, "event_id": event.id})]


def reproject(db: str) -> None:
    store = open_store(db if is_postgres(db) else Path(db), embedder=HashEmbedder())
    store.register(Reprojected(version=2, die=True))
    say("done")


def prepare_old_state(db: str, seed: int, writes: int) -> None:
    """Before a maintain/forget kill: a scope with facts and episodes older than 30 days."""
    store = open_store(db, embedder=HashEmbedder())
    memory = Memory(store, complete=TokenEchoModel(), embedder=HashEmbedder())
    old = datetime(2024, 1, 1, tzinfo=UTC)
    for i in range(writes):
        memory.remember(
            f"I prefer tok{seed}p{i}; also tok{seed}q{i}",
            user_id=MEMORY_SCOPE,
            at=old + timedelta(hours=i),
        )
    memory.remember("Unrelated person", user_id="user:bystander")
    store.close()


def child(command: dict[str, Any]) -> None:
    say(f"pid {os.getpid()}")
    op, db, seed = str(command["op"]), str(command["db"]), int(command["seed"])
    if op == "mix":
        mix(
            db,
            seed,
            int(command.get("ops", 1000)),
            str(command.get("synchronous", "full")),
            bool(command.get("deferred", False)),
        )
    elif op == "maintain":
        maintain(db, seed)
    elif op == "forget":
        forget(db, seed)
    elif op == "hold":
        hold(db, float(command.get("busy_s", 0.0)))
    elif op == "reproject":
        reproject(db)
    else:
        raise ValueError(op)


def main() -> None:
    for raw in sys.stdin:
        if not raw.strip():
            continue
        command = json.loads(raw)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                child(command)
            except BaseException as exc:
                say("error " + json.dumps(f"{type(exc).__name__}: {exc}"))
                code = 1
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        say(f"dead {pid} {status}")


if __name__ == "__main__":
    main()
