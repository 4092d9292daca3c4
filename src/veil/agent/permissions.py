"""Whether a mutating tool call may run: the ``--approve`` policy.

``auto`` runs writes, edits and shell commands without asking; ``deny`` refuses them all;
``ask`` puts each call to a callback — the TUI's modal, or print mode's prompt on the terminal.
The callback answers ``True`` (this once), ``False`` (no) or ``"always"`` (this tool, for the
rest of the session). Without a callback — nobody at a terminal — ``ask`` refuses with a reason
naming ``--approve auto``, rather than hanging on a prompt nobody will see, and counts the
refusal in :attr:`PermissionPolicy.unattended` so print mode can exit non-zero.

The loop calls ``decide`` on its own thread, in the model's order (the prepare phase), so a
prompt never races another.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args

from veil.agent.tool import Tool

Approval = Literal["ask", "auto", "deny"]
APPROVALS: tuple[Approval, ...] = get_args(Approval)

Answer = bool | Literal["always"]
AskCallback = Callable[[str, dict[str, Any]], Answer]
"""``ask(tool_name, arguments) -> True | False | "always"``."""

UNATTENDED = (
    "{tool} was not run: it needs approval and nobody is at a terminal to give it. "
    "Pass --approve auto to allow writes and shell commands."
)


def is_unattended(reason: str) -> bool:
    """Whether a refusal's reason is the one given when nobody could be asked."""
    return "nobody is at a terminal" in reason


class PermissionPolicy:
    """The approval mode plus, for ``ask``, the callback that asks the user."""

    def __init__(self, mode: Approval = "ask", ask: AskCallback | None = None) -> None:
        if mode not in APPROVALS:  # the mode often comes from a command-line string
            choices = ", ".join(APPROVALS)
            raise ValueError(f"unknown approval mode {mode!r} (expected one of {choices})")
        self.mode: Approval = mode
        self.ask = ask
        self.always: set[str] = set()
        """Tools the user allowed for the rest of the session."""
        self.unattended: list[str] = []
        """Tool names of calls refused because nobody could be asked, in order."""
        self.declined: list[str] = []
        """Tool names of calls the user (or ``deny``) refused."""

    def decide(self, tool_name: str, arguments: dict[str, Any]) -> tuple[bool, str | None]:
        """``(allowed, reason)`` for running mutating tool ``tool_name`` with ``arguments``;
        ``reason`` explains a refusal and is None when allowed. Exceptions from the callback
        propagate (an interrupted prompt is not a "no")."""
        if self.mode == "auto" or tool_name in self.always:
            return True, None
        if self.mode == "deny":
            self.declined.append(tool_name)
            return False, (
                f"{tool_name} was not run: mutating tools are disabled (--approve deny)."
            )
        if self.ask is None:
            self.unattended.append(tool_name)
            return False, UNATTENDED.format(tool=tool_name)
        answer = self.ask(tool_name, arguments)
        if answer == "always":
            self.always.add(tool_name)
            return True, None
        if answer is True:
            return True, None
        self.declined.append(tool_name)
        return False, f"{tool_name} was not run: the user declined it."

    def check(self, tool: Tool, arguments: dict[str, Any]) -> tuple[bool, str | None]:
        """Like ``decide``, but tools that do not mutate are always allowed."""
        if not tool.mutates:
            return True, None
        return self.decide(tool.spec.name, arguments)
