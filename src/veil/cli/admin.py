"""``veil admin``: rebuild and check a store.

The projections a store maintains are found in its ``tape_projections`` table and looked up
in :data:`KNOWN_PROJECTIONS`; a store that records a projection this version of Veil does not
know is reported, never silently ignored.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from veil.agent.sessions import SessionProjection
from veil.context.projection import ContextProjection
from veil.convergence.record import ConvergenceProjection
from veil.memory.projection import MemoryProjection
from veil.server.keys import KeysProjection
from veil.tape import Projection, Store, open_store
from veil.testing import NotesProjection

DEFAULT_DB = Path(".veil") / "memory.db"

KNOWN_PROJECTIONS: dict[str, Callable[[], Projection]] = {
    "notes": NotesProjection,
    "memory": MemoryProjection,
    "context": ContextProjection,
    "sessions": SessionProjection,
    "convergence": ConvergenceProjection,
    "server_keys": KeysProjection,
}


def _open(db: str | None, embedder_spec: str) -> Store:
    from veil.embed import embedder_from_spec

    target = db or str(DEFAULT_DB)
    if "://" not in target and not Path(target).exists():
        raise SystemExit(f"veil: no store at {target} (pass --db PATH_OR_URL)")
    store = open_store(target, embedder=embedder_from_spec(embedder_spec))
    names = store.recorded_projections()
    unknown = sorted(set(names) - set(KNOWN_PROJECTIONS))
    if unknown:
        store.close()
        raise SystemExit(f"veil: store has projections this version does not know: {unknown}")
    store.register(*(KNOWN_PROJECTIONS[n]() for n in names))
    return store


def run_rebuild(db: str | None, embedder_spec: str) -> int:
    store = _open(db, embedder_spec)
    try:
        report = store.rebuild()
    finally:
        store.close()
    print(f"rebuilt {len(report.projections)} projection(s) from {report.events} events")
    for name, rows in sorted(report.rows.items()):
        print(f"  {name}: {rows} rows")
    return 0


def run_check(db: str | None, embedder_spec: str) -> int:
    store = _open(db, embedder_spec)
    try:
        report = store.check()
    finally:
        store.close()
    print(f"events: {report.events}  head: {report.head}")
    for key, value in report.details.items():
        print(f"{key}: {value}")
    if report.ok:
        print("ok")
        return 0
    for problem in report.problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 1
