"""Deleting what Veil stored: ``veil sessions rm``, ``veil admin purge``, ``veil admin vacuum``,
and the retention run at the end of every ``veil`` session.

Every deletion is physical (:meth:`Store.purge`: the events are removed, every projection is
rebuilt from what is left, the file is vacuumed and its WAL truncated) and leaves a
content-free receipt (``veil admin check`` lists none of the removed content; the receipt holds
a salted hash of what was asked, the number of events and rows removed, and when).

- ``veil sessions rm ID``: one session — its transcript, working memory and attempts.
- ``veil admin purge --session ID | --before DATE | --match REGEX``: what the options name,
  in the project's ``.veil/context.db`` (or ``--db``). ``--match`` is for a secret found
  after it was stored: every event with a string that matches goes, whatever its kind. Asks
  for confirmation on a terminal; without one, ``--yes`` is required.
- ``veil admin vacuum``: the retention rules now (:mod:`veil.agent.retention`), then the
  space of everything deleted is given back to the file system.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import TextIO

from veil.agent.project import project_root, project_scope
from veil.agent.retention import Retention, apply_retention
from veil.agent.sessions import Sessions
from veil.cli.admin import AdminError, open_registered
from veil.clock import SystemClock, ensure_utc
from veil.config_file import ConfigError, section
from veil.tape import ErasureReceipt, PurgeSelection


def retention_policy(root: Path) -> Retention:
    """The project's ``[retention]`` settings (raises :class:`ConfigError` naming the file)."""
    try:
        return Retention.from_mapping(section(root / ".veil", "retention"))
    except ValueError as exc:
        raise ConfigError(f"{root / '.veil' / 'config.toml'}: {exc}") from None


def receipt_line(receipt: ErasureReceipt) -> str:
    rows = sum(receipt.rows.values())
    return (
        f"removed {receipt.events} event(s) and {rows} derived row(s); "
        f"receipt {receipt.id} at {receipt.at}"
    )


def run_sessions_rm(session_id: str, cwd: Path, *, out: TextIO, err: TextIO) -> int:
    """``veil sessions rm ID``."""
    root = project_root(cwd)
    db = root / ".veil" / "context.db"
    if not db.exists():
        print("veil sessions rm: this project has no sessions", file=err)
        return 2
    try:
        _, store = open_registered(str(db))
    except AdminError as exc:
        print(f"veil sessions rm: {exc}", file=err)
        return 2
    try:
        from veil.cli.listing import matching

        scope = project_scope(root)
        found = matching(store, scope, session_id)
        if len(found) != 1:
            why = "no session" if not found else f"{len(found)} sessions match"
            print(
                f"veil sessions rm: {why} {session_id} in this project (see `veil sessions`)",
                file=err,
            )
            return 2
        ((_, session_id),) = found
        receipt = store.purge(PurgeSelection(scope=scope, sessions=(session_id,)))
    finally:
        store.close()
    print(f"session {session_id}: {receipt_line(receipt)}", file=out)
    return 0


def run_purge(
    *,
    db: str | None,
    session: str | None,
    before: str | None,
    match: str | None,
    yes: bool,
    cwd: Path,
    stdin: TextIO,
    out: TextIO,
    err: TextIO,
) -> int:
    """``veil admin purge``: 0 done, 1 declined, 2 a usage or store problem."""
    try:
        when = ensure_utc(datetime.fromisoformat(before)) if before else None
    except ValueError:
        print(f"veil admin purge: --before {before!r} is not a date (YYYY-MM-DD)", file=err)
        return 2
    try:
        selection = PurgeSelection(
            sessions=(session,) if session else (), before=when, matching=match
        )
    except ValueError as exc:
        print(f"veil admin purge: {exc} (give --session, --before or --match)", file=err)
        return 2
    target = db or str(project_root(cwd) / ".veil" / "context.db")
    try:
        target, store = open_registered(target)
    except AdminError as exc:
        print(f"veil admin purge: {exc}", file=err)
        return 2
    try:
        if not yes:
            found = matching_words(store.purge_counts(selection), selection)
            if not _isatty(stdin):
                print(
                    f"veil admin purge: {found}; deleting is final: pass --yes to confirm (stdin "
                    "is not a terminal to ask on)",
                    file=err,
                )
                return 2
            print(f"store: {target}\n{found}; delete them? [y/N] ", end="", file=err)
            err.flush()
            if stdin.readline().strip().lower() not in ("y", "yes"):
                print("nothing deleted", file=err)
                return 1
        receipt = store.purge(selection)
    finally:
        store.close()
    print(f"store: {target}\n{receipt_line(receipt)}", file=out)
    return 0


def run_vacuum(db: str | None, cwd: Path, *, out: TextIO, err: TextIO) -> int:
    """``veil admin vacuum``: retention now, then the file compacted."""
    root = project_root(cwd)
    target = db or str(root / ".veil" / "context.db")
    try:
        policy = retention_policy(root)
        target, store = open_registered(target)
    except (AdminError, ConfigError) as exc:
        print(f"veil admin vacuum: {exc}", file=err)
        return 2
    try:
        receipt = apply_retention(
            store, Sessions(store, scope=project_scope(root)), policy=policy, now=_now()
        )
        before = _size(target)
        store.vacuum()
        after = _size(target)
    finally:
        store.close()
    print(f"store: {target}", file=out)
    print(receipt_line(receipt) if receipt else "retention: nothing due", file=out)
    print(f"file: {before / 1e6:.1f} MB → {after / 1e6:.1f} MB", file=out)
    return 0


def retain(root: Path, *, keep: str | None = None) -> ErasureReceipt | None:
    """The retention run at the end of a ``veil`` session: the session just used (``keep``,
    else the most recent) is never purged. A bad settings file or a store that cannot be
    opened is a skipped run with one line on stderr, never a failed session."""
    db = root / ".veil" / "context.db"
    if not db.exists():
        return None
    try:
        policy = retention_policy(root)
        _, store = open_registered(str(db))
    except (ConfigError, AdminError) as exc:
        print(f"veil: retention skipped: {exc}", file=sys.stderr)
        return None
    try:
        sessions = Sessions(store, scope=project_scope(root))
        latest = sessions.latest()
        keep = keep or (latest.id if latest else None)
        return apply_retention(store, sessions, policy=policy, now=_now(), keep=keep)
    finally:
        store.close()


def matching_words(counts: dict[str, int], selection: PurgeSelection) -> str:
    """``7 event(s) selected by session s_1: 4 session.message, 3 context.item`` — what a purge
    would remove, before it is asked for (the most frequent kinds first, five named at most)."""
    total = sum(counts.values())
    kinds = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    named = ", ".join(f"{n} {kind}" for kind, n in kinds[:5])
    more = f", {len(kinds) - 5} more kind(s)" if len(kinds) > 5 else ""
    what = f": {named}{more}" if kinds else ""
    return f"{total} event(s) selected by {selection_words(selection)}{what}"


def selection_words(selection: PurgeSelection) -> str:
    parts: list[str] = []
    if selection.sessions:
        parts.append(f"session {', '.join(selection.sessions)}")
    if selection.before:
        parts.append(f"before {selection.before:%Y-%m-%d %H:%M}")
    if selection.matching:
        parts.append("--match")
    return " and ".join(parts)


def _now() -> datetime:
    return SystemClock().now()


def _size(target: str) -> int:
    path = Path(target.removeprefix("sqlite:///").split("?", 1)[0])
    files = [path, path.with_name(path.name + "-wal")]
    return sum(p.stat().st_size for p in files if p.exists())


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
