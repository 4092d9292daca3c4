"""The session ``veil -c`` / ``--session`` continues, read before the first message sets it up,
so the TUI shows the conversation at once."""

from __future__ import annotations

from dataclasses import dataclass

from veil.agent.project import project_root, project_scope
from veil.agent.runtime import RunOptions
from veil.llm.messages import Message as ChatMessage


@dataclass(frozen=True)
class Preview:
    """A session to continue, read from the store before the first message sets it up:
    ``session_id`` and its ``messages``, or ``problem`` (why there is none)."""

    session_id: str | None = None
    messages: tuple[ChatMessage, ...] = ()
    problem: str | None = None


def preview_session(options: RunOptions) -> Preview:
    """The session ``-c``/``--session`` names, with its transcript (read-only; the store is
    closed again). A project without a session store, an unknown id or no earlier session is a
    ``problem`` — the same one the first message would meet."""
    from veil.agent.sessions import Sessions
    from veil.tape import open_store

    root = project_root(options.cwd)
    db = root / ".veil" / "context.db"
    if not db.is_file():
        if options.session:
            return Preview(problem=f"no session {options.session} in this project")
        return Preview(problem="there is no earlier session in this project to continue")
    store = open_store(f"sqlite:///{db}")
    try:
        sessions = Sessions(store, scope=project_scope(root))
        info = sessions.get(options.session) if options.session else sessions.latest()
        if info is None:
            if options.session:
                return Preview(problem=f"no session {options.session} in this project")
            return Preview(problem="there is no earlier session in this project to continue")
        return Preview(info.id, tuple(sessions.messages(info.id)))
    finally:
        store.close()
