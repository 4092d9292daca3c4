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
from veil.proxy.ledger import Conversation
from veil.tape import Store, open_store

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
        proxied = read_conversations(store, scope)
        sizes = store.sizes(scope, field="session_id")
    finally:
        store.close()
    if not found and not proxied:
        print("no sessions yet in this project")
        return 0
    if found:
        print(f"{'SESSION':<34}  {'UPDATED':<16}  {'STATUS':<16} {'MSGS':>5} {'SIZE':>8}  TITLE")
    for s in found:
        parent = f" (from {s.parent_id})" if s.parent_id else ""
        print(
            f"{s.id:<34}  {s.updated_at:%Y-%m-%d %H:%M}  {s.status:<16} {s.messages:>5} "
            f"{_size(sizes.get(s.id, 0)):>8}  {_one_line(s.title)[:60]}{parent}"
        )
    if proxied:
        if found:
            print()
        print(
            f"{'THROUGH VEIL’S PROXY':<34}  {'UPDATED':<16}  {'HOST':<6} {'MODEL':<22} "
            f"{'REQS':>5} {'SIZE':>8}  TOKENS (AGENT → SENT)"
        )
        for c in reversed(proxied):  # newest first, as above
            last = f"{c.last:%Y-%m-%d %H:%M}" if c.last else ""
            shadow = " (shadow: would send)" if c.shadow else ""
            print(
                f"{c.id:<34}  {last:<16}  {(c.host or 'proxy'):<6} {c.model[:22]:<22} "
                f"{c.requests:>5} {_size(sizes.get(c.id, 0)):>8}  "
                f"{c.tokens_agent:,} → {c.tokens_sent:,}{shadow}"
            )
    return 0


def read_conversations(store: Store, scope: str) -> list[Conversation]:
    """The proxy's conversations in ``scope`` (priced by the built-in table: the listing
    shows no cost)."""
    from veil.proxy.ledger import read

    return read(store, scope)


def matching(store: Store, scope: str, prefix: str) -> list[tuple[str, str]]:
    """``(kind, id)`` of what ``prefix`` names — ``session`` (Veil's own agent) or ``proxy``
    (a conversation through Veil's proxy): an exact id, else every id that starts with it."""
    ids = [("session", s.id) for s in Sessions(store, scope=scope).list(limit=10_000)]
    ids += [("proxy", c.id) for c in read_conversations(store, scope)]
    exact = [(k, i) for k, i in ids if i == prefix]
    return exact or ([(k, i) for k, i in ids if i.startswith(prefix)] if prefix else [])


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
        scope = project_scope(root)
        found = matching(store, scope, session_id)
        if len(found) != 1:
            why = "no session" if not found else f"{len(found)} sessions match"
            print(
                f"veil sessions show: {why} {session_id} in this project (see `veil sessions`)",
                file=err,
            )
            return 2
        ((kind, found_id),) = found
        if kind == "proxy":
            return _show_conversation(store, scope, found_id, out)
        sessions = Sessions(store, scope=scope)
        info = sessions.get(found_id)
        assert info is not None
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


def _show_conversation(store: Store, scope: str, conversation: str, out: TextIO) -> int:
    """A conversation through Veil's proxy: what it was and its figures (the messages are the
    agent's own: its transcript has them)."""
    from veil.cli.stats import host_title, summary
    from veil.llm.catalog import PRICES_DATE

    (c,) = [c for c in read_conversations(store, scope) if c.id == conversation]
    title = host_title(c.host)
    own = f" (its session {c.agent_session})" if c.agent_session else ""
    lines = [
        f"conversation {c.id} through Veil's proxy" + (" (shadow)" if c.shadow else ""),
        f"host:    {title}{own}",
        f"model:   {c.model or '?'}",
    ]
    if c.first and c.last:
        lines.append(f"started: {c.first:%Y-%m-%d %H:%M} UTC · updated {c.last:%Y-%m-%d %H:%M} UTC")
    for line in lines:
        print(line, file=out)
    for line in summary([c], command=c.host or "proxy", prices_date=PRICES_DATE)[1:]:
        print(line, file=out)
    print(f"(the messages are {title}'s own: its transcript has them)", file=out)
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
