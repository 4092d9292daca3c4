"""The prompt: a multi-line editor where enter sends and up/down recall the project's history.

Keys: enter posts :class:`PromptArea.Submitted` with the whole text (the app clears it);
ctrl+j — and shift+enter in terminals that report it (the kitty keyboard protocol: kitty,
WezTerm, foot, Ghostty…; tmux and most others send shift+enter as a plain enter) — inserts a
line break; a paste inserts every line of what was pasted. Up on the first line and down on
the last line walk the :class:`~veil.tui.history.History` (the text being typed is kept and
comes back past the newest entry); anywhere else they move the cursor as in any editor.
"""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.message import Message
from textual.widgets import TextArea

from veil.tui.history import History


class PromptArea(TextArea):
    """The input box. ``recall`` (the project's history) is appended to by the app on submit."""

    DEFAULT_CSS = """
    PromptArea { height: auto; min-height: 3; max-height: 12; }
    """
    NEWLINE_KEYS: ClassVar[frozenset[str]] = frozenset({"ctrl+j", "shift+enter"})
    """Keys that insert a line break. Handled with the typed characters (not as a binding, whose
    action could run after characters typed right behind it)."""

    class Submitted(Message):
        """Enter was pressed: ``value`` is the prompt's whole text."""

        def __init__(self, prompt: PromptArea, value: str) -> None:
            super().__init__()
            self.prompt = prompt
            self.value = value

        @property
        def control(self) -> PromptArea:
            return self.prompt

    def __init__(self, history: History, *, placeholder: str = "", id: str | None = None) -> None:
        super().__init__(
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            highlight_cursor_line=False,
            placeholder=placeholder,
            id=id,
        )
        self.recall = history
        """The project's message history (``history`` is the TextArea's undo history)."""

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.post_message(self.Submitted(self, self.text))
            return
        if event.key in self.NEWLINE_KEYS and not self.read_only:
            event.stop()
            event.prevent_default()
            self.action_newline()
            return
        await super()._on_key(event)

    def action_newline(self) -> None:
        """Insert a line break at the cursor (replacing a selection)."""
        start, end = self.selection
        self.replace("\n", start, end, maintain_selection_offset=False)

    def action_cursor_up(self, select: bool = False) -> None:
        if not select and self.selection.is_empty and self.cursor_location[0] == 0:
            recalled = self.recall.older(self.text)
            if recalled is not None:
                self.load_text(recalled)
                # On the first line: the next up goes on back through the history.
                self.move_cursor((0, len(self.document[0])))
            return
        super().action_cursor_up(select)

    def action_cursor_down(self, select: bool = False) -> None:
        last = self.document.line_count - 1
        if not select and self.selection.is_empty and self.cursor_location[0] == last:
            recalled = self.recall.newer()
            if recalled is not None:
                self.load_text(recalled)
                self.move_cursor(self.document.end)
            return
        super().action_cursor_down(select)
