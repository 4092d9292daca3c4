"""Whether a mutating tool call may run: the ``--approve`` policy.

``auto`` runs writes, edits and shell commands without asking; ``deny`` refuses them all;
``ask`` puts each call to a callback (the TUI shows the call and asks the user). Without a
callback — a non-interactive run such as ``veil -p`` — ``ask`` refuses with a reason telling the
user how to allow it, rather than hanging on a prompt nobody will see.

Pure and small: the loop calls ``decide`` (or ``check``, which lets non-mutating tools through)
in its ``before_tool_call`` hook and turns a refusal into an error result carrying ``reason``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from veil.agent.tool import Tool

Approval = Literal["ask", "auto", "deny"]
APPROVALS: tuple[Approval, ...] = get_args(Approval)

AskCallback = Callable[[str, dict[str, Any]], bool]
"""``ask(tool_name, arguments) -> allowed``; the TUI's prompt."""


@dataclass(frozen=True)
class PermissionPolicy:
    """The approval mode plus, for ``ask``, the callback that asks the user."""

    mode: Approval = "ask"
    ask: AskCallback | None = None

    def __post_init__(self) -> None:
        if self.mode not in APPROVALS:  # the mode often comes from a command-line string
            choices = ", ".join(APPROVALS)
            raise ValueError(f"unknown approval mode {self.mode!r} (expected one of {choices})")

    def decide(self, tool_name: str, arguments: dict[str, Any]) -> tuple[bool, str | None]:
        """``(allowed, reason)`` for running mutating tool ``tool_name`` with ``arguments``;
        ``reason`` explains a refusal and is None when allowed. Exceptions from the callback
        propagate (an interrupted prompt is not a "no")."""
        if self.mode == "auto":
            return True, None
        if self.mode == "deny":
            return False, (
                f"{tool_name} was not run: mutating tools are disabled (--approve deny)."
            )
        if self.ask is None:
            return False, (
                f"{tool_name} was not run: it needs approval and this session is not "
                "interactive. Pass --approve auto to allow writes and shell commands."
            )
        if self.ask(tool_name, arguments):
            return True, None
        return False, f"{tool_name} was not run: the user declined it."

    def check(self, tool: Tool, arguments: dict[str, Any]) -> tuple[bool, str | None]:
        """Like ``decide``, but tools that do not mutate are always allowed."""
        if not tool.mutates:
            return True, None
        return self.decide(tool.spec.name, arguments)
