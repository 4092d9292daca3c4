"""``veil -p TASK``: print mode — run the agent once, non-interactively, and exit with a status.

The same session runtime as the TUI (:mod:`veil.agent.runtime`). What the person sees, on
stderr: one progress line per tool call (a command that exited non-zero shows ``exit N`` and
the end of its output), memory events (evictions, expansions, convergence level changes), and a
summary at the end (turns, tokens in and out, evictions, files written, level). The model's
final answer goes to stdout. ``--json`` prints every event as JSON lines on stdout instead.

Approval (``--approve ask``, the default): with a terminal on stdin each write or shell command
is put to the person (y / n / a = always for this tool). With none, such calls are refused, each
refusal is a line on stderr naming ``--approve auto``, and the run exits 6.

Exit status: 0 done, 1 error (including a model that is not configured), 2 a usage mistake
found while setting up (``--window`` too small for the prompt), 3 stopped by the convergence
monitor (level 3: see the summary), 4 the scripted model ran out of turns, 5 max turns reached,
6 done but calls were refused for lack of approval (the session is recorded as ``refused``),
130 aborted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import signal
import sys
import threading
from collections.abc import Generator
from typing import Any, TextIO

from veil.agent.events import (
    AgentEnd,
    AgentEvent,
    Evicted,
    Expanded,
    LevelChanged,
    MessageEnd,
    Notice,
    ToolEnd,
)
from veil.agent.permissions import Answer, AskCallback
from veil.agent.report import RunSummary, describe_arguments, needs_tail, output_tail, tool_status
from veil.agent.runtime import AgentSession, RunOptions, Setup, SetupFailed, UsageProblem
from veil.agent.tool import touches_of

EXIT = {"done": 0, "error": 1, "stopped": 3, "script_exhausted": 4, "max_turns": 5, "aborted": 130}
REFUSED = 6
"""The run finished, but calls that needed approval were refused: nobody could be asked."""
USAGE = 2
"""A mistake in the command line (:class:`~veil.agent.runtime.UsageProblem`): nothing ran."""


def event_json(event: AgentEvent) -> str:
    return json.dumps(dataclasses.asdict(event), default=str, ensure_ascii=False)


def terminal_ask(stdin: TextIO, err: TextIO) -> AskCallback:
    """Ask on the terminal: the call, then ``[y]es / [n]o / [a]lways for this tool``. End of
    input is a no."""

    def ask(tool_name: str, arguments: dict[str, Any]) -> Answer:
        print(f"\nveil: {tool_name} wants to run:", file=err)
        for line in describe_arguments(arguments).splitlines():
            print(f"  {line}", file=err)
        print(f"allow? [y]es / [n]o / [a]lways allow {tool_name} here: ", end="", file=err)
        err.flush()
        answer = stdin.readline().strip().lower()
        if answer in ("a", "always"):
            return "always"
        return answer in ("y", "yes")

    return ask


class PrintMode:
    """Shows one run's events: progress lines on ``err``, the answer (or JSON) on ``out``."""

    def __init__(self, out: TextIO, err: TextIO, *, as_json: bool) -> None:
        self.out = out
        self.err = err
        self.as_json = as_json
        self.summary = RunSummary()
        self.setup: Setup | None = None

    def ready(self, setup: Setup, earlier: list[Any]) -> None:
        self.setup = setup
        if setup.recorded_model:
            self._say(f"continuing with the session's model {setup.provider.model}")
        if not setup.memory_on:
            self._say(
                "long-term memory is off with a scripted model (no facts are extracted); "
                "working memory and the attempt record are on"
            )

    def show(self, event: AgentEvent) -> None:
        self.summary.add(event, writes=self._writes(event))
        if self.as_json:
            print(event_json(event), file=self.out, flush=True)
            return
        if isinstance(event, ToolEnd):
            self._tool_line(event)
        elif isinstance(event, Notice):
            self._say(event.text)
        elif isinstance(event, Evicted):
            tokens = sum(i.tokens for i in event.items)
            pct = round(100 * event.live_tokens / event.budget) if event.budget else 0
            self._say(
                f"evicted {len(event.items)} item{'s' if len(event.items) != 1 else ''} "
                f"({tokens} tokens) from the prompt; window {pct}% of budget"
            )
        elif isinstance(event, Expanded):
            self._say(f"brought back {event.id} ({event.what}, {event.tokens} tokens)")
        elif isinstance(event, LevelChanged):
            why = f": {event.reasons[0]}" if event.reasons else ""
            self._say(f"convergence level {event.previous} → {event.level}{why}")
        elif isinstance(event, MessageEnd) and event.message.content and event.message.tool_calls:
            print(event.message.content, file=self.err)

    def _tool_line(self, event: ToolEnd) -> None:
        status = tool_status(event)
        print(f"· {event.call.name} {_args(event.call.arguments)} [{status}]", file=self.err)
        if status.startswith("not run"):
            print(
                f"  veil: {event.call.name} needs approval and stdin is not a terminal; "
                "pass --approve auto to allow writes and shell commands",
                file=self.err,
            )
        elif needs_tail(event):
            for line in output_tail(event.result.content):
                print(f"  │ {line}", file=self.err)

    def _writes(self, event: AgentEvent) -> str | None:
        if not isinstance(event, ToolEnd) or self.setup is None:
            return None
        tool = next((t for t in self.setup.config.tools if t.spec.name == event.call.name), None)
        return touches_of(tool, event.call.arguments).writes if tool is not None else None

    def _say(self, text: str) -> None:
        print(f"veil: {text}", file=self.err)


def run_print(
    options: RunOptions,
    task: str,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    stdin: TextIO = sys.stdin,
    *,
    as_json: bool = False,
) -> int:
    ask = terminal_ask(stdin, err) if options.approve == "ask" and _isatty(stdin) else None
    session = AgentSession(options, ask=ask)
    mode = PrintMode(out, err, as_json=as_json)
    try:
        setup = session.ensure_setup(task, on_ready=mode.ready)
    except SetupFailed as exc:  # the reason is the whole story; an option's mistake exits 2
        print(f"veil: {exc}", file=err)
        return USAGE if isinstance(exc, UsageProblem) else 1
    with ctrl_c_stops(session):
        end: AgentEnd = session.run(task, emit=mode.show)
    mode.summary.end = end
    if setup.harness.rendered is not None:
        mode.summary.window = (setup.harness.sent_tokens, setup.harness.engine.config.window_tokens)
    if not as_json:
        if end.reason == "done":
            print(end.message, file=out)
        else:
            print(f"veil: run ended ({end.reason}): {end.message}", file=err)
    print(f"veil: {mode.summary.line(setup.session_id)}", file=err)
    status = EXIT.get(end.reason, 1)
    if status == 0 and setup.policy.unattended:
        # how it ended, for `veil sessions`: done, but not everything asked for was done
        setup.sessions.end(setup.session_id, status="refused", summary=end.message)
        print(
            f"veil: {len(setup.policy.unattended)} call(s) were refused for lack of approval "
            "(exit 6); rerun with --approve auto, or from a terminal to be asked",
            file=err,
        )
        return REFUSED
    return status


@contextlib.contextmanager
def ctrl_c_stops(session: AgentSession) -> Generator[None]:
    """While a run goes, Ctrl-C asks it to stop (:meth:`AgentSession.abort`: a running
    command's process group is killed, a streaming reply stops at its next chunk, every call
    keeps a result) rather than raising KeyboardInterrupt wherever the main thread happens to
    be — inside a lock's critical section that would leave the lock held and the process
    unable to end. A second Ctrl-C interrupts at once. Only from the main thread (elsewhere
    Python delivers no signal)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pressed = 0

    def on_sigint(signum: int, frame: object) -> None:
        nonlocal pressed
        pressed += 1
        if pressed > 1:
            raise KeyboardInterrupt
        session.abort()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _args(arguments: dict[str, Any]) -> str:
    text = json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= 100 else text[:97] + "..."
