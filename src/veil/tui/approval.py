"""Modals: the permission prompt, and the viewer of a tool call's output.

:class:`ApprovalScreen` shows a mutating tool call and asks Allow / Always / Deny. The agent's
worker thread blocks until the user answers (see ``VeilApp.ask``); the modal dismisses itself
with ``True`` (allow once), ``"always"`` (allow this tool for the rest of the session) or
``False`` (deny). Escape, ``n`` and ``d`` deny, ``y`` allows, ``a`` always allows — denying is
the safe default, so every way out that is not an explicit yes is a no. A write or an edit is
shown as the unified diff it would make to the file as it is now (``diff``), with its other
arguments; anything else as its arguments.

:class:`OutputScreen` shows a call's whole output; escape or ``q`` closes it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from veil.agent.permissions import Answer
from veil.agent.report import describe_arguments
from veil.tui.diffs import styled

OUTPUT_MAX_CHARS = 200_000
"""The viewer shows at most this much of an output (the rest stays on the tape)."""


class ApprovalScreen(ModalScreen[Answer]):
    """Asks whether ``tool_name`` may run with ``arguments``; dismisses with the answer."""

    DEFAULT_CSS = """
    ApprovalScreen { align: center middle; }
    ApprovalScreen > Vertical {
        width: 90%; max-width: 110; height: auto; max-height: 90%;
        border: thick $warning; background: $surface; padding: 1 2;
    }
    ApprovalScreen #approval-args { height: auto; max-height: 24; margin: 1 0; }
    ApprovalScreen.with-diff #approval-args { max-height: 40; }
    ApprovalScreen Horizontal { height: auto; align-horizontal: right; }
    ApprovalScreen Button { margin-left: 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Allow"),
        Binding("a", "always", "Always allow"),
        Binding("n,d,escape", "answer(False)", "Deny"),
    ]

    def __init__(
        self, tool_name: str, arguments: dict[str, object], *, diff: str | None = None
    ) -> None:
        super().__init__(classes="with-diff" if diff else None)
        self.tool_name = tool_name
        self.arguments = arguments
        self.diff = diff

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Allow [b]{escape(self.tool_name)}[/b]?", id="approval-title")
            with VerticalScroll(id="approval-args"):
                if self.diff:
                    path = {"path": self.arguments.get("path")}
                    yield Static(describe_arguments(path), markup=False)
                    yield Static(styled(self.diff), id="approval-diff")
                else:
                    yield Static(describe_arguments(self.arguments), markup=False)
            with Horizontal():
                yield Button("Allow (y)", variant="success", id="allow")
                yield Button(f"Always allow {self.tool_name} (a)", id="always")
                yield Button("Deny (n)", variant="error", id="deny")

    def on_mount(self) -> None:
        self.query_one("#deny", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "always":
            self.dismiss("always")
        else:
            self.dismiss(event.button.id == "allow")

    def action_answer(self, allowed: bool) -> None:
        self.dismiss(allowed)

    def action_always(self) -> None:
        self.dismiss("always")


class OutputScreen(ModalScreen[None]):
    """A tool call's whole output, scrollable; escape or ``q`` closes it."""

    DEFAULT_CSS = """
    OutputScreen { align: center middle; }
    OutputScreen > Vertical {
        width: 95%; height: 90%; border: thick $accent; background: $surface; padding: 0 1;
    }
    OutputScreen #output-body { height: 1fr; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "close", "Close")]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title_text = title
        if len(text) > OUTPUT_MAX_CHARS:
            text = text[:OUTPUT_MAX_CHARS] + f"\n… ({len(text) - OUTPUT_MAX_CHARS} more characters)"
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"[b]{escape(self.title_text)}[/b]  (esc closes)")
            with VerticalScroll(id="output-body"):
                yield Static(self.text or "(no output)", markup=False, id="output-text")

    def action_close(self) -> None:
        self.dismiss(None)
