"""The tool contract: a spec the model sees and a ``run`` the loop calls.

Tools are plain objects, one file each under ``veil.agent.tools``. ``mutates`` marks tools that
change the world (write, edit, bash): the permission policy asks before running them unless the
user chose ``--approve auto``. ``parallel_safe`` tools may run concurrently within one turn
(results are still returned in the order the model asked for them).
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
    and addressed by pointer."""

    content: str
    is_error: bool = False
    full_output: str | None = None
    details: dict[str, Any] = field(default_factory=lambda: {})


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
