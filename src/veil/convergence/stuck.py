"""The loop patterns of OpenHands' stuck detector, over a sequence of steps. Pure.

OpenHands (``openhands/controller/stuck.py``) halts an agent that repeats itself in one of
four ways; the same four are detected here, over the most recent steps only (a pattern that
was broken by a different step is no longer reported):

1. ``repeated_action_observation``: the same action with the same observation 4 times in a row.
2. ``repeated_action_error``: the same action ending in an error 3 times in a row.
3. ``monologue``: the same message 3 times in a row with no action in between.
4. ``ping_pong``: two different (action, observation) pairs alternating over the last 6 steps.

A step is an action (any hashable description, e.g. a tool-call digest) with its observation,
whether it errored, or — for an assistant message with no tool call — the message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Pattern = Literal["repeated_action_observation", "repeated_action_error", "monologue", "ping_pong"]

SAME_ACTION_OBSERVATION = 4
SAME_ACTION_ERROR = 3
SAME_MESSAGE = 3
PING_PONG_STEPS = 6


@dataclass(frozen=True)
class Step:
    """One step of the run: ``action`` and ``observation`` (``None`` for a pure message),
    ``is_error``, and ``message`` (the assistant text when the step has no action)."""

    action: str | None
    observation: str | None = None
    is_error: bool = False
    message: str | None = None


def detect(steps: Sequence[Step]) -> tuple[Pattern, ...]:
    """The patterns the tail of ``steps`` shows (empty when none)."""
    found: list[Pattern] = []
    actions = [s for s in steps if s.action is not None]
    tail = actions[-SAME_ACTION_OBSERVATION:]
    if len(tail) == SAME_ACTION_OBSERVATION and all(
        (s.action, s.observation) == (tail[0].action, tail[0].observation) for s in tail
    ):
        found.append("repeated_action_observation")
    tail = actions[-SAME_ACTION_ERROR:]
    if len(tail) == SAME_ACTION_ERROR and all(
        s.is_error and s.action == tail[0].action for s in tail
    ):
        found.append("repeated_action_error")
    tail = list(steps[-SAME_MESSAGE:])
    if (
        len(tail) == SAME_MESSAGE
        and all(s.action is None and s.message for s in tail)
        and len({s.message for s in tail}) == 1
    ):
        found.append("monologue")
    tail = actions[-PING_PONG_STEPS:]
    if len(tail) == PING_PONG_STEPS:
        even = {(s.action, s.observation) for s in tail[0::2]}
        odd = {(s.action, s.observation) for s in tail[1::2]}
        if len(even) == 1 and len(odd) == 1 and even != odd:
            found.append("ping_pong")
    return tuple(found)
