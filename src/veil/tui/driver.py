"""The agent side of the TUI: one session, set up on the first message, run turn after turn.

:class:`AgentDriver` is what print mode's :func:`veil.cli.run.run_print` does, split so a UI can
drive it: :func:`veil.cli.run.setup` builds the harness, session and loop config;
:meth:`AgentDriver.run` appends the user's message, iterates :func:`veil.agent.loop.run_agent`
and persists the transcript to the session after every message and tool result (the same
``Sessions.append`` cadence as print mode), then ends the run in the session and flushes the
context engine.

Threading contract: :meth:`run` is called on one worker thread at a time and calls ``emit``
there for every event (the app forwards it to the UI thread and blocks until it is handled, so
the harness is quiescent while the UI reads it). :meth:`steer` and :meth:`abort` may be called
from any thread. No Textual here, so the driver can be tested on its own.
"""

from __future__ import annotations

import dataclasses
import queue
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from veil.agent.events import AgentEnd, AgentEvent, MessageEnd, ToolEnd
from veil.agent.loop import run_agent
from veil.agent.permissions import AskCallback
from veil.cli.run import RunOptions, Setup, setup
from veil.llm.messages import Message, UserMessage


@dataclass(frozen=True)
class TuiOptions:
    """The command-line options of the interactive ``veil`` (a subset of :class:`RunOptions`)."""

    model: str | None
    approve: str = "ask"
    window: int | None = None
    resume: bool = False
    session: str | None = None
    max_turns: int = 50
    cwd: Path = dataclasses.field(default_factory=Path.cwd)

    def run_options(self, task: str) -> RunOptions:
        return RunOptions(
            task=task,
            model=self.model,
            approve=self.approve,
            window=self.window,
            resume=self.resume,
            session=self.session,
            max_turns=self.max_turns,
            cwd=self.cwd,
        )


Emit = Callable[[AgentEvent], None]
OnReady = Callable[[Setup, list[Message]], None]


class SetupFailed(Exception):
    """``setup`` refused (an unknown ``--session``, a broken store…); the message says why."""


class AgentDriver:
    """One interactive session. Setup is lazy: the first message is the session's task (its
    title and the convergence goal), as ``veil -p TASK`` would make it."""

    def __init__(self, options: TuiOptions, *, ask: AskCallback | None = None) -> None:
        self.options = options
        self.ask = ask
        self.setup: Setup | None = None
        self._persisted = 0
        self._steering: queue.SimpleQueue[str] = queue.SimpleQueue()

    # ---- any thread --------------------------------------------------------------------

    def steer(self, text: str) -> None:
        """Queue a user message for the running agent; it is added before the next model call
        (or, if the agent was about to stop, as a follow-up that keeps it working)."""
        self._steering.put(text)

    def take_queued(self) -> list[str]:
        """Messages queued but not picked up by a run (it ended first); removes them."""
        out: list[str] = []
        while not self._steering.empty():
            out.append(self._steering.get_nowait())
        return out

    def abort(self) -> None:
        """Stop the current run at the next turn boundary (the loop checks before each turn)."""
        if self.setup is not None:
            self.setup.config.abort.set()

    # ---- worker thread -------------------------------------------------------------------

    def ensure_setup(self, task: str, on_ready: OnReady | None = None) -> Setup:
        """Set the session up on first use; ``on_ready(setup, earlier_messages)`` then sees the
        resumed transcript (empty for a new session). Raises :class:`SetupFailed`."""
        if self.setup is not None:
            return self.setup
        try:
            s = setup(self.options.run_options(task), ask=self.ask)
        except SystemExit as exc:  # setup's way of saying "no such session"
            raise SetupFailed(str(exc.code)) from None
        s.config.steering = self._drain
        s.config.follow_up = self._drain
        self.setup = s
        # Resumed messages are already in the session: persist only what comes after them.
        self._persisted = len(s.messages)
        if on_ready is not None:
            on_ready(s, list(s.messages))
        return s

    def run(self, text: str, emit: Emit, on_ready: OnReady | None = None) -> AgentEnd:
        """Run the agent on ``text`` until it stops; returns how it ended.

        Never raises for a failure inside the run: a crash of a hook or tool plumbing ends the
        run with reason ``error`` (the UI must survive it), and the transcript so far is
        persisted either way.
        """
        try:
            s = self.ensure_setup(text, on_ready)
        except SetupFailed as exc:
            return AgentEnd("error", str(exc), 0)
        harness = s.harness
        s.config.abort.clear()
        s.messages.append(UserMessage(text))
        end: AgentEnd | None = None
        try:
            if harness.memory is not None and harness.memory.complete is not None:
                harness.memory.remember(
                    text, user_id=harness.scope, author="user", session_id=s.session_id
                )
            for event in run_agent_events(s):
                if isinstance(event, ToolEnd | MessageEnd):
                    self._persist(s)
                if isinstance(event, AgentEnd):
                    end = event
                emit(event)
        except Exception as exc:  # the UI keeps going; the user sees what broke
            end = AgentEnd("error", f"{type(exc).__name__}: {exc}", 0)
        self._persist(s)
        if end is None:
            end = AgentEnd("error", "the run ended without a result", 0)
        s.sessions.end(s.session_id, status=end.reason, summary=end.message)
        harness.engine.flush()
        return end

    def _persist(self, s: Setup) -> None:
        s.sessions.append(s.session_id, self._persisted, s.messages[self._persisted :])
        self._persisted = len(s.messages)

    def _drain(self) -> list[UserMessage]:
        return [UserMessage(t) for t in self.take_queued()]


def run_agent_events(s: Setup) -> Iterator[AgentEvent]:
    """:func:`run_agent` over the setup's config and transcript (the one call print mode makes)."""
    return run_agent(s.config, s.messages, session_id=s.session_id)
