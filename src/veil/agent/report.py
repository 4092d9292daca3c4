"""How a run is told to the person watching it: tool-call status, output tails, the summary.

Pure functions and one accumulator, shared by print mode and the TUI so both say the same
thing: a command that exited non-zero is ``exit N``, never ``ok``; a call refused for lack of
approval says so; the end-of-run summary counts turns, tokens, evictions, files written and
the convergence level.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from veil.agent.events import (
    AgentEnd,
    AgentEvent,
    Evicted,
    Expanded,
    LevelChanged,
    RequestSent,
    ToolEnd,
    TurnStart,
)
from veil.agent.permissions import is_unattended

ARGS_LINES = 40
"""Arguments longer than this many lines are cut in an approval prompt (the call is not)."""
TAIL_LINES = 3
"""Lines of a failed command's output shown under its progress line."""


def tool_status(end: ToolEnd) -> str:
    """The status word of a finished call: ``ok``, ``exit N``, ``error``, ``blocked`` or
    ``not run: needs approval``."""
    if end.blocked_by == "permission":
        return "not run: needs approval" if is_unattended(end.blocked or "") else "denied"
    if end.blocked:
        return "blocked"
    if end.result.is_error:
        return "error"
    if end.exit_code is not None and end.exit_code != 0:
        return f"exit {end.exit_code}"
    return "ok"


def output_tail(text: str, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` non-blank lines of a result, without the bash tool's ``[exit code]``
    trailer and the full-output pointer (the status says those)."""
    kept = [
        line.rstrip()
        for line in text.splitlines()
        if line.strip()
        and not line.startswith("[exit code ")
        and not line.startswith("[full output: ")
    ]
    return [line if len(line) <= 200 else line[:197] + "..." for line in kept[-lines:]]


def needs_tail(end: ToolEnd) -> bool:
    """Whether the person should see the end of the output: the call failed or was refused."""
    return tool_status(end) != "ok"


def describe_arguments(arguments: dict[str, Any]) -> str:
    """The arguments as the user should read them before allowing a call: pretty JSON, and a
    ``command``/``content`` string shown verbatim (multi-line), cut at ``ARGS_LINES`` lines."""
    lines: list[str] = []
    for key, value in arguments.items():
        if isinstance(value, str) and ("\n" in value or key in ("command", "content")):
            lines.append(f"{key}:")
            lines.extend(f"  {line}" for line in value.splitlines() or [""])
        else:
            lines.append(f"{key}: {json.dumps(value, ensure_ascii=False)}")
    if len(lines) > ARGS_LINES:
        lines = [*lines[:ARGS_LINES], f"… ({len(lines) - ARGS_LINES} more lines)"]
    return "\n".join(lines)


@dataclass
class RunSummary:
    """Counts of one run, fed every event (:meth:`add`); :meth:`line` is the summary."""

    turns: int = 0
    tokens_in: int = 0
    tokens_cached: int = 0
    tokens_out: int = 0
    evictions: int = 0
    evicted_tokens: int = 0
    expansions: int = 0
    level: int = 0
    refused: int = 0
    failed: int = 0
    files: dict[str, None] = field(default_factory=lambda: {})
    end: AgentEnd | None = None
    window: tuple[int, int] | None = None
    """(the last request in the provider's tokens, the model's window), when known."""

    def add(self, event: AgentEvent, *, writes: str | None = None) -> None:
        """Count ``event``; ``writes`` is the file a finished call wrote (from its tool's
        declaration), counted when the call succeeded."""
        if isinstance(event, TurnStart):
            self.turns = max(self.turns, event.turn)
        elif isinstance(event, RequestSent):
            self.tokens_in += event.response.usage.input_tokens
            self.tokens_cached += event.response.usage.cached_input_tokens
            self.tokens_out += event.response.usage.output_tokens
        elif isinstance(event, Evicted):
            self.evictions += len(event.items)
            self.evicted_tokens += sum(i.tokens for i in event.items)
        elif isinstance(event, Expanded):
            self.expansions += 1
        elif isinstance(event, LevelChanged):
            self.level = event.level
        elif isinstance(event, ToolEnd):
            status = tool_status(event)
            if status.startswith("not run"):
                self.refused += 1
            elif status != "ok":
                self.failed += 1
            if writes and status == "ok":
                self.files[writes] = None
        elif isinstance(event, AgentEnd):
            self.end = event

    def line(self, session_id: str = "") -> str:
        files = ", ".join(list(self.files)[:8]) + (" …" if len(self.files) > 8 else "")
        parts = [
            f"{self.turns} turn{'s' if self.turns != 1 else ''}",
            f"tokens {self.tokens_in} in"
            + (f" ({self.tokens_cached} from the prompt cache)" if self.tokens_cached else "")
            + f" / {self.tokens_out} out",
            f"{self.evictions} evicted ({self.evicted_tokens} tokens)"
            + (f", {self.expansions} expanded" if self.expansions else ""),
            *(
                [f"last request {self.window[0]:,} of the {self.window[1]:,}-token window"]
                if self.window
                else []
            ),
            f"files written: {files or 'none'}",
            f"convergence level {self.level}",
        ]
        if self.failed:
            parts.append(f"{self.failed} failed call{'s' if self.failed != 1 else ''}")
        if self.refused:
            parts.append(f"{self.refused} refused for lack of approval")
        if session_id:
            parts.append(f"session {session_id}")
        return " · ".join(parts)
