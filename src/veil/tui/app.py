"""The interactive ``veil``: a transcript, a status line and an input box (Textual).

Layout, top to bottom: the transcript (a welcome line, then user messages, the assistant's
text rendered as Markdown, one line per tool call: name, short arguments, status), the status
line (model, window fill,
tokens in/out, threshold T, convergence level, long-term memory on/off, session) and the
prompt, a multi-line editor (:mod:`veil.tui.prompt`: enter sends, ctrl+j adds a line, up/down
recall the project's history). Plain text starts the agent — or, while it runs, is queued for
it; ``/`` starts a command (``/help`` lists them). With ``-c``/``--session`` the continued
conversation is shown at once (read from the session store); the session itself is set up
with the first message, as for a new one.

Eviction is not silent: a tool call whose result is no longer in the model's context has the
``evicted`` CSS class (dimmed) and loses it when the result comes back (``veil_expand``,
``/pin``). The set is recomputed from :meth:`VeilHarness.evicted_tool_calls` after every tool
result, turn end and run end.

Threads: the agent runs in a daemon thread of its own (:class:`~veil.agent.runtime.AgentSession`,
the same session runtime print mode uses); each event is handed to the UI thread with
``call_from_thread``, which blocks the agent until the UI has handled it, so the UI reads the
harness only while the agent is paused. Commands that read or change the harness (/context,
/pin, /memory) are refused while a run is going, rather than racing it. Permission prompts
(``--approve ask``, the default here) block the agent on a modal until the user answers
(allow, deny, or always allow that tool).

Stopping: esc or ctrl+c sets the session's abort flag, which the bash tool polls — a running
command's process group is killed at once and the call gets its recorded result (``[aborted;
process group killed]``), a streaming reply stops at its next chunk, and the run ends before
the next model call. ctrl+q (or /quit) leaves at once whatever runs: it aborts the same way and
closes the app without waiting; :func:`run_tui` then gives the agent thread a moment
(:data:`QUIT_GRACE_S`) to record the session's end, and a thread still blocked in a model call
is left behind (a daemon: it dies with the process). Every message and tool result is persisted
as it happens, so the session stays resumable either way.

A tool-call line (the transcript's blocks are :mod:`veil.tui.transcript`; this module is the
app around them) shows the call's status as print mode does (``exit N`` for a command that
failed; ``aborted`` for a command the person stopped). Under it: an edit's or a write's
unified diff (:mod:`veil.tui.diffs`; the approval modal shows the same diff before the call
runs), or the last lines of the output of a call that did not end ``ok``, as print mode shows
them. ctrl+o unfolds the latest call's output under its line (and folds it back); enter on a
focused line (tab to it) does the same for that call; clicking it, or ``/output [CALL_ID]``,
opens the call's full output in a viewer.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from veil.agent.events import (
    AgentEnd,
    AgentEvent,
    LevelChanged,
    MessageEnd,
    MessageUpdate,
    Notice,
    RequestSent,
    ToolEnd,
    ToolStart,
    TurnEnd,
)
from veil.agent.permissions import Answer
from veil.agent.report import needs_tail, tool_status
from veil.agent.runtime import AgentSession, RunOptions, Setup, long_term_memory_on
from veil.llm.messages import Message as ChatMessage
from veil.llm.messages import ToolResultMessage
from veil.tui.approval import ApprovalScreen, OutputScreen
from veil.tui.diffs import proposed_diff, read_before
from veil.tui.history import History
from veil.tui.preview import Preview, preview_session
from veil.tui.prompt import PromptArea
from veil.tui.render import (
    HELP,
    StatusInfo,
    goodbye_line,
    status_line,
    welcome_line,
    window_words,
)
from veil.tui.transcript import UNFOLD_LINES, Transcript
from veil.tui.widgets import AssistantText, OpenOutput, ToggleFold, ToolLine

__all__ = ["QUIT_GRACE_S", "UNFOLD_LINES", "VeilApp", "run_tui"]

QUIT_GRACE_S = 3.0
"""After the app closed, how long :func:`run_tui` waits for an aborted run to finish recording
the session (a killed command ends well within it; a model call may not, and is left)."""


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
    #transcript > .tool-call:focus { background: $boost; text-style: bold; }
    #transcript > .tool-detail { margin: 0 0 0 2; padding-left: 1; border-left: wide $panel; }
    #transcript > .tool-detail.output { color: $text-muted; }
    #transcript > .user { color: $accent; text-style: bold; }
    #transcript > .notice { color: $warning; }
    #transcript > .info { color: $text-muted; }
    #transcript > .manifest { color: $text-muted; border-left: wide $panel; padding-left: 1; }
    #status { height: auto; background: $panel; color: $text; padding: 0 1; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "abort", "Abort run", show=False),
        Binding("ctrl+c", "abort", "Abort run", show=False, priority=True),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
        Binding("ctrl+o", "toggle_last", "Fold/unfold the last output", show=False, priority=True),
    ]
    AUTO_FOCUS = "#prompt"

    def __init__(
        self, options: RunOptions, *, model_name: str | None = None, window: int | None = None
    ) -> None:
        super().__init__()
        self.options = options
        self.driver = AgentSession(options, ask=self.ask if options.approve == "ask" else None)
        self.model_name = model_name or options.model or "(no model)"
        self.window = window
        self.running = False
        self._streaming: AssistantText | None = None
        self._streamed = ""
        self._last_user_line: Static | None = None
        self._leaving = threading.Event()
        self._agent: threading.Thread | None = None
        self.tokens_in = 0
        self.tokens_out = 0
        self.preview: Preview | None = None
        self.history = History.for_project(options.cwd)
        self.root = self.history.root or options.cwd.resolve()
        """The project's root: where the files a write or an edit changes are read from."""

    # ---- layout ----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Transcript(id="transcript")
        yield Static(id="status", markup=False)
        yield PromptArea(
            self.history, placeholder="Message the agent, or /help (enter sends)", id="prompt"
        )

    def on_mount(self) -> None:
        root = self.history.root or self.options.cwd
        home = Path.home()
        project = f"~/{root.relative_to(home)}" if root.is_relative_to(home) else str(root)
        self.add_line(welcome_line(project, self.model_name), "info")
        if self.options.resume or self.options.session:
            self.show_preview(preview_session(self.options))
        self.refresh_status()
        self.query_one("#prompt", PromptArea).focus()

    def show_preview(self, preview: Preview) -> None:
        """Show the conversation ``-c``/``--session`` continues, before any message."""
        self.preview = preview
        if preview.problem is not None:
            self.add_line(f"veil: {preview.problem} (see `veil sessions`)", "notice")
            return
        verb = "Forking" if self.options.fork else "Continuing"
        self.add_line(
            f"{verb} session {preview.session_id}: {len(preview.messages)} earlier messages",
            "info",
        )
        self.show_messages(list(preview.messages))

    def on_unmount(self) -> None:
        self._leaving.set()
        self.driver.abort()

    @property
    def session_id(self) -> str | None:
        """The session this app is on: the one set up, else the one it will continue."""
        if self.driver.setup is not None:
            return self.driver.setup.session_id
        if self.preview is not None and not self.options.fork:
            return self.preview.session_id
        return None

    def wait_for_agent(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the agent thread to end; whether it has."""
        agent = self._agent
        if agent is not None:
            agent.join(timeout)
        return agent is None or not agent.is_alive()

    # ---- transcript ------------------------------------------------------------------

    @property
    def transcript(self) -> Transcript:
        return self.query_one("#transcript", Transcript)

    @property
    def _results(self) -> dict[str, ToolResultMessage]:
        """Each finished call's result, by call id (the transcript keeps them)."""
        return self.transcript.results

    def add_line(self, text: str, *classes: str) -> Static:
        """Append a plain-text block (never parsed as markup) with the given CSS classes."""
        return self.transcript.add_line(text, *classes)

    def tool_line(self, call_id: str) -> ToolLine | None:
        """The transcript line of a tool call (None once ``/clear`` removed it)."""
        return self.transcript.tool_lines.get(call_id)

    def show_messages(self, messages: list[ChatMessage]) -> None:
        """Render a stored transcript (a resumed session): the same lines a live run makes."""
        self.transcript.show_messages(messages)
        self.refresh_evicted()

    def toggle_fold(self, call_id: str) -> None:
        """Unfold a finished call's output under its line, or fold it back to its summary."""
        self.transcript.toggle_fold(call_id)

    def on_toggle_fold(self, event: ToggleFold) -> None:
        self.toggle_fold(event.call_id)

    def action_toggle_last(self) -> None:
        """ctrl+o: unfold (or fold) the output of the latest finished call."""
        if not self._results:
            self.notify("No tool call has finished yet.", timeout=3)
            return
        self.toggle_fold(next(reversed(self._results)))

    def refresh_evicted(self) -> None:
        """Dim exactly the tool calls whose results are out of the context now."""
        s = self.driver.setup
        if s is None:
            return
        self.transcript.set_evicted(s.harness.evicted_tool_calls())

    def status_info(self) -> StatusInfo:
        s = self.driver.setup
        if s is None:
            return StatusInfo(
                self.model_name,
                window=self.window,
                running=self.running,
                session_id=self.session_id,
                memory_on=long_term_memory_on(self.model_name),
            )
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
            tokens_in=self.tokens_in,
            tokens_out=self.tokens_out,
            memory_on=s.memory_on,
        )

    def refresh_status(self) -> None:
        self.query_one("#status", Static).update(status_line(self.status_info()))

    # ---- input -----------------------------------------------------------------------

    def on_prompt_area_submitted(self, event: PromptArea.Submitted) -> None:
        text = event.value.strip()
        event.prompt.clear()
        if not text:
            return
        self.history.add(text)
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
        # A daemon thread, not a Textual worker: leaving must never wait for a model call.
        self._agent = threading.Thread(
            target=self._agent_thread, args=(text,), name="veil-agent", daemon=True
        )
        self._agent.start()

    def run_command(self, text: str) -> None:
        """``/command [argument]``; unknown commands show the help."""
        command, _, argument = text.partition(" ")
        argument = argument.strip()
        s = self.driver.setup
        if command in ("/quit", "/exit", "/q"):
            self.leave()
        elif command == "/clear":
            self.transcript.clear()
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
            # the window figure of the status line, then the manifest as the model gets it
            self.add_line(window_words(self.status_info()), "info")
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
        line = self.tool_line(call_id)
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
        """Stop the running agent: a running command is killed at once (its call gets its
        result), a pending prompt is denied, and the run ends before the next model call."""
        if isinstance(self.screen, ApprovalScreen):
            self.screen.dismiss(False)
        if not self.running:
            self.notify("Nothing is running. ctrl+q or /quit leaves.", timeout=3)
            return
        self.driver.abort()
        self.add_line("stopping…", "notice")

    async def action_quit(self) -> None:
        self.leave()

    def leave(self) -> None:
        """Leave at once, whatever runs: the run is aborted (a running command killed) and the
        app closes without waiting for it (see :data:`QUIT_GRACE_S`)."""
        self._leaving.set()
        self.driver.abort()
        self.exit(0)

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
        if earlier and self.preview is None:
            # The message that started this run was shown before the session loaded; the
            # resumed transcript goes above it.
            pending = self._last_user_line
            if pending is not None:
                pending.remove()
            self.add_line(f"session {setup.session_id}: {len(earlier)} earlier messages", "info")
            self.show_messages(earlier)
            if pending is not None:
                self._last_user_line = self.add_line(str(pending.content), "user")
        elif earlier:
            # Shown already (the preview); a call the stored session left without a result
            # got its recorded one when the session was set up.
            for message in earlier:
                if (
                    isinstance(message, ToolResultMessage)
                    and message.tool_call_id not in self._results
                ):
                    self._results[message.tool_call_id] = message
                    line = self.tool_line(message.tool_call_id)
                    if line is not None and line.status == "?":
                        line.set_status("error" if message.is_error else "ok")
        self.refresh_status()

    def handle_event(self, event: AgentEvent) -> None:
        """Show one agent event (UI thread; the agent waits until this returns)."""
        if isinstance(event, RequestSent):
            self.tokens_in += event.response.usage.input_tokens
            self.tokens_out += event.response.usage.output_tokens
            self.refresh_status()
        elif isinstance(event, MessageUpdate):
            self._streamed += event.delta
            if self._streaming is None:
                self._streaming = self.transcript.add_assistant(self._streamed)
            else:
                self._streaming.set_source(self._streamed)
                self.transcript.scroll_end(animate=False)
        elif isinstance(event, MessageEnd):
            message = event.message
            if self._streaming is not None:
                self._streaming.set_source(message.content)
            elif message.content:
                self.transcript.add_assistant(message.content)
            self._streaming, self._streamed = None, ""
            for call in message.tool_calls:
                self.transcript.add_tool_call(call.id, call.name, call.arguments, "…")
        elif isinstance(event, ToolStart):
            line = self.tool_line(event.call.id)
            if line is not None:
                line.set_status("running")
            if event.call.name == "write":  # the agent waits: the file is as the write finds it
                self.transcript.before[event.call.id] = read_before(
                    self.root, event.call.arguments.get("path")
                )
        elif isinstance(event, ToolEnd):
            line = self.tool_line(event.call.id)
            self._results[event.call.id] = event.result
            status = "aborted" if event.result.details.get("aborted") else tool_status(event)
            if line is not None:
                line.set_status(status)
            tail = needs_tail(event)
            summary = self.transcript.summary_of(
                event.call.name, "failed" if tail else status, event.result
            )
            self.transcript.set_summary(event.call.id, summary)
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
        diff = proposed_diff(self.root, tool_name, arguments)

        def show() -> None:
            def done(allowed: Answer | None) -> None:
                answer.append(allowed if allowed is not None else False)
                answered.set()

            self.push_screen(ApprovalScreen(tool_name, arguments, diff=diff), done)

        self._to_ui(show)
        while not answered.wait(0.05):
            if self._leaving.is_set():
                return False
        return answer[0]


def run_tui(options: RunOptions) -> int:
    """Run the interactive ``veil`` in the terminal; returns the exit status.

    The model is checked before the screen is taken over: when it is not configured (no
    ``--model``/``$VEIL_MODEL``, a missing key, a broken script) the how-to message goes to
    stderr and the status is 1, as in print mode. ``-c``/``--session`` without a model
    continues with the model the session recorded (:func:`~veil.agent.runtime.model_spec`).
    Otherwise 0 when the user quits.
    """
    from veil.agent.runtime import continued_session, model_spec
    from veil.llm import ModelNotConfigured
    from veil.llm.registry import provider_from_spec
    from veil.llm.scripted import ScriptError

    try:
        spec, _ = model_spec(options, continued_session(options))
        provider = provider_from_spec(spec)
    except (ModelNotConfigured, ScriptError) as exc:
        print(f"veil: {exc}", file=sys.stderr)
        return 1
    app = VeilApp(
        options, model_name=provider.model, window=options.window or provider.context_window
    )
    app.run()
    app.wait_for_agent(QUIT_GRACE_S)
    if app.session_id is not None:
        print(goodbye_line(app.session_id), file=sys.stderr)
    return app.return_code or 0
