"""The permission prompt: a modal that shows a mutating tool call and asks Allow / Deny.

The agent's worker thread blocks until the user answers (see ``VeilApp.ask``); the modal only
dismisses itself with ``True`` (allow) or ``False`` (deny). Escape, ``n`` and ``d`` deny, ``y``
and ``a`` allow — denying is the safe default, so every way out that is not an explicit yes is
a no.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

ARGS_LINES = 40
"""Arguments longer than this many lines are cut in the prompt (the call itself is not)."""


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


class ApprovalScreen(ModalScreen[bool]):
    """Asks whether ``tool_name`` may run with ``arguments``; dismisses with the answer."""

    DEFAULT_CSS = """
    ApprovalScreen { align: center middle; }
    ApprovalScreen > Vertical {
        width: 90%; max-width: 110; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 1 2;
    }
    ApprovalScreen #approval-args { height: auto; max-height: 24; margin: 1 0; }
    ApprovalScreen Horizontal { height: auto; align-horizontal: right; }
    ApprovalScreen Button { margin-left: 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,a", "answer(True)", "Allow"),
        Binding("n,d,escape", "answer(False)", "Deny"),
    ]

    def __init__(self, tool_name: str, arguments: dict[str, Any]) -> None:
        super().__init__()
        self.tool_name = tool_name
        self.arguments = arguments

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Allow [b]{escape(self.tool_name)}[/b]?", id="approval-title")
            with VerticalScroll(id="approval-args"):
                yield Static(describe_arguments(self.arguments), markup=False)
            with Horizontal():
                yield Button("Allow (y)", variant="success", id="allow")
                yield Button("Deny (n)", variant="error", id="deny")

    def on_mount(self) -> None:
        self.query_one("#deny", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "allow")

    def action_answer(self, allowed: bool) -> None:
        self.dismiss(allowed)
