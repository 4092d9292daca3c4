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
    try:
        found = Sessions(store, scope=project_scope(root)).list()
    finally:
        store.close()
    for s in found:
        parent = f" (from {s.parent_id})" if s.parent_id else ""
        print(
            f"{s.id}  {s.updated_at:%Y-%m-%d %H:%M}  {s.status:<16} {s.messages:>4} msgs  "
            f"{s.title[:60]}{parent}"
        )
    if not found:
        print("no sessions yet in this project")
    return 0
