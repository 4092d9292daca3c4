"""The transcript: the conversation as the person sees it, and what each tool call did.

A scrolling column of blocks: plain-text lines (never parsed as markup) with CSS classes
(``user``, ``info``, ``notice``, ``manifest``), the assistant's text as Markdown, and one line
per tool call (:class:`~veil.tui.widgets.ToolLine`) with, under it, its summary — an edit's or
a write's diff, or the last lines of the output of a call that did not end ``ok`` — or, once
unfolded, its output (its last :data:`UNFOLD_LINES` lines). Every new block scrolls into view.

:class:`Transcript` keeps, by call id, each call's line, its result once it finished and, for
a write, the file's text just before it ran (for the diff); it renders a stored conversation
with the same lines a live run makes. It reads no harness: the app tells it which calls'
results are out of the model's context (:meth:`Transcript.set_evicted`).
"""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from veil.agent.report import output_tail
from veil.llm.messages import AssistantMessage, ToolResultMessage, UserMessage
from veil.llm.messages import Message as ChatMessage
from veil.tui.diffs import cut, styled, unified
from veil.tui.widgets import AssistantText, ToolDetail, ToolLine

UNFOLD_LINES = 200
"""Lines of a call's output shown when it is unfolded in the transcript (its last ones; the
whole output is in the viewer: a click or /output)."""


class Transcript(VerticalScroll):
    """The transcript (see the module docstring)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tool_lines: dict[str, ToolLine] = {}
        """Each tool call's line, by call id (until ``/clear``)."""
        self.results: dict[str, ToolResultMessage] = {}
        """Each finished call's result, by call id, in the order they finished."""
        self.before: dict[str, str | None] = {}
        """A file's text just before a write call ran (for its diff), by call id."""

    def add_line(self, text: str, *classes: str) -> Static:
        """Append a plain-text block (never parsed as markup) with the given CSS classes."""
        widget = Static(text, markup=False, classes=" ".join(classes))
        self.mount(widget)
        self.scroll_end(animate=False)
        return widget

    def add_assistant(self, text: str) -> AssistantText:
        """Append the assistant's text, rendered as Markdown."""
        widget = AssistantText(text)
        self.mount(widget)
        self.scroll_end(animate=False)
        return widget

    def add_tool_call(
        self, call_id: str, name: str, arguments: dict[str, Any], status: str
    ) -> None:
        line = ToolLine(call_id, name, arguments, status)
        self.tool_lines[call_id] = line
        self.mount(line)
        self.scroll_end(animate=False)

    def clear(self) -> None:
        """Remove every block (the results stay: ``/output`` still opens them)."""
        self.remove_children()
        self.tool_lines.clear()

    def show_messages(self, messages: list[ChatMessage]) -> None:
        """Render a stored transcript (a resumed session): the same lines a live run makes."""
        results = {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}
        for message in messages:
            if isinstance(message, UserMessage):
                self.add_line(f"> {message.content}", "user")
            elif isinstance(message, AssistantMessage):
                if message.content:
                    self.add_assistant(message.content)
                for call in message.tool_calls:
                    result = results.get(call.id)
                    status = "?" if result is None else ("error" if result.is_error else "ok")
                    if result is not None:
                        self.results[call.id] = result
                        code = result.details.get("exit_code")
                        if status == "ok" and isinstance(code, int) and code:
                            status = f"exit {code}"
                        elif result.details.get("aborted"):
                            status = "aborted"
                    self.add_tool_call(call.id, call.name, call.arguments, status)
                    if result is not None:
                        self.set_summary(call.id, self.summary_of(call.name, status, result))

    def summary_of(self, name: str, status: str, result: ToolResultMessage) -> str | None:
        """What shows under a finished call's line: the diff of an edit or a write that
        succeeded, the end of the output of a call that did not (``status`` not ``ok``)."""
        if status == "ok" and name == "edit":
            diff = result.details.get("diff")
            return diff if isinstance(diff, str) and diff else None
        if status == "ok" and name == "write":
            before = self.before.pop(result.tool_call_id, None)
            content = self._tool_arguments(result.tool_call_id).get("content")
            path = str(result.details.get("path") or "")
            if before is None or not isinstance(content, str):
                return None
            return unified(before, content, path) or None
        if status not in ("ok", "running", "…", "?"):
            tail = output_tail(result.content)
            return "\n".join(tail) if tail else None
        return None

    def _tool_arguments(self, call_id: str) -> dict[str, Any]:
        line = self.tool_lines.get(call_id)
        return line.arguments if line is not None else {}

    def set_summary(self, call_id: str, summary: str | None) -> None:
        """Show ``summary`` (a diff or an output tail) under the call's line."""
        line = self.tool_lines.get(call_id)
        if line is None or summary is None:
            return
        if summary.startswith(("--- ", "@@")):
            line.summary = (summary, styled(cut(summary)))
        else:
            line.summary = (summary, Text(summary, style="red"))
        self._show_detail(line)

    def toggle_fold(self, call_id: str) -> None:
        """Unfold a finished call's output under its line, or fold it back to its summary."""
        line = self.tool_lines.get(call_id)
        if line is None or call_id not in self.results:
            return
        line.unfolded = not line.unfolded
        self._show_detail(line)

    def _show_detail(self, line: ToolLine) -> None:
        if line.unfolded:
            lines = self.results[line.call_id].content.splitlines()
            shown = lines[-UNFOLD_LINES:]
            if len(lines) > len(shown):
                shown = [f"… {len(lines) - len(shown)} earlier lines (click the line for all)"]
                shown += lines[-UNFOLD_LINES:]
            text = "\n".join(shown) or "(no output)"
            content: tuple[str, RenderableType] | None = (text, Text(text))
        else:
            content = line.summary
        if content is None:
            if line.detail is not None:
                line.detail.remove()
                line.detail = None
            return
        if line.detail is None:
            line.detail = ToolDetail()
            self.mount(line.detail, after=line)
        line.detail.set_class(line.unfolded, "output")
        line.detail.show(*content)
        if line.unfolded:
            self.scroll_to_widget(line.detail, animate=False)

    def set_evicted(self, evicted: set[str]) -> None:
        """Dim exactly the lines of the calls in ``evicted`` (their results are out of the
        model's context now)."""
        for call_id, line in self.tool_lines.items():
            line.set_evicted(call_id in evicted)


__all__ = ["UNFOLD_LINES", "Transcript"]
