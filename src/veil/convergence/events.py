"""The convergence record's event kinds: a goal first seen, an attempt, an escalation.

:data:`ConvergenceKind` names them; each pairs with its payload dataclass — the goal's
:class:`GoalSeen`, the :class:`~veil.convergence.attempt.Attempt` itself, the
:class:`~veil.convergence.monitor.Escalation` itself — through one codec, and they are
registered with the tape when this module is imported (by :mod:`veil.convergence.record`, the
one writer, and :mod:`veil.convergence.projection`, the reader).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from veil.convergence.attempt import ATTEMPT_CODEC, Attempt
from veil.convergence.monitor import Escalation
from veil.tape.codec import Ident, TimeText
from veil.tape.kinds import EventKind, catalogue

ConvergenceKind = Literal["convergence.goal", "convergence.attempt", "convergence.escalated"]


@dataclass(frozen=True)
class GoalSeen:
    """A goal the first time a project works on it."""

    goal_id: Ident
    intent: str
    project: str
    session_id: str
    at: TimeText


GOAL = EventKind("convergence.goal", GoalSeen)
ATTEMPT = EventKind("convergence.attempt", Attempt, codec=ATTEMPT_CODEC)
ESCALATED = EventKind("convergence.escalated", Escalation)
KINDS = catalogue(ConvergenceKind, GOAL, ATTEMPT, ESCALATED)
