"""Convergence: the record of every attempt against a goal, and the monitor that watches it.

- :mod:`~veil.convergence.fingerprint` — error text → ``fp1:…`` (same failure, same id).
- :mod:`~veil.convergence.outcome` — tool result → pass / partial / fail / unknown.
- :mod:`~veil.convergence.goals` — task message + project → stable goal id.
- :mod:`~veil.convergence.monitor` — progress vs circling, levels 1-3, ``should_block``.
- :mod:`~veil.convergence.stuck` — the four OpenHands loop patterns.
- :mod:`~veil.convergence.feedback` — what the agent is told at each level (every surface).
- :mod:`~veil.convergence.record` — :class:`AttemptLog` on the tape (the only stateful part).
- :mod:`~veil.convergence.projection` — the attempt, escalation and goal tables (pure).

Everything but ``record`` is pure. See ``docs/convergence.md``.
"""

from __future__ import annotations

from veil.convergence.attempt import Action, Attempt, Level, Outcome, call_digest
from veil.convergence.feedback import feedback
from veil.convergence.fingerprint import FINGERPRINT_VERSION, fingerprint, normalise
from veil.convergence.goals import Goal, goal_for, goal_id, refine
from veil.convergence.monitor import (
    Assessment,
    Escalation,
    MonitorConfig,
    already_tried_note,
    assess,
    different_approach_note,
    should_block,
    summary,
)
from veil.convergence.outcome import Detection, detect, resolve, runner_summary
from veil.convergence.projection import ConvergenceProjection
from veil.convergence.record import AttemptLog
from veil.convergence.stuck import Step

__all__ = [
    "FINGERPRINT_VERSION",
    "Action",
    "Assessment",
    "Attempt",
    "AttemptLog",
    "ConvergenceProjection",
    "Detection",
    "Escalation",
    "Goal",
    "Level",
    "MonitorConfig",
    "Outcome",
    "Step",
    "already_tried_note",
    "assess",
    "call_digest",
    "detect",
    "different_approach_note",
    "feedback",
    "fingerprint",
    "goal_for",
    "goal_id",
    "normalise",
    "refine",
    "resolve",
    "runner_summary",
    "should_block",
    "summary",
]
