"""``veil sessions``: this project's sessions, newest first; ``veil sessions show ID``: one
session's transcript.

The list is a table under a header row: the session's id, when it was last updated, its
status as it ended (``done``, ``refused`` — done, but calls were refused for lack of approval,
exit 6 —, ``error``, ``stopped``, ``max_turns``, ``script_exhausted``, ``aborted``; ``running``
for one that is running or whose process died), its messages, its size on disk (its events,
with its working memory and attempts) and its title.

``show`` prints the session's header (title, model, times, status and summary), then each
message: the user's, the assistant's (its text and the tool calls it made) and each tool's
result (its first :data:`RESULT_LINES` lines unless ``--full``). A unique prefix of an id is
enough. Exit status 2 when there is no such session (one line on stderr).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from veil.agent.project import project_root, project_scope
from veil.agent.sessions import SessionInfo, Sessions
from veil.llm.messages import AssistantMessage, Message, ToolResultMessage, UserMessage
from veil.tape import open_store

RESULT_LINES = 12
"""Lines of a tool result ``veil sessions show`` prints without ``--full``."""


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
            f"{_size(sizes.get(s.id, 0)):>8}  {_one_line(s.title)[:60]}{parent}"
        )
    return 0


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / 1024 / 1024:.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n} B"


def show_session(session_id: str, cwd: Path, *, full: bool, out: TextIO, err: TextIO) -> int:
    """``veil sessions show ID``: 0, or 2 when ID names no session (or several)."""
    root = project_root(cwd)
    db = root / ".veil" / "context.db"
    if not db.exists():
        print("veil sessions show: this project has no sessions", file=err)
        return 2
    store = open_store(f"sqlite:///{db}")
    try:
        sessions = Sessions(store, scope=project_scope(root))
        found = sessions.find(session_id)
        if len(found) != 1:
            why = "no session" if not found else f"{len(found)} sessions match"
            print(
                f"veil sessions show: {why} {session_id} in this project (see `veil sessions`)",
                file=err,
            )
            return 2
        (info,) = found
        messages = sessions.messages(info.id)
    finally:
        store.close()
    for line in _header(info):
        print(line, file=out)
    for number, message in enumerate(messages, start=1):
        print(file=out)
        for line in _message_lines(number, message, full=full):
            print(line, file=out)
    return 0


def _header(info: SessionInfo) -> list[str]:
    lines = [f"session {info.id}" + (f" (from {info.parent_id})" if info.parent_id else "")]
    lines.append(f"title:   {info.title}")
    lines.append(f"model:   {info.model}")
    lines.append(
        f"started: {info.started_at:%Y-%m-%d %H:%M} UTC · updated {info.updated_at:%Y-%m-%d %H:%M}"
        f" UTC · {info.messages} message{'s' if info.messages != 1 else ''}"
    )
    summary = (info.summary or "").strip().splitlines()
    lines.append(f"status:  {info.status}" + (f" — {summary[0]}" if summary else ""))
    return lines


def _message_lines(number: int, message: Message, *, full: bool) -> list[str]:
    if isinstance(message, UserMessage):
        return [f"[{number}] user", *_indented(message.content)]
    if isinstance(message, AssistantMessage):
        lines = [f"[{number}] assistant", *_indented(message.content)]
        for call in message.tool_calls:
            arguments = json.dumps(call.arguments, ensure_ascii=False)
            if not full and len(arguments) > 200:
                arguments = arguments[:197] + "..."
            lines.append(f"    → {call.name} {arguments}  ({call.id})")
        return lines
    if isinstance(message, ToolResultMessage):
        flag = " [error]" if message.is_error else ""
        body = message.content.splitlines()
        shown = body if full else body[:RESULT_LINES]
        lines = [f"[{number}] {message.name} result ({message.tool_call_id}){flag}"]
        lines.extend(f"    │ {line}" for line in shown)
        if len(shown) < len(body):
            lines.append(f"    │ … {len(body) - len(shown)} more lines (--full shows them)")
        return lines
    return [f"[{number}] system", *_indented(message.content)]


def _indented(text: str) -> list[str]:
    return [f"    {line}" for line in text.strip().splitlines()]


def _one_line(title: str) -> str:
    """A title on one row of the listing (a task typed on several lines: ``first ⏎ second``)."""
    return " ⏎ ".join(part.strip() for part in title.strip().splitlines() if part.strip())
