"""What the Claude Code hooks keep on the tape between invocations.

Each hook runs as a new process, so whatever one hook learns and a later one needs is an event
on the project's tape (``.veil/context.db``, the store the harness uses too), projected into
small tables by :class:`ClaudeCodeProjection` (pure; ``veil admin rebuild`` recreates them):

- ``claude_code.goal`` → ``cc_sessions``: the goal a Claude Code session works on (its first
  prompt, or an earlier task with a record that a later prompt repeats);
- ``claude_code.step`` → ``cc_steps``: a call that is not an attempt (a ``Read``), so the stuck
  patterns (the same action and observation again and again) see a session's whole run;
- ``claude_code.compaction`` → ``cc_compactions``: the transcript entries Claude Code was about
  to summarise (PreCompact), kept whole in the event, so compaction loses nothing silently.

The attempts themselves are ``convergence.*`` events of :class:`~veil.convergence.AttemptLog`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar, cast

from veil.clock import Clock, format_time
from veil.convergence import monitor, stuck
from veil.convergence.projection import ATTEMPTS, attempt_from_row
from veil.tape import (
    Column,
    Event,
    JSONValue,
    Op,
    Put,
    Store,
    Table,
    canonical_json,
    new_id,
)
from veil.tape.codec import Ident, TimeText
from veil.tape.kinds import EventKind, catalogue
from veil.tape.recorder import Recorder

SESSIONS = "cc_sessions"
STEPS = "cc_steps"
COMPACTIONS = "cc_compactions"
ACTOR = "claude-code-hook"
PART_CHARS = 4_000_000
"""A compaction record is split into events of at most this many characters of JSON."""

ClaudeCodeKind = Literal["claude_code.goal", "claude_code.step", "claude_code.compaction"]


@dataclass(frozen=True, kw_only=True)
class Hooked:
    """What every hook event repeats: its own id, its session and its time (the row's)."""

    id: Ident
    session_id: str
    at: TimeText


@dataclass(frozen=True, kw_only=True)
class GoalSet(Hooked):
    goal_id: str
    intent: str
    reason: str


@dataclass(frozen=True, kw_only=True)
class StepTaken(Hooked):
    action: str
    observation: str
    is_error: bool


@dataclass(frozen=True, kw_only=True)
class Compaction(Hooked):
    """One part of the transcript entries Claude Code was about to summarise."""

    trigger: str
    custom_instructions: str
    transcript_path: str
    part: int
    parts: int
    first_line: int
    last_line: int
    entries: tuple[JSONValue, ...]
    problem: str | None


GOAL = EventKind("claude_code.goal", GoalSet)
STEP = EventKind("claude_code.step", StepTaken)
COMPACTION = EventKind("claude_code.compaction", Compaction)
KINDS = catalogue(ClaudeCodeKind, GOAL, STEP, COMPACTION)
P = TypeVar("P")


class ClaudeCodeProjection:
    """The hooks' tables. Pure: every op comes from the event alone."""

    name = "claude_code"
    version = 1
    tables = (
        Table(
            SESSIONS,
            (
                Column("session_id", "text", nullable=False),
                Column("goal_id", "text"),
                Column("intent", "text"),
                Column("reason", "text"),
                Column("at", "time"),
                Column("seq", "int"),
            ),
            key=("session_id",),
        ),
        Table(
            STEPS,
            (
                Column("step_id", "text", nullable=False),
                Column("session_id", "text"),
                Column("action", "text"),
                Column("observation", "text"),
                Column("is_error", "bool"),
                Column("at", "time"),
                Column("seq", "int"),
            ),
            key=("step_id",),
            indexes=(("session_id", "seq"),),
        ),
        Table(
            COMPACTIONS,
            (
                Column("compaction_id", "text", nullable=False),
                Column("session_id", "text"),
                Column("trigger", "text"),
                Column("first_line", "int"),
                Column("last_line", "int"),
                Column("entries", "int"),
                Column("at", "time"),
                Column("seq", "int"),
            ),
            key=("compaction_id",),
            indexes=(("session_id", "seq"),),
        ),
    )
    text_indexes = ()
    vector_indexes = ()

    def apply(self, event: Event) -> list[Op]:
        p = event.payload
        if event.kind == GOAL.name:
            row = {k: p.get(k) for k in ("session_id", "goal_id", "intent", "reason", "at")}
            return [Put(SESSIONS, {"scope": event.scope, **row, "seq": event.seq})]
        if event.kind == STEP.name:
            row = {k: p.get(k) for k in ("session_id", "action", "observation", "is_error", "at")}
            return [Put(STEPS, {"scope": event.scope, "step_id": p["id"], **row, "seq": event.seq})]
        if event.kind == COMPACTION.name:
            entries = p.get("entries")
            return [
                Put(
                    COMPACTIONS,
                    {
                        "scope": event.scope,
                        "compaction_id": p["id"],
                        "session_id": p.get("session_id"),
                        "trigger": p.get("trigger"),
                        "first_line": p.get("first_line"),
                        "last_line": p.get("last_line"),
                        "entries": len(cast(list[JSONValue], entries))
                        if isinstance(entries, list)
                        else 0,
                        "at": p.get("at"),
                        "seq": event.seq,
                    },
                )
            ]
        return []


@dataclass(frozen=True)
class SessionGoal:
    goal_id: str
    intent: str
    reason: str


class HookState:
    """Reads and writes of the hooks' state for one project scope."""

    def __init__(self, store: Store, scope: str, clock: Clock) -> None:
        store.register(ClaudeCodeProjection())
        self.store = store
        self.scope = scope
        self.clock = clock

    def _recorder(self, session_id: str) -> Recorder:
        """The hooks of one Claude Code session, as a writer."""
        provenance: dict[str, JSONValue] = {"session_id": session_id}
        return Recorder(self.store, self.scope, ACTOR, self.clock, "cc", provenance)

    def _append(self, kind: EventKind[P], session_id: str, payload: Callable[[Hooked], P]) -> str:
        """One event whose payload repeats its id, session and time (the projection's row):
        ``payload`` builds it from them."""
        event_id, now = new_id("cc"), self.clock.now()
        head = Hooked(id=event_id, session_id=session_id, at=format_time(now))
        self._recorder(session_id).record(kind, payload(head), id=event_id, at=now)
        return event_id

    # ---- goals -----------------------------------------------------------------------

    def session_goal(self, session_id: str) -> SessionGoal | None:
        rows = self.store.fetch(SESSIONS, scope=self.scope, where={"session_id": session_id})
        if not rows:
            return None
        row = rows[0]
        return SessionGoal(str(row["goal_id"]), str(row["intent"] or ""), str(row["reason"] or ""))

    def set_goal(self, session_id: str, goal_id: str, intent: str, reason: str) -> SessionGoal:
        self._append(
            GOAL,
            session_id,
            lambda h: GoalSet(**vars(h), goal_id=goal_id, intent=intent[:4000], reason=reason),
        )
        return SessionGoal(goal_id, intent, reason)

    # ---- steps -----------------------------------------------------------------------

    def add_step(self, session_id: str, action: str, observation: str, is_error: bool) -> None:
        self._append(
            STEP,
            session_id,
            lambda h: StepTaken(
                **vars(h), action=action, observation=observation, is_error=is_error
            ),
        )

    def steps(self, session_id: str) -> list[stuck.Step]:
        """The session's steps in tape order: its attempts (of any goal) and its other calls."""
        ordered: list[tuple[int, stuck.Step]] = []
        attempts = self.store.fetch(
            ATTEMPTS, scope=self.scope, where={"session_id": session_id}, order_by=["seq"]
        )
        for row in attempts:
            step = monitor.steps_of([attempt_from_row(row)])[0]
            ordered.append((int(cast(int, row["seq"])), step))
        rows = self.store.fetch(
            STEPS, scope=self.scope, where={"session_id": session_id}, order_by=["seq"]
        )
        for row in rows:
            step = stuck.Step(
                cast("str | None", row["action"]),
                cast("str | None", row["observation"]),
                bool(row["is_error"]),
            )
            ordered.append((int(cast(int, row["seq"])), step))
        ordered.sort(key=lambda pair: pair[0])
        return [step for _, step in ordered]

    # ---- compactions -----------------------------------------------------------------

    def recorded_lines(self, session_id: str) -> int:
        """How many transcript lines of the session earlier compactions already recorded."""
        rows = self.store.fetch(
            COMPACTIONS, scope=self.scope, where={"session_id": session_id}, order_by=["seq"]
        )
        return max((int(cast(int, r["last_line"] or 0)) for r in rows), default=0)

    def record_compaction(
        self,
        session_id: str,
        *,
        trigger: str,
        custom_instructions: str,
        transcript_path: str,
        first_line: int,
        entries: Sequence[JSONValue],
        problem: str | None,
    ) -> list[str]:
        """Append the entries about to be summarised, in parts of at most
        :data:`PART_CHARS` characters of JSON each, as one atomic batch; returns the ids."""
        parts: list[list[JSONValue]] = [[]]
        size = 0
        for entry in entries:
            chars = len(canonical_json(entry))
            if parts[-1] and size + chars > PART_CHARS:
                parts.append([])
                size = 0
            parts[-1].append(entry)
            size += chars
        now = self.clock.now()
        rec = self._recorder(session_id)
        events: list[Event] = []
        line = first_line
        for index, part in enumerate(parts):
            event_id = new_id("cc")
            payload = Compaction(
                id=event_id,
                session_id=session_id,
                at=format_time(now),
                trigger=trigger,
                custom_instructions=custom_instructions,
                transcript_path=transcript_path,
                part=index + 1,
                parts=len(parts),
                first_line=line,
                last_line=line + len(part),
                entries=tuple(part),
                problem=problem,
            )
            events.append(rec.event(COMPACTION, payload, id=event_id, at=now))
            line += len(part)
        self.store.append(events)
        return [e.id for e in events]

    def compactions(self, session_id: str) -> list[dict[str, JSONValue]]:
        rows = self.store.fetch(
            COMPACTIONS, scope=self.scope, where={"session_id": session_id}, order_by=["seq"]
        )
        return [dict(r) for r in rows]
