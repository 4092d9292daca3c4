"""Sessions on the tape, as a tree: each has an id and a parent (a branch or a resume point).

``veil -c`` continues the most recent session of the project, ``veil --session ID`` a given
one, ``veil sessions`` lists them. The transcript is a sequence of ``session.message`` events,
so a session is resumable from any process and rebuildable like every projection.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, cast

from veil.agent.transcript import message_from_dict, message_to_dict
from veil.clock import Clock, SystemClock, format_time, parse_time
from veil.llm.messages import AssistantMessage, Message, ToolResultMessage
from veil.tape import Column, Event, JSONObject, Op, Patch, Put, Store, Table, new_id
from veil.tape.codec import Ident
from veil.tape.kinds import EventKind, catalogue
from veil.tape.recorder import Recorder

SESSIONS = "agent_sessions"
MESSAGES = "agent_messages"

SessionKind = Literal["session.started", "session.message", "session.ended"]


@dataclass(frozen=True)
class Started:
    session_id: Ident
    parent_id: str | None
    title: str
    model: str


@dataclass(frozen=True)
class MessageAdded:
    """The transcript's message number ``idx`` (``message_to_dict``'s form)."""

    session_id: Ident
    idx: int
    message: JSONObject


@dataclass(frozen=True)
class Ended:
    session_id: Ident
    status: str
    summary: str


STARTED = EventKind("session.started", Started)
MESSAGE = EventKind("session.message", MessageAdded)
ENDED = EventKind("session.ended", Ended)
KINDS = catalogue(SessionKind, STARTED, MESSAGE, ENDED)


class SessionProjection:
    name = "sessions"
    version = 1
    tables = (
        Table(
            SESSIONS,
            (
                Column("session_id", "text", nullable=False),
                Column("parent_id", "text"),
                Column("title", "text"),
                Column("model", "text"),
                Column("started_at", "time"),
                Column("updated_at", "time"),
                Column("status", "text"),
                Column("summary", "text"),
                Column("messages", "int"),
            ),
            key=("session_id",),
            indexes=(("updated_at",),),
        ),
        Table(
            MESSAGES,
            (
                Column("session_id", "text", nullable=False),
                Column("idx", "int", nullable=False),
                Column("message", "json"),
            ),
            key=("session_id", "idx"),
        ),
    )
    text_indexes = ()
    vector_indexes = ()

    def apply(self, event: Event) -> list[Op]:
        p = event.payload
        scope = event.scope
        if event.kind == STARTED.name:
            return [
                Put(
                    SESSIONS,
                    {
                        "scope": scope,
                        "session_id": p["session_id"],
                        "parent_id": p.get("parent_id"),
                        "title": p.get("title"),
                        "model": p.get("model"),
                        "started_at": format_time(event.at),
                        "updated_at": format_time(event.at),
                        "status": "running",
                        "summary": None,
                        "messages": p.get("messages", 0),
                    },
                )
            ]
        key = {"scope": scope, "session_id": p.get("session_id")}
        if event.kind == MESSAGE.name:
            return [
                Put(
                    MESSAGES,
                    {
                        "scope": scope,
                        "session_id": p["session_id"],
                        "idx": p["idx"],
                        "message": p["message"],
                    },
                ),
                Patch(
                    SESSIONS,
                    key,
                    {
                        "updated_at": format_time(event.at),
                        "messages": cast(int, p["idx"]) + 1,
                        "status": "running",
                    },
                ),
            ]
        if event.kind == ENDED.name:
            return [
                Patch(
                    SESSIONS,
                    key,
                    {
                        "status": p["status"],
                        "summary": p.get("summary"),
                        "updated_at": format_time(event.at),
                    },
                )
            ]
        return []


@dataclass(frozen=True)
class SessionInfo:
    id: str
    parent_id: str | None
    title: str
    model: str
    started_at: datetime
    updated_at: datetime
    status: str
    summary: str | None
    messages: int


PURGED_RESULT = "[veil: this call's result was purged from Veil's store (veil admin purge)]"
"""What a tool result removed by a purge comes back as."""


def _with_purged_results(slots: list[Message | None]) -> list[Message]:
    """``slots`` by index, ``None`` where a purge removed a message: each gap within a step (an
    assistant message with tool calls and the results after it) answers the first of its calls
    left without a result; a gap elsewhere is dropped."""
    out: list[Message] = []
    step: AssistantMessage | None = None
    for i, slot in enumerate(slots):
        if isinstance(slot, AssistantMessage):
            step = slot
        elif slot is not None and not isinstance(slot, ToolResultMessage):
            step = None
        if slot is not None:
            out.append(slot)
            continue
        if step is None:
            continue
        later = slots[i + 1 :]
        end = next(
            (
                j
                for j, s in enumerate(later)
                if s is not None and not isinstance(s, ToolResultMessage)
            ),
            len(later),
        )
        answered = {m.tool_call_id for m in out if isinstance(m, ToolResultMessage)}
        answered |= {s.tool_call_id for s in later[:end] if isinstance(s, ToolResultMessage)}
        free = [c for c in step.tool_calls if c.id not in answered]
        if free:
            call = free[0]
            out.append(ToolResultMessage(call.id, call.name, PURGED_RESULT, is_error=True))
    return out


class Sessions:
    def __init__(
        self, store: Store, *, scope: str, clock: Clock | None = None, register: bool = True
    ) -> None:
        """``register=False``: the caller has registered (or attached) the projection on this
        store handle; registering is idempotent anyway (``Store.register``)."""
        self.store = store
        self.scope = scope
        self.clock: Clock = clock or SystemClock()
        self._recorder = Recorder(store, scope, "veil", self.clock, id_prefix="se")
        if register:
            store.register(SessionProjection())

    def start(
        self,
        *,
        title: str,
        model: str,
        parent_id: str | None = None,
        copy_messages: list[Message] | None = None,
        session_id: str | None = None,
    ) -> str:
        """A new session (``session_id`` when the caller chose it, else a fresh id); with
        ``parent_id`` and ``copy_messages`` it branches from there."""
        session_id = session_id or new_id("s")
        events = [self._recorder.event(STARTED, Started(session_id, parent_id, title[:200], model))]
        for idx, message in enumerate(copy_messages or []):
            events.append(self._message_event(session_id, idx, message))
        self.store.append(events)
        return session_id

    def append(self, session_id: str, start_idx: int, messages: list[Message]) -> None:
        if messages:
            self.store.append(
                [self._message_event(session_id, start_idx + i, m) for i, m in enumerate(messages)]
            )

    def end(self, session_id: str, *, status: str, summary: str) -> None:
        """How the session ended: ``status`` is the run's end reason (``done``, ``error``,
        ``max_turns``…) or ``refused`` (done, but calls were refused for lack of approval).
        Recorded again, it amends the ending: the last one is the session's status."""
        self._recorder.record(ENDED, Ended(session_id, status, summary[:4000]))

    def messages(self, session_id: str) -> list[Message]:
        """The session's transcript in order. A message a purge removed (``veil admin purge``)
        leaves its index missing: a purged tool result comes back as :data:`PURGED_RESULT` for
        its call (so the model is told the truth, not that the run was interrupted); another
        purged message leaves nothing in its place."""
        rows = self.store.fetch(
            MESSAGES, scope=self.scope, where={"session_id": session_id}, order_by=["idx"]
        )
        by_idx: dict[int, Message] = {
            int(cast(int, r["idx"])): message_from_dict(cast(dict[str, object], r["message"]))  # type: ignore[arg-type]
            for r in rows
        }
        return _with_purged_results([by_idx.get(i) for i in range(max(by_idx, default=-1) + 1)])

    def list(self, limit: int = 50) -> list[SessionInfo]:
        rows = self.store.fetch(SESSIONS, scope=self.scope, order_by=["-updated_at"], limit=limit)
        return [
            SessionInfo(
                str(r["session_id"]),
                cast(str | None, r["parent_id"]),
                str(r["title"] or ""),
                str(r["model"] or ""),
                parse_time(str(r["started_at"])),
                parse_time(str(r["updated_at"])),
                str(r["status"]),
                cast(str | None, r["summary"]),
                int(cast(int, r["messages"] or 0)),
            )
            for r in rows
        ]

    def get(self, session_id: str) -> SessionInfo | None:
        return next((s for s in self.list(limit=10_000) if s.id == session_id), None)

    def find(self, prefix: str) -> list[SessionInfo]:
        """The session ``prefix`` names: the one with that id, else every session whose id
        starts with it (none, one, or several for an ambiguous prefix)."""
        found = self.list(limit=10_000)
        exact = [s for s in found if s.id == prefix]
        return exact or ([s for s in found if s.id.startswith(prefix)] if prefix else [])

    def latest(self) -> SessionInfo | None:
        found = self.list(limit=1)
        return found[0] if found else None

    def _message_event(self, session_id: str, idx: int, message: Message) -> Event:
        payload = MessageAdded(session_id, idx, message_to_dict(message))
        return self._recorder.event(MESSAGE, payload)
