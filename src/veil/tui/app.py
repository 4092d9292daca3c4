"""The interactive ``veil``: a transcript, a status line and an input box (Textual).

Layout, top to bottom: the transcript (user messages, assistant text, one line per tool call:
name, short arguments, status), the status line (model, window fill, threshold T, convergence
level, session) and the input. Plain text starts the agent — or, while it runs, is queued for
it; ``/`` starts a command (``/help`` lists them).

Eviction is not silent: a tool call whose result is no longer in the model's context has the
``evicted`` CSS class (dimmed) and loses it when the result comes back (``veil_expand``,
``/pin``). The set is recomputed from :meth:`VeilHarness.evicted_tool_calls` after every tool
result, turn end and run end.

Threads: the agent runs in a Textual thread worker (:class:`~veil.agent.runtime.AgentSession`,
the same session runtime print mode uses);
each event is handed to the UI thread with ``call_from_thread``, which blocks the worker until
the UI has handled it, so the UI reads the harness only while the agent is paused. Commands
that read or change the harness (/context, /pin, /memory) are refused while a run is going,
rather than racing it. Permission prompts (``--approve ask``, the default here) block the
worker on a modal until the user answers (allow, deny, or always allow that tool).

A tool-call line shows the call's status as print mode does (``exit N`` for a command that
failed); clicking it, or ``/output [CALL_ID]``, opens the call's full output.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Input, Static

from veil.agent.events import (
    AgentEnd,
    AgentEvent,
    LevelChanged,
    MessageEnd,
    MessageUpdate,
    Notice,
    ToolEnd,
    ToolStart,
    TurnEnd,
)
from veil.agent.permissions import Answer
from veil.agent.report import tool_status
from veil.agent.runtime import AgentSession, RunOptions, Setup
from veil.llm.messages import AssistantMessage, ToolResultMessage, UserMessage
from veil.llm.messages import Message as ChatMessage
from veil.tui.approval import ApprovalScreen, OutputScreen
from veil.tui.render import HELP, StatusInfo, status_line, tool_line

EVICTED_MARK = "(out of context)"
"""Appended to a dimmed tool-call line: its result is no longer in the model's context."""


class OpenOutput(Message):
    """A tool-call line was clicked: show that call's output."""

    def __init__(self, call_id: str) -> None:
        super().__init__()
        self.call_id = call_id


class ToolLine(Static):
    """One tool call in the transcript. ``call_id`` ties it to the context engine's items."""

    def __init__(self, call_id: str, name: str, arguments: dict[str, Any], status: str) -> None:
        super().__init__(tool_line(name, arguments, status), markup=False, classes="tool-call")
        self.call_id = call_id
        self.tool_name = name
        self.arguments = arguments
        self.status = status

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


class VeilApp(App[int]):
    """The TUI. Construct with :class:`RunOptions`; ``model_name`` and ``window`` only fill the
    status line until the first message sets the session up."""

    TITLE = "veil"
    CSS = """
    Screen { layout: vertical; }
    #transcript { height: 1fr; padding: 0 1; }
    #transcript > Static { margin: 0 0 1 0; }
    #transcript > .tool-call { margin: 0; color: $text; }
    #transcript > .tool-call.failed { color: $error; }
    #transcript > .tool-call.evicted { color: $text-muted; text-style: dim; }
    #transcript > .user { color: $accent; text-style: bold; }
    #transcript > .notice { color: $warning; }
    #transcript > .info { color: $text-muted; }
    #transcript > .manifest { color: $text-muted; border-left: wide $panel; padding-left: 1; }
    #status { height: 1; background: $panel; color: $text; padding: 0 1; }
    #prompt { dock: bottom; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "abort", "Abort run", show=False),
        Binding("ctrl+c", "abort", "Abort run", show=False, priority=True),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
    ]

    def __init__(
        self, options: RunOptions, *, model_name: str | None = None, window: int | None = None
    ) -> None:
        super().__init__()
        self.options = options
        self.driver = AgentSession(options, ask=self.ask if options.approve == "ask" else None)
        self.model_name = model_name or options.model or "(no model)"
        self.window = window
        self.running = False
        self._tool_lines: dict[str, ToolLine] = {}
        self._streaming: Static | None = None
        self._streamed = ""
        self._last_user_line: Static | None = None
        self._results: dict[str, ToolResultMessage] = {}
        self._leaving = threading.Event()

    # ---- layout ----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield VerticalScroll(id="transcript")
        yield Static(id="status", markup=False)
        yield Input(placeholder="Message the agent, or /help", id="prompt")

    def on_mount(self) -> None:
        self.refresh_status()
        if self.options.resume or self.options.session:
            which = self.options.session or "the latest session"
            self.add_line(
                f"Continuing {which}; its transcript loads with your first message.", "info"
            )
        self.query_one("#prompt", Input).focus()

    def on_unmount(self) -> None:
        self._leaving.set()
        self.driver.abort()

    # ---- transcript ------------------------------------------------------------------

    @property
    def transcript(self) -> VerticalScroll:
        return self.query_one("#transcript", VerticalScroll)

    def add_line(self, text: str, *classes: str) -> Static:
        """Append a plain-text block (never parsed as markup) with the given CSS classes."""
        widget = Static(text, markup=False, classes=" ".join(classes))
        self.transcript.mount(widget)
        self.transcript.scroll_end(animate=False)
        return widget

    def add_tool_call(
        self, call_id: str, name: str, arguments: dict[str, Any], status: str
    ) -> None:
        line = ToolLine(call_id, name, arguments, status)
        self._tool_lines[call_id] = line
        self.transcript.mount(line)
        self.transcript.scroll_end(animate=False)

    def tool_line(self, call_id: str) -> ToolLine | None:
        """The transcript line of a tool call (None once ``/clear`` removed it)."""
        return self._tool_lines.get(call_id)

    def show_messages(self, messages: list[ChatMessage]) -> None:
        """Render a stored transcript (a resumed session): the same lines a live run makes."""
        results = {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}
        for message in messages:
            if isinstance(message, UserMessage):
                self.add_line(f"> {message.content}", "user")
            elif isinstance(message, AssistantMessage):
                if message.content:
                    self.add_line(message.content, "assistant")
                for call in message.tool_calls:
                    result = results.get(call.id)
                    status = "?" if result is None else ("error" if result.is_error else "ok")
                    if result is not None:
                        self._results[call.id] = result
                        code = result.details.get("exit_code")
                        if status == "ok" and isinstance(code, int) and code:
                            status = f"exit {code}"
                    self.add_tool_call(call.id, call.name, call.arguments, status)
        self.refresh_evicted()

    def refresh_evicted(self) -> None:
        """Dim exactly the tool calls whose results are out of the context now."""
        s = self.driver.setup
        if s is None:
            return
        evicted = s.harness.evicted_tool_calls()
        for call_id, line in self._tool_lines.items():
            line.set_evicted(call_id in evicted)

    def status_info(self) -> StatusInfo:
        s = self.driver.setup
        if s is None:
            return StatusInfo(self.model_name, window=self.window, running=self.running)
        engine = s.harness.engine
        attempts = s.harness.attempts
        level = attempts.assess().level if attempts.goal is not None else None
        return StatusInfo(
            model=s.provider.model,
            sent_tokens=s.harness.sent_tokens if s.harness.rendered is not None else None,
            window=engine.config.window_tokens,
            threshold=engine.threshold,
            level=level,
            session_id=s.session_id,
            running=self.running,
        )

    def refresh_status(self) -> None:
        self.query_one("#status", Static).update(status_line(self.status_info()))

    # ---- input -----------------------------------------------------------------------

    def on_input_submitted(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        event.input.clear()
        if not text:
            return
        if text.startswith("/"):
            self.run_command(text)
            return
        self._last_user_line = self.add_line(f"> {text}", "user")
        if self.running:
            self.driver.steer(text)
            self.add_line("(queued for the running agent)", "info")
            return
        self.start_run(text)

    def start_run(self, text: str) -> None:
        self.running = True
        self.refresh_status()
        self.run_worker(
            lambda: self._agent_thread(text),
            name="agent",
            group="agent",
            thread=True,
            exit_on_error=False,
        )

    def run_command(self, text: str) -> None:
        """``/command [argument]``; unknown commands show the help."""
        command, _, argument = text.partition(" ")
        argument = argument.strip()
        s = self.driver.setup
        if command in ("/quit", "/exit", "/q"):
            self.exit(0)
        elif command == "/clear":
            self.transcript.remove_children()
            self._tool_lines.clear()
            self._streaming, self._streamed, self._last_user_line = None, "", None
        elif command == "/model":
            model = s.provider.model if s is not None else self.model_name
            self.add_line(
                f"model: {model}. To switch, restart with `veil --model PROVIDER:MODEL` "
                "(add -c to continue this session).",
                "info",
            )
        elif command in ("/context", "/pin", "/memory") and self.running:
            self.add_line(f"{command}: the agent is running; wait, or press esc to abort.", "info")
        elif command in ("/context", "/pin", "/memory") and s is None:
            self.add_line(f"{command}: no session yet; send a message first.", "info")
        elif command == "/context" and s is not None:
            self.add_line(s.harness.engine.manifest(), "manifest")
        elif command == "/pin" and s is not None:
            self._pin(s, argument)
        elif command == "/memory" and s is not None:
            self._memory(s, argument)
        elif command == "/output":
            self.open_output(argument or next(reversed(self._results), ""))
        elif command == "/help":
            self.add_line(HELP, "info")
        else:
            self.add_line(f"unknown command {command}; /help lists the commands", "notice")

    def on_open_output(self, event: OpenOutput) -> None:
        self.open_output(event.call_id)

    def open_output(self, call_id: str) -> None:
        """Show a tool call's whole output (its full output when the tool truncated it)."""
        result = self._results.get(call_id)
        if result is None:
            known = "no tool call has finished yet" if not self._results else "try /output"
            self.add_line(f"/output: no finished tool call {call_id!r} ({known})", "info")
            return
        text = result.content
        s = self.driver.setup
        item = s.harness.engine.by_tool_call(call_id) if s is not None else None
        if item is not None and item.partial:
            text = item.content
        line = self._tool_lines.get(call_id)
        title = f"{result.name} {line.status if line else ''}".strip()
        self.push_screen(OutputScreen(title, text))

    def _pin(self, s: Setup, ref: str) -> None:
        if not ref:
            self.add_line(
                "usage: /pin ID (an item id, a veil:// pointer or a tool-call id)", "info"
            )
            return
        from veil.context import UnknownItem

        engine = s.harness.engine
        try:
            item = engine.pin(engine.resolve_pointer(ref).id)
        except (UnknownItem, ValueError) as exc:
            self.add_line(f"/pin: {exc}", "notice")
            return
        engine.flush()
        self.add_line(
            f"pinned {item.id} ({item.tool_name or item.kind} {item.target or ''})", "info"
        )
        self.refresh_evicted()
        self.refresh_status()

    def _memory(self, s: Setup, query: str) -> None:
        memory = s.harness.memory
        if memory is None:
            self.add_line("/memory: long-term memory is not enabled for this session.", "info")
            return
        recall = memory.recall(query, user_id=s.harness.scope, token_budget=600)
        heading = f"long-term memory on {query!r}:" if query else "long-term memory briefing:"
        self.add_line(f"{heading}\n{recall.text or '(nothing yet)'}", "manifest")

    # ---- actions ---------------------------------------------------------------------

    def action_abort(self) -> None:
        """Abort the running agent at its next turn boundary (a pending prompt is denied)."""
        if isinstance(self.screen, ApprovalScreen):
            self.screen.dismiss(False)
        if not self.running:
            self.notify("Nothing is running. ctrl+q or /quit leaves.", timeout=3)
            return
        self.driver.abort()
        self.add_line("aborting…", "notice")

    # ---- the agent thread and its events ---------------------------------------------------

    def _agent_thread(self, text: str) -> None:
        """Worker thread: run the agent, forwarding every event to the UI thread."""
        end = self.driver.run(
            text,
            emit=lambda event: self._to_ui(self.handle_event, event),
            on_ready=lambda setup, earlier: self._to_ui(self._session_ready, setup, earlier),
        )
        self._to_ui(self._run_finished, end)

    def _to_ui(self, callback: Any, *args: Any) -> None:
        """``call_from_thread`` that does nothing once the app is closing (the run was aborted
        by ``on_unmount``; its remaining events have nowhere to go)."""
        if self._leaving.is_set():
            return
        try:
            self.call_from_thread(callback, *args)
        except RuntimeError:  # the app stopped between the check and the call
            self._leaving.set()

    def _session_ready(self, setup: Setup, earlier: list[ChatMessage]) -> None:
        if earlier:
            # The message that started this run was shown before the session loaded; the
            # resumed transcript goes above it.
            pending = self._last_user_line
            if pending is not None:
                pending.remove()
            self.add_line(f"session {setup.session_id}: {len(earlier)} earlier messages", "info")
            self.show_messages(earlier)
            if pending is not None:
                self._last_user_line = self.add_line(str(pending.content), "user")
        self.refresh_status()

    def handle_event(self, event: AgentEvent) -> None:
        """Show one agent event (UI thread; the agent waits until this returns)."""
        if isinstance(event, MessageUpdate):
            self._streamed += event.delta
            if self._streaming is None:
                self._streaming = self.add_line(self._streamed, "assistant")
            else:
                self._streaming.update(self._streamed)
                self.transcript.scroll_end(animate=False)
        elif isinstance(event, MessageEnd):
            message = event.message
            if self._streaming is not None:
                self._streaming.update(message.content)
            elif message.content:
                self.add_line(message.content, "assistant")
            self._streaming, self._streamed = None, ""
            for call in message.tool_calls:
                self.add_tool_call(call.id, call.name, call.arguments, "…")
        elif isinstance(event, ToolStart):
            line = self._tool_lines.get(event.call.id)
            if line is not None:
                line.set_status("running")
        elif isinstance(event, ToolEnd):
            line = self._tool_lines.get(event.call.id)
            self._results[event.call.id] = event.result
            if line is not None:
                line.set_status(tool_status(event))
            self.refresh_evicted()
            self.refresh_status()
        elif isinstance(event, Notice):
            self.add_line(f"veil: {event.text}", "notice")
        elif isinstance(event, LevelChanged) and event.level > event.previous:
            why = f": {event.reasons[0]}" if event.reasons else ""
            self.add_line(f"veil: convergence level {event.level}{why}", "notice")
        elif isinstance(event, TurnEnd | AgentEnd):
            self.refresh_evicted()
            self.refresh_status()

    def _run_finished(self, end: AgentEnd) -> None:
        self.running = False
        if end.reason != "done":
            self.add_line(f"run ended ({end.reason}): {end.message}", "notice")
        self.refresh_evicted()
        self.refresh_status()
        queued = self.driver.take_queued()
        if queued:
            self.start_run("\n\n".join(queued))

    # ---- permission prompt (called on the agent's thread) -----------------------------------

    def ask(self, tool_name: str, arguments: dict[str, Any]) -> Answer:
        """Block the agent's thread on the Allow / Always / Deny modal; no answer (closing) is a
        no."""
        answered = threading.Event()
        answer: list[Answer] = []

        def show() -> None:
            def done(allowed: Answer | None) -> None:
                answer.append(allowed if allowed is not None else False)
                answered.set()

            self.push_screen(ApprovalScreen(tool_name, arguments), done)

        self._to_ui(show)
        while not answered.wait(0.05):
            if self._leaving.is_set():
                return False
        return answer[0]


def run_tui(options: RunOptions) -> int:
    """Run the interactive ``veil`` in the terminal; returns the exit status.

    The model is checked before the screen is taken over: when it is not configured (no
    ``--model``/``$VEIL_MODEL``, a missing key, a broken script) the how-to message goes to
    stderr and the status is 1, as in print mode. Otherwise 0 when the user quits.
    """
    from veil.llm import ModelNotConfigured
    from veil.llm.registry import provider_from_spec
    from veil.llm.scripted import ScriptError

    try:
        provider = provider_from_spec(options.model)
    except (ModelNotConfigured, ScriptError) as exc:
        print(f"veil: {exc}", file=sys.stderr)
        return 1
    app = VeilApp(
        options, model_name=provider.model, window=options.window or provider.context_window
    )
    app.run()
    return app.return_code or 0
