"""Tool calls as plain values for the memory layers: the one place that says what a call did.

The context engine and the convergence monitor never see a tool's name as a rule (they store it
as a label). What they need comes from the tool's own declaration (:meth:`Tool.touches`) and
from its result, turned into a :class:`Capture` here:

- for the context engine: what the call addressed (``target``), the file it read (whole or a
  range) or wrote;
- for the attempt log: which kind of attempt it is (``edit`` for a write, ``test`` for a command
  that runs a test suite, ``command`` for any other command; a read or a search is not an
  attempt), its target, the files it touched and the command's exit status;
- for turns: whether an assistant turn acts (a call that changes something) or only looks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from veil.agent.tool import ToolResult, Touches, touches_of
from veil.convergence.attempt import Action

_TEST = re.compile(
    r"\b(pytest|py\.test|unittest|tox|nox|go test|cargo test|npm test|yarn test|pnpm test|"
    r"jest|vitest|mocha|rspec|mvn test|gradle test|manage\.py test|make test|ctest)\b"
)

CallKind = Literal["act", "look"]


@dataclass(frozen=True)
class Capture:
    """One finished tool call, as the memory layers receive it."""

    touches: Touches
    target: str | None
    action: Action | None
    files: tuple[str, ...]
    exit_code: int | None
    passed: bool | None
    """Whether an attempt worked as far as the call itself can tell (a command's exit status,
    an edit that applied); None when the call says nothing about it."""


def action_of(touches: Touches) -> Action | None:
    """Which attempt a call is: a write is an ``edit``, a command a ``test`` (a test runner
    runs) or a ``command``. Reads, searches and calls that touch nothing are not attempts."""
    if touches.writes:
        return "edit"
    if touches.command:
        return "test" if _TEST.search(touches.command) else "command"
    return None


def exit_code_of(result: ToolResult) -> int | None:
    """The exit status a command reported (``details["exit_code"]``; None when it reports
    none: it timed out, was killed, or is not a command)."""
    code = result.details.get("exit_code")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def capture(tool: object, arguments: Mapping[str, Any], result: ToolResult) -> Capture:
    """The :class:`Capture` of a call of ``tool`` with ``arguments`` that returned ``result``."""
    touches = touches_of(tool, dict(arguments))
    action = action_of(touches)
    code = exit_code_of(result) if touches.command else None
    passed: bool | None = None
    if action in ("test", "command"):
        passed = code == 0 and not result.is_error if code is not None else None
    elif action == "edit":
        passed = not result.is_error
    files = tuple(p for p in (touches.writes, touches.reads) if p)
    return Capture(touches, touches.what(), action, files, code, passed)


def call_kinds(tools: Mapping[str, object], names: Sequence[str]) -> tuple[CallKind, ...]:
    """For an assistant turn's calls: ``act`` for a tool that changes something, else ``look``
    (how the context engine classifies the turn)."""
    out: list[CallKind] = []
    for name in names:
        tool = tools.get(name)
        out.append("act" if tool is not None and bool(getattr(tool, "mutates", False)) else "look")
    return tuple(out)
