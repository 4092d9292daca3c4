"""``veil sessions``: this project's sessions, newest first."""

from __future__ import annotations

from pathlib import Path

from veil.agent.project import project_root, project_scope
from veil.agent.sessions import Sessions
from veil.tape import open_store


def list_sessions(cwd: Path) -> int:
    root = project_root(cwd)
    db = root / ".veil" / "context.db"
    if not db.exists():
        print("no sessions yet in this project")
        return 0
    store = open_store(f"sqlite:///{db}")
    scope = project_scope(root)
    try:
        found = Sessions(store, scope=scope).list()
        sizes = store.sizes(scope, field="session_id")
    finally:
        store.close()
    if not found:
        print("no sessions yet in this project")
        return 0
    print(f"{'SESSION':<34}  {'UPDATED':<16}  {'STATUS':<16} {'MSGS':>5} {'SIZE':>8}  TITLE")
    for s in found:
        parent = f" (from {s.parent_id})" if s.parent_id else ""
        print(
            f"{s.id:<34}  {s.updated_at:%Y-%m-%d %H:%M}  {s.status:<16} {s.messages:>5} "
            f"{_size(sizes.get(s.id, 0)):>8}  {s.title[:60]}{parent}"
        )
    return 0


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / 1024 / 1024:.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n} B"
