"""``veil admin``: rebuild and check a store.

The projections a store maintains are found in its ``tape_projections`` table and looked up
in :data:`KNOWN_PROJECTIONS`; a store that records a projection this version of Veil does not
know is reported, never silently ignored.

``check`` never writes. It *attaches* the recorded projections (:meth:`Store.attach`) instead
of registering them, so it cannot create, migrate or re-embed anything; its comparison with a
rebuild runs in a transaction that is rolled back. A projection recorded with another embedder
(or another schema version) cannot be compared honestly with the one asked for, so ``check``
refuses it in one line that names the embedder the store was built with and says that
``veil admin rebuild --embedder X`` is how to change it. ``rebuild`` is the command that writes.

Which store: ``--db``, else the project's ``.veil/context.db`` (the store of ``veil`` itself:
sessions, working memory and convergence records), else the project's ``.veil/memory.db`` (its
long-term memory; also the default of ``veil serve``, ``veil mcp`` and ``veil keys`` run at the
project's root). The project is the git repository around the current directory, else the
directory itself. The first line of output names the store. Exit status: 0 healthy, 1 problems
found, 2 could not check (no such store, a bad ``--embedder``, a missing extra, a mismatch) —
one line on stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from veil.agent.project import project_root
from veil.agent.sessions import SessionProjection
from veil.clients.claude_code_state import ClaudeCodeProjection
from veil.context.projection import ContextProjection
from veil.convergence.projection import ConvergenceProjection
from veil.embed import EmbedderUnavailable, embedder_from_spec, spec_of
from veil.memory.projection import MemoryProjection
from veil.server.keys import KeysProjection
from veil.tape import (
    BackendUnavailable,
    Projection,
    ProjectionMismatch,
    Store,
    open_store,
    sqlite_path,
)
from veil.tape.contract import NotesProjection

CONTEXT_DB = Path(".veil") / "context.db"
MEMORY_DB = Path(".veil") / "memory.db"

KNOWN_PROJECTIONS: dict[str, Callable[[], Projection]] = {
    "notes": NotesProjection,
    "memory": MemoryProjection,
    "context": ContextProjection,
    "sessions": SessionProjection,
    "convergence": ConvergenceProjection,
    "server_keys": KeysProjection,
    "claude_code": ClaudeCodeProjection,
}


class AdminError(Exception):
    """A store that cannot be checked or rebuilt as asked: one line, exit status 2."""


def default_store(cwd: Path) -> Path:
    """The project's ``.veil/context.db`` if it exists, else its ``.veil/memory.db`` if that
    does; otherwise :class:`AdminError` naming both."""
    root = project_root(cwd)
    candidates = (root / CONTEXT_DB, root / MEMORY_DB)
    for candidate in candidates:
        if candidate.exists():
            return candidate
    raise AdminError(f"no store at {candidates[0]} or {candidates[1]} (pass --db PATH_OR_URL)")


def _open(db: str | None, embedder_spec: str, *, write: bool) -> tuple[str, Store]:
    """The store and its recorded projections: registered when ``write``, else attached
    (nothing written; a projection recorded differently is an :class:`AdminError`)."""
    target = db or str(default_store(Path.cwd()))
    path = sqlite_path(target)
    if path is not None and not path.exists():
        raise AdminError(f"no store at {target} (pass --db PATH_OR_URL)")
    try:
        store = open_store(target, embedder=embedder_from_spec(embedder_spec))
    except (ValueError, BackendUnavailable, EmbedderUnavailable) as exc:
        raise AdminError(str(exc)) from None
    try:
        names = store.recorded_projections()
        unknown = sorted(set(names) - set(KNOWN_PROJECTIONS))
        if unknown:
            raise AdminError(f"store has projections this version does not know: {unknown}")
        projections = [KNOWN_PROJECTIONS[n]() for n in names]
        if write:
            store.register(*projections)
        else:
            store.attach(*projections)
    except ProjectionMismatch as exc:
        store.close()
        raise AdminError(_mismatch(exc, embedder_spec)) from None
    except BaseException:
        store.close()
        raise
    return target, store


def open_registered(target: str, embedder_spec: str = "static") -> tuple[str, Store]:
    """A store opened to be written with every projection it records registered (a purge
    rebuilds them all). Raises :class:`AdminError` in one line."""
    return _open(target, embedder_spec, write=True)


def _mismatch(exc: ProjectionMismatch, embedder_spec: str) -> str:
    if exc.recorded_embedder == exc.embedder:
        return (
            f"projection {exc.projection!r} was built by another version of its schema; "
            "`veil admin rebuild` brings it up to date (check changed nothing)"
        )
    built = _shown(exc.recorded_embedder)
    spec = spec_of(exc.recorded_embedder.rpartition(":")[0])
    hint = f"check with --embedder {spec}, or " if spec else ""
    return (
        f"the store's vector indexes were built with embedder {built}, but --embedder "
        f"{embedder_spec} is {_shown(exc.embedder)}; {hint}re-embed with "
        f"`veil admin rebuild --embedder {embedder_spec}` (check changed nothing)"
    )


def _shown(embedder: str) -> str:
    name, _, dim = embedder.rpartition(":")
    return f"{name} ({dim}-d)" if name else "none"


def run_rebuild(db: str | None, embedder_spec: str) -> int:
    try:
        target, store = _open(db, embedder_spec, write=True)
    except AdminError as exc:
        print(f"veil admin rebuild: {exc}", file=sys.stderr)
        return 2
    try:
        report = store.rebuild()
    finally:
        store.close()
    print(f"store: {target}")
    print(f"rebuilt {len(report.projections)} projection(s) from {report.events} events")
    for name, rows in sorted(report.rows.items()):
        print(f"  {name}: {rows} rows")
    return 0


def run_check(db: str | None, embedder_spec: str) -> int:
    """Check the store read-only (see the module docstring): 0 ok, 1 problems, 2 cannot."""
    try:
        target, store = _open(db, embedder_spec, write=False)
    except AdminError as exc:
        print(f"veil admin check: {exc}", file=sys.stderr)
        return 2
    try:
        report = store.check()
    finally:
        store.close()
    print(f"store: {target}")
    print(f"events: {report.events}  head: {report.head}")
    for key, value in report.details.items():
        print(f"{key}: {value}")
    if report.ok:
        print("ok")
        return 0
    for problem in report.problems:
        print(f"problem: {problem}", file=sys.stderr)
    return 1
