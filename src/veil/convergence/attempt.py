"""The attempt record: one thing the agent tried against a goal, and how it came out. Pure data.

An :class:`Attempt` is written to the tape as a ``convergence.attempt`` event and is never
changed afterwards; everything the monitor decides is computed from the sequence of attempts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from veil.tape import JSONValue, canonical_json
from veil.tape.codec import Codec

Action = Literal["edit", "run", "test", "command", "tool", "steer"]
"""What was done: changed a file, ran a program, ran tests, ran a shell command, called a tool."""

Outcome = Literal["pass", "partial", "fail", "unknown"]
"""``pass``: the check succeeded; ``partial``: tests still fail but fewer than last time;
``fail``: it failed; ``unknown``: nothing says (an edit that applied, an output with no verdict).
"""

Level = Literal[0, 1, 2, 3]
"""Escalation: 0 none, 1 note what was tried, 2 demand a different approach, 3 stop the run."""

ACTIONS: tuple[Action, ...] = ("edit", "run", "test", "command", "tool", "steer")
VERIFYING: frozenset[Action] = frozenset({"test", "run"})
"""Actions whose pass says something about the goal (a passing ``cat`` does not)."""


@dataclass(frozen=True)
class Attempt:
    """One attempt against a goal.

    ``target`` is what it was aimed at (a file, a test id, a command); ``files`` the files it
    touched (used for the "different file" progress rule). ``call_digest`` identifies the exact
    tool call (tool name + canonical arguments), so an identical re-run is recognisable;
    ``output_digest`` the exact output, for the stuck patterns. ``failures`` is the failure count
    a test runner reported, when one did. ``at`` is ISO-8601 UTC.
    """

    id: str
    goal_id: str
    iteration: int
    action: Action
    target: str
    outcome: Outcome
    evidence: str = ""
    fingerprint: str | None = None
    session_id: str = ""
    tool_call_id: str | None = None
    tool_name: str = ""
    call_digest: str = ""
    output_digest: str = ""
    files: tuple[str, ...] = ()
    failures: int | None = None
    at: str = ""


def call_digest(tool_name: str, arguments: Mapping[str, JSONValue] | str | None) -> str:
    """A stable digest of a tool call: the tool name and its canonical JSON arguments."""
    body: JSONValue = (
        arguments if isinstance(arguments, str) or arguments is None else dict(arguments)
    )
    text = canonical_json({"tool": tool_name, "arguments": body})
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def text_digest(text: str) -> str:
    """A digest of an exact output text (whitespace at the ends ignored)."""
    return hashlib.sha256(text.strip().encode()).hexdigest()[:24]


ATTEMPT_CODEC: Codec[Attempt] = Codec(Attempt)
"""An attempt as the ``convergence.attempt`` payload (its fields, ``files`` a list)."""


def attempt_payload(attempt: Attempt) -> dict[str, JSONValue]:
    """The ``convergence.attempt`` event payload."""
    return ATTEMPT_CODEC.payload(attempt)
