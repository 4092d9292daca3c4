"""The tool contract: a spec the model sees and a ``run`` the loop calls.

Tools are plain objects, one file each under ``veil.agent.tools``. ``mutates`` marks tools that
change the world (write, edit, bash): the permission policy asks before running them unless the
user chose ``--approve auto``. ``parallel_safe`` tools may run concurrently within one turn
(results are still returned in the order the model asked for them): the loop runs only
``run`` concurrently; argument checks, hooks and permission come before, on the loop's thread,
and capture after, in the model's order.

A tool also declares what a call *touches* (:class:`Touches`: the file it reads, the file it
writes, the command it runs): the one place where tool calls become plain values for the memory
layers, which never see a tool's name (see :mod:`veil.agent.capture`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from veil.llm.messages import ToolSpec


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns. ``content`` is what the model sees (possibly truncated);
    ``full_output`` keeps everything when it was truncated, so it can be stored on the tape
    and addressed by pointer. ``details`` are typed facts about the call (``exit_code``,
    ``truncated``…) that travel with the result message; ``item`` is set by the memory layer
    (``after_tool_call``): the context item holding the result."""

    content: str
    is_error: bool = False
    full_output: str | None = None
    details: dict[str, Any] = field(default_factory=lambda: {})
    item: str | None = None


@dataclass(frozen=True)
class Touches:
    """What one call of a tool touches, as the tool declares it (``Tool.touches``).

    ``reads``: a file the call reads (``partial`` when only a range of it, ``range`` saying
    which); ``writes``: a file it creates or changes; ``command``: a command line it runs;
    ``looks``: a search or listing that changes nothing (``target`` then names what was looked
    at). A call of a tool that declares nothing touches nothing the layers track.
    """

    reads: str | None = None
    partial: bool = False
    range: str | None = None
    writes: str | None = None
    command: str | None = None
    looks: bool = False
    target: str | None = None

    def what(self) -> str | None:
        """What the call addressed, as one string: the path (``path#range`` for part of a
        file), the command line, or the declared target."""
        if self.reads:
            return f"{self.reads}#{self.range}" if self.partial and self.range else self.reads
        return self.writes or self.command or self.target


NOTHING = Touches()


@dataclass
class ToolContext:
    cwd: Path
    abort: threading.Event = field(default_factory=threading.Event)
    default_timeout_s: float = 120.0


class ToolError(Exception):
    """A tool refused or failed in a way the model should read (becomes an error result)."""


@runtime_checkable
class Tool(Protocol):
    @property
    def spec(self) -> ToolSpec: ...

    @property
    def mutates(self) -> bool: ...

    @property
    def parallel_safe(self) -> bool: ...

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult: ...


def touches_of(tool: object, arguments: dict[str, Any]) -> Touches:
    """What ``tool`` declares a call with ``arguments`` touches (:data:`NOTHING` for a tool that
    declares nothing, or whose declaration fails on malformed arguments)."""
    declare = getattr(tool, "touches", None)
    if declare is None:
        return NOTHING
    try:
        found = declare(arguments)
    except (TypeError, ValueError, KeyError):
        return NOTHING
    return found if isinstance(found, Touches) else NOTHING
