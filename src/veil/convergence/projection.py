"""The convergence record's projection: attempts, escalations and goals as tables.

``convergence.attempt``, ``convergence.escalated`` and ``convergence.goal`` events (written by
:class:`~veil.convergence.record.AttemptLog`) become the ``conv_*`` tables; the row decoders
turn rows back into values. Pure, like every projection: a rebuild replays the tape through
:meth:`ConvergenceProjection.apply`.
"""

from __future__ import annotations

from typing import cast

from veil.convergence import monitor
from veil.convergence.attempt import Attempt, Level
from veil.convergence.events import ATTEMPT, ESCALATED, GOAL
from veil.tape import Column, Event, Op, Put, Row, Table
from veil.tape.codec import Codec

ATTEMPTS = "conv_attempts"
ESCALATIONS = "conv_escalations"
GOALS = "conv_goals"


class ConvergenceProjection:
    """Tables of attempts, escalations and goals. Pure: every op comes from the event alone."""

    name = "convergence"
    version = 1
    tables = (
        Table(
            ATTEMPTS,
            (
                Column("attempt_id", "text", nullable=False),
                Column("goal_id", "text"),
                Column("iteration", "int"),
                Column("action", "text"),
                Column("target", "text"),
                Column("outcome", "text"),
                Column("evidence", "text"),
                Column("fingerprint", "text"),
                Column("session_id", "text"),
                Column("tool_call_id", "text"),
                Column("tool_name", "text"),
                Column("call_digest", "text"),
                Column("output_digest", "text"),
                Column("files", "json"),
                Column("failures", "int"),
                Column("at", "time"),
                Column("seq", "int"),
            ),
            key=("attempt_id",),
            indexes=(("goal_id", "seq"), ("fingerprint",)),
        ),
        Table(
            ESCALATIONS,
            (
                Column("escalation_id", "text", nullable=False),
                Column("goal_id", "text"),
                Column("level", "int"),
                Column("reasons", "json"),
                Column("circling_count", "int"),
                Column("attempt_id", "text"),
                Column("session_id", "text"),
                Column("at", "time"),
                Column("seq", "int"),
            ),
            key=("escalation_id",),
            indexes=(("goal_id", "seq"),),
        ),
        Table(
            GOALS,
            (
                Column("goal_id", "text", nullable=False),
                Column("intent", "text"),
                Column("project", "text"),
                Column("session_id", "text"),
                Column("at", "time"),
            ),
            key=("goal_id",),
        ),
    )
    text_indexes = ()
    vector_indexes = ()

    def apply(self, event: Event) -> list[Op]:
        p = event.payload
        scope = event.scope
        if event.kind == ATTEMPT.name:
            row: Row = {"scope": scope, "attempt_id": p["id"]}
            for name in (
                "goal_id",
                "iteration",
                "action",
                "target",
                "outcome",
                "evidence",
                "fingerprint",
                "session_id",
                "tool_call_id",
                "tool_name",
                "call_digest",
                "output_digest",
                "files",
                "failures",
                "at",
            ):
                row[name] = p.get(name)
            row["seq"] = event.seq
            return [Put(ATTEMPTS, row)]
        if event.kind == ESCALATED.name:
            return [
                Put(
                    ESCALATIONS,
                    {
                        "scope": scope,
                        "escalation_id": p["id"],
                        "goal_id": p["goal_id"],
                        "level": p["level"],
                        "reasons": p["reasons"],
                        "circling_count": p["circling_count"],
                        "attempt_id": p["attempt_id"],
                        "session_id": p["session_id"],
                        "at": p["at"],
                        "seq": event.seq,
                    },
                )
            ]
        if event.kind == GOAL.name:
            return [
                Put(
                    GOALS,
                    {
                        "scope": scope,
                        "goal_id": p["goal_id"],
                        "intent": p["intent"],
                        "project": p["project"],
                        "session_id": p["session_id"],
                        "at": p["at"],
                    },
                    keep_existing=True,
                )
            ]
        return []


ATTEMPT_ROW: Codec[Attempt] = Codec(Attempt, renames={"id": "attempt_id"})
"""An ``conv_attempts`` row as an :class:`Attempt` (the columns are the attempt's fields)."""


def attempt_from_row(row: Row) -> Attempt:
    return ATTEMPT_ROW.decode(row)


def escalation_from_row(row: Row) -> monitor.Escalation:
    return monitor.Escalation(
        id=str(row["escalation_id"]),
        goal_id=str(row["goal_id"]),
        level=cast(Level, int(cast(int, row["level"]))),
        reasons=tuple(cast("list[str]", row["reasons"] or [])),
        circling_count=int(cast(int, row["circling_count"])),
        attempt_id=str(row["attempt_id"]),
        session_id=str(row["session_id"]),
        at=str(row["at"]),
    )
