"""The transcript's widgets: the assistant's text as Markdown, a tool call's line (folded or
not, dimmed once its result left the model's context) and its output under it, and the
messages they send the app."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.console import RenderableType
from rich.markdown import Markdown
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Static

from veil.tui.render import tool_line

EVICTED_MARK = "(out of context)"
"""Appended to a dimmed tool-call line: its result is no longer in the model's context."""


class OpenOutput(Message):
    """A tool-call line was clicked: show that call's output."""

    def __init__(self, call_id: str) -> None:
        super().__init__()
        self.call_id = call_id


class ToggleFold(Message):
    """Enter on a focused tool-call line: unfold (or fold) its output under it."""

    def __init__(self, call_id: str) -> None:
        super().__init__()
        self.call_id = call_id


class AssistantText(Static):
    """The assistant's text, rendered as Markdown; ``source`` is the text as the model wrote
    it."""

    def __init__(self, source: str) -> None:
        super().__init__(classes="assistant")
        self.source = ""
        self.set_source(source)

    def set_source(self, source: str) -> None:
        self.source = source
        self.update(Markdown(source))


class ToolDetail(Static):
    """What shows under a tool-call line: its diff (edit, write), the end of its output when
    it did not end ``ok`` (as print mode shows it), or — unfolded — its output."""

    def __init__(self) -> None:
        super().__init__(classes="tool-detail", markup=False)
        self.source = ""

    def show(self, source: str, renderable: RenderableType | None = None) -> None:
        self.source = source
        self.update(renderable if renderable is not None else source)


class ToolLine(Static):
    """One tool call in the transcript. ``call_id`` ties it to the context engine's items.

    ``summary`` is what shows under the line by default (a diff, a failed call's tail, or
    nothing); ``unfolded`` replaces it by the call's output (enter on the focused line, or
    ctrl+o for the latest call)."""

    can_focus = True
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter,space", "fold", "Fold/unfold the output", show=False)
    ]

    def __init__(self, call_id: str, name: str, arguments: dict[str, Any], status: str) -> None:
        super().__init__(tool_line(name, arguments, status), markup=False, classes="tool-call")
        self.call_id = call_id
        self.tool_name = name
        self.arguments = arguments
        self.status = status
        self.summary: tuple[str, RenderableType] | None = None
        self.unfolded = False
        self.detail: ToolDetail | None = None

    def action_fold(self) -> None:
        self.post_message(ToggleFold(self.call_id))

    @property
    def evicted(self) -> bool:
        return self.has_class("evicted")

    def set_status(self, status: str) -> None:
        self.status = status
        self.set_class(status not in ("ok", "running", "…", "?"), "failed")
        self._render_line()

    def on_click(self) -> None:
        self.post_message(OpenOutput(self.call_id))

    def set_evicted(self, evicted: bool) -> None:
        """Dim the line (CSS class ``evicted``) and say so in words, for terminals where dim
        does not show (NO_COLOR, screen readers)."""
        if evicted != self.evicted:
            self.set_class(evicted, "evicted")
            self._render_line()

    def _render_line(self) -> None:
        text = tool_line(self.tool_name, self.arguments, self.status)
        self.update(f"{text} {EVICTED_MARK}" if self.evicted else text)
