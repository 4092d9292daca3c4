"""One place that assembles a run of the coding agent; print mode and the TUI both use it.

:func:`assemble` opens the project's stores, the model, long-term memory and the harness, and
builds the loop's config. :class:`AgentSession` is one interactive session over it: set up on
the first message (which becomes the session's title and the convergence goal), then
:meth:`AgentSession.run` appends a user message, runs the loop, persists the transcript after
every message and tool result, writes the ``--trace`` and ends the session on the tape.

Layout of a project: ``.veil/`` at the repository root holds ``context.db`` (sessions, working
memory, attempts) and ``memory.db`` (long-term memory). Both contain file contents and command
output, so ``.veil/`` ignores itself (a ``.gitignore`` containing ``*`` is written on first
use) and is never committed by accident.

Threading contract: :meth:`AgentSession.run` is called on one thread at a time and calls
``emit`` there for every event; :meth:`AgentSession.steer` and :meth:`AgentSession.abort` may
be called from any thread.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TextIO

from veil.agent.events import (
    AgentEnd,
    AgentEvent,
    MessageEnd,
    MessageUpdate,
    RequestSent,
    ToolEnd,
)
from veil.agent.harness import VeilHarness
from veil.agent.instructions import project_instructions
from veil.agent.loop import INTERRUPTED, AgentLoopConfig, run_agent
from veil.agent.memory_tools import EXPAND_TOOL
from veil.agent.permissions import Approval, AskCallback, PermissionPolicy
from veil.agent.project import project_root, project_scope, veil_dir
from veil.agent.sessions import SessionInfo, Sessions
from veil.agent.tool import Tool, ToolContext, ToolResult, Touches, touches_of
from veil.agent.tools import coding_tools
from veil.agent.transcript import repair, trace_record
from veil.clock import format_time
from veil.context import ContextConfig
from veil.context.budget import reply_reserve
from veil.llm.messages import Done, Message, Request, StreamEvent, ToolSpec, UserMessage
from veil.llm.provider import Provider
from veil.memory import MemoryConfig
from veil.tape import new_id

SYSTEM_PROMPT = f"""You are Veil, a coding agent working in the user's project directory.
Use the tools to read, search, edit and run code; make the smallest change that solves the task
and check it (run the tests). Reply without tool calls when you are done, with a short summary.

Your context is managed by Veil's memory: tool results you have not used for a while may be
replaced by a one-line stub with a pointer such as veil://warm/ci_…; call {EXPAND_TOOL} with the
pointer to get the content back exactly. The <veil-manifest> note at the end of the
conversation lists what is loaded now.
veil_pin keeps something in the context; veil_recall searches long-term memory and earlier
context; veil_attempts shows what was already tried for this task. If a contradiction is
listed, settle it with veil_resolve. Never repeat an edit that already failed."""

SMALL_SYSTEM_PROMPT = f"""You are a coding agent in the user's project. Use the tools: read and
grep to look, edit or write to change files, bash to run commands and tests. Make the smallest
change that fixes the task, run the tests, then answer briefly without calling a tool.
An old tool result may be replaced by a stub with a veil:// pointer: {EXPAND_TOOL} brings it \
back."""

Profile = Literal["default", "small"]
PROFILES: tuple[Profile, ...] = ("default", "small")


@dataclass(frozen=True)
class ProfileSettings:
    """What a profile changes. ``small`` is for local models of a few billion parameters:
    fewer tools with one-sentence descriptions (a shorter prompt to process on a CPU, fewer
    ways to go wrong), a long model timeout, and no extraction call on the task text."""

    system_prompt: str
    tools: frozenset[str] | None
    """The tools offered (None: all)."""
    brief: bool
    """Cut each tool's description to its first sentence."""
    timeout_s: float
    extract_task: bool


PROFILE_SETTINGS: dict[Profile, ProfileSettings] = {
    "default": ProfileSettings(SYSTEM_PROMPT, None, False, 120.0, True),
    "small": ProfileSettings(
        SMALL_SYSTEM_PROMPT,
        frozenset({"read", "write", "edit", "bash", "grep", "ls", EXPAND_TOOL, "veil_recall"}),
        True,
        600.0,
        False,
    ),
}

_REMEMBERABLE = re.compile(
    r"\b(i|i'm|i've|my|mine|we|we're|our|ours|prefer\w*|always|never|from now on|remember|"
    r"note that|don't|do not|avoid|use)\b",
    re.IGNORECASE,
)


def worth_remembering(task: str) -> bool:
    """Whether a task's text may hold something for long-term memory (a preference, a rule,
    a fact about the person or the project) rather than only an instruction: extracting from
    "make the failing test pass" costs a model call and stores nothing true."""
    return bool(_REMEMBERABLE.search(task))


def long_term_memory_on(model: str) -> bool:
    """Whether a session on ``model`` extracts facts into long-term memory: it needs a real
    model (a scripted one has no extraction model)."""
    return not model.startswith("scripted")


MIN_ITEM_TOKENS = 1024
"""``--window`` must leave at least this many tokens for the conversation itself, after the
system prompt, the tool schemas and the reply's reserve."""


class SetupFailed(Exception):
    """A run could not be set up (no model, an unknown session, a window too small…); the
    message says what was wrong and how to fix it, in one line."""


class UsageProblem(SetupFailed):
    """A setup failure that is a mistake in the run's options (``--window`` too small for the
    prompt, ``--fork`` with nothing to branch from): ``veil -p`` exits 2 with its message, as
    for every other usage error."""


@dataclass(frozen=True)
class RunOptions:
    """How to run: the command line's options (the task is given per run)."""

    model: str | None
    approve: Approval = "ask"
    window: int | None = None
    resume: bool = False
    session: str | None = None
    fork: bool = False
    """With ``resume``/``session``: branch a new session from that one (its transcript copied,
    its id recorded as the parent) instead of continuing it."""
    max_turns: int = 50
    trace: Path | None = None
    cwd: Path = dataclasses.field(default_factory=Path.cwd)
    profile: Profile | None = None
    """None: ``$VEIL_PROFILE``, else ``default``."""
    context: ContextConfig | None = None
    """Working-memory settings instead of the ones derived from the window (benchmarks)."""

    def settings(self) -> ProfileSettings:
        name = self.profile or os.environ.get("VEIL_PROFILE") or "default"
        if name not in PROFILE_SETTINGS:
            raise SetupFailed(f"unknown profile {name!r} (known: {', '.join(PROFILES)})")
        return PROFILE_SETTINGS[name]


@dataclass
class Setup:
    harness: VeilHarness
    sessions: Sessions
    session_id: str
    messages: list[Message]
    config: AgentLoopConfig
    provider: Provider
    policy: PermissionPolicy
    memory_on: bool
    """Whether long-term memory extracts facts (it needs a real model: off when scripted)."""
    profile: ProfileSettings = dataclasses.field(
        default_factory=lambda: PROFILE_SETTINGS["default"]
    )
    recorded_model: bool = False
    """The model is the one the continued session recorded (neither ``--model`` nor
    ``$VEIL_MODEL`` named one)."""


def model_spec(options: RunOptions, previous: SessionInfo | None) -> tuple[str | None, bool]:
    """The model spec a run uses and whether it is the continued session's: ``--model``, else
    ``$VEIL_MODEL``, else the spec ``previous`` (the session continued) recorded. A session
    recorded with a bare model name (before sessions kept the spec) is not guessed at: None,
    and the run asks for a model as it does without a session."""
    spec = options.model or os.environ.get("VEIL_MODEL") or None
    if spec is None and previous is not None and ":" in previous.model:
        return previous.model, True
    return spec, False


def continued_session(options: RunOptions) -> SessionInfo | None:
    """The session ``-c``/``--session`` names, read without creating anything (None: neither
    option, no store yet, or no such session) — for a caller that needs :func:`model_spec`
    before :func:`assemble`."""
    from veil.tape import open_store

    if not (options.resume or options.session):
        return None
    root = project_root(options.cwd)
    db = root / ".veil" / "context.db"
    if not db.exists():
        return None
    store = open_store(f"sqlite:///{db}")
    try:
        sessions = Sessions(store, scope=project_scope(root))
        return sessions.get(options.session) if options.session else sessions.latest()
    finally:
        store.close()


def assemble(options: RunOptions, task: str, *, ask: AskCallback | None = None) -> Setup:
    """Everything a run needs. Raises :class:`SetupFailed` with a one-line reason."""
    from veil.embed import default_embedder
    from veil.llm import ModelNotConfigured
    from veil.llm.registry import extraction_complete_from_provider, provider_from_spec
    from veil.llm.scripted import ScriptError
    from veil.memory import Memory
    from veil.tape import open_store

    if options.fork and not (options.resume or options.session):
        raise UsageProblem("--fork needs -c/--continue or --session ID to branch from")
    profile = options.settings()
    root = project_root(options.cwd)
    scope = project_scope(root)
    home = veil_dir(root)
    embedder = default_embedder()
    store = open_store(f"sqlite:///{home / 'context.db'}?synchronous=normal", embedder=embedder)
    sessions = Sessions(store, scope=scope)
    messages: list[Message] = []
    previous = None
    if options.session:
        previous = sessions.get(options.session)
        if previous is None:
            raise SetupFailed(f"no session {options.session} in this project (see `veil sessions`)")
    elif options.resume:
        previous = sessions.latest()
        if previous is None:
            raise SetupFailed("-c: there is no earlier session in this project to continue")
    spec, recorded = model_spec(options, previous)
    try:
        provider = provider_from_spec(spec, timeout=profile.timeout_s)
    except (ModelNotConfigured, ScriptError) as exc:
        store.close()
        raise SetupFailed(str(exc)) from None
    window = options.window or provider.context_window
    resumed = previous is not None and not options.fork
    if previous is not None:
        messages = sessions.messages(previous.id)
        stored = len(messages)
        # A session stopped between a call and its result (Ctrl-C, a crash): each pending
        # call gets its recorded result, so every later request is a valid conversation.
        if repair(messages, INTERRUPTED) and resumed:
            sessions.append(previous.id, stored, messages[stored:])
    session_id = previous.id if previous is not None and resumed else new_id("s")
    memory_on = long_term_memory_on(provider.model)
    memory = Memory(
        home / "memory.db",
        embedder=embedder,
        complete=extraction_complete_from_provider(provider) if memory_on else None,
        config=MemoryConfig(llm_timeout_s=profile.timeout_s),
    )
    reserve = reply_reserve(window)
    harness = VeilHarness(
        store=store,
        scope=scope,
        session_id=session_id,
        project_root=root,
        memory=memory,
        embedder=embedder,
        config=options.context or ContextConfig(window_tokens=window, reserve_tokens=reserve),
    )
    instructions = project_instructions(root)
    system = profile.system_prompt + (
        f"\n\nProject instructions:\n{instructions}" if instructions else ""
    )
    tools: list[Tool] = [
        brief(t) if profile.brief else t
        for t in (*coding_tools(), *harness.tools())
        if profile.tools is None or t.spec.name in profile.tools
    ]
    harness.use_tools(tools, system_prompt=system)
    frame = harness.tokens.fixed  # the system prompt and the tool schemas
    needed = frame + reserve + MIN_ITEM_TOKENS
    while needed < frame + reply_reserve(needed) + MIN_ITEM_TOKENS:  # a larger window, a
        needed = frame + reply_reserve(needed) + MIN_ITEM_TOKENS  # larger reserve: the least
    if window < needed:
        raise UsageProblem(
            f"--window {window} is too small: the system prompt and tool schemas take {frame} "
            f"tokens and the reply's reserve {reserve}; use at least {needed}"
        )
    if previous is None:
        sessions.start(title=task, model=spec or provider.model, session_id=session_id)
    elif not resumed:
        sessions.start(
            title=task,
            model=spec or provider.model,
            parent_id=previous.id,
            copy_messages=messages,
            session_id=session_id,
        )
    harness.start(task, messages)
    policy = PermissionPolicy(mode=options.approve, ask=ask)
    config = AgentLoopConfig(
        provider=provider,
        tools=tools,
        system_prompt=system,
        tool_context=ToolContext(cwd=root),
        permission=policy.decide,
        max_turns=options.max_turns,
        **harness.hooks(),
    )
    return Setup(
        harness,
        sessions,
        session_id,
        messages,
        config,
        provider,
        policy,
        memory_on,
        profile,
        recorded_model=recorded,
    )


@dataclass(frozen=True)
class Brief:
    """A tool offered with the first sentence of its description only (the small profile)."""

    tool: Tool

    @property
    def spec(self) -> ToolSpec:
        spec = self.tool.spec
        first = re.split(r"(?<=[.!?])\s", spec.description, maxsplit=1)[0]
        return replace(spec, description=first)

    @property
    def mutates(self) -> bool:
        return self.tool.mutates

    @property
    def parallel_safe(self) -> bool:
        return self.tool.parallel_safe

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return self.tool.run(arguments, ctx)

    def touches(self, arguments: dict[str, Any]) -> Touches:
        return touches_of(self.tool, arguments)


def brief(tool: Tool) -> Tool:
    return Brief(tool)


Emit = Callable[[AgentEvent], None]
OnReady = Callable[[Setup, list[Message]], None]


class AgentSession:
    """One session of the coding agent. Setup is lazy: the first message is the session's task
    (its title and the convergence goal), as ``veil -p TASK`` would make it."""

    def __init__(self, options: RunOptions, *, ask: AskCallback | None = None) -> None:
        self.options = options
        self.ask = ask
        self.setup: Setup | None = None
        self._persisted = 0
        self._steering: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._abort = threading.Event()
        """An abort asked for before the run's config exists (during setup); cleared when a
        run ends."""

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
        """Stop the current run now: the flag is the loop's and the tools' (the bash tool kills
        a running command's process group and returns its result at once), a streaming reply
        stops at its next chunk (:meth:`run`), and the loop ends the run before the next model
        call. Every tool call keeps a result, so the session stays resumable. Asked while the
        session is being set up, the run ends before its first model call."""
        self._abort.set()
        if self.setup is not None:
            self.setup.config.abort.set()

    # ---- the running thread --------------------------------------------------------------

    def ensure_setup(self, task: str, on_ready: OnReady | None = None) -> Setup:
        """Set the session up on first use; ``on_ready(setup, earlier_messages)`` then sees the
        resumed transcript (empty for a new session). Raises :class:`SetupFailed`."""
        if self.setup is not None:
            return self.setup
        s = assemble(self.options, task, ask=self.ask)
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

        Never raises for a failure inside the run: a crash of the plumbing ends the run with
        reason ``error`` (the UI must survive it), and the transcript so far is persisted
        either way. A setup failure ends it with ``error`` and the reason."""
        try:
            s = self.ensure_setup(text, on_ready)
        except SetupFailed as exc:
            self._abort.clear()
            return AgentEnd("error", str(exc), 0)
        harness = s.harness
        s.config.abort.clear()
        if self._abort.is_set():  # asked during setup (abort() sets this one first)
            s.config.abort.set()
        s.messages.append(UserMessage(text))
        end: AgentEnd | None = None
        trace = Trace.open(self.options.trace, s) if self.options.trace else None
        try:
            if (
                s.memory_on
                and harness.memory is not None
                and s.profile.extract_task
                and worth_remembering(text)
            ):
                harness.memory.remember(
                    text, user_id=harness.scope, author="user", session_id=s.session_id
                )
            events = self.events(s)
            try:
                for event in events:
                    if isinstance(event, RequestSent) and trace is not None:
                        trace.write(event, harness)
                    if isinstance(event, ToolEnd | MessageEnd):
                        self._persist(s)
                    if isinstance(event, AgentEnd):
                        end = event
                    emit(event)
                    if isinstance(event, MessageUpdate) and s.config.abort.is_set():
                        # Aborted while the reply streams: drop it (it is not in the
                        # transcript yet) rather than wait for the rest.
                        end = AgentEnd("aborted", "aborted by the user", event.turn)
                        emit(end)
                        break
            finally:
                events.close()  # a pending call gets its recorded result (the loop's finally)
        except KeyboardInterrupt:
            s.config.abort.set()
            end = AgentEnd("aborted", "interrupted", 0)
        except Exception as exc:  # the UI keeps going; the user sees what broke
            end = AgentEnd("error", f"{type(exc).__name__}: {exc}", 0)
        finally:
            if trace is not None:
                trace.close()
        self._persist(s)
        self._abort.clear()
        if end is None:
            end = AgentEnd("error", "the run ended without a result", 0)
        s.sessions.end(s.session_id, status=end.reason, summary=end.message)
        harness.engine.close()
        return end

    def events(self, s: Setup) -> Generator[AgentEvent, None, None]:
        """:func:`run_agent` over the setup's config and transcript."""
        return run_agent(s.config, s.messages, session_id=s.session_id)

    def _persist(self, s: Setup) -> None:
        s.sessions.append(s.session_id, self._persisted, s.messages[self._persisted :])
        self._persisted = len(s.messages)

    def _drain(self) -> list[UserMessage]:
        return [UserMessage(t) for t in self.take_queued()]


class Trace:
    """``--trace``: one JSON line per provider request, appended to the file: ``at`` (when the
    request went out, ISO-8601 UTC), ``session``, ``turn``, ``latency_ms`` (from the request to
    the complete response, the reply's streaming included) and ``first_chunk_ms`` (to its first
    streamed event; null when the provider sent none before the end), then the request as sent,
    the response and Veil's figures (``veil``). Secrets are replaced as everywhere Veil writes
    (a trace is a file people attach to bug reports).

    The timing comes from wrapping the run's provider for the life of the trace: :meth:`open`
    installs the wrapper, :meth:`close` puts the provider back."""

    def __init__(self, out: TextIO, setup: Setup) -> None:
        self.out = out
        self.setup = setup
        self.provider = setup.config.provider
        self.sent_at: datetime | None = None
        self.started = 0.0
        self.first_chunk: float | None = None
        self.done: float | None = None

    @classmethod
    def open(cls, path: Path, setup: Setup) -> Trace:
        trace = cls(path.open("a", encoding="utf-8"), setup)
        setup.config.provider = _TimedProvider(trace)
        return trace

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        """The wrapped provider's stream, timed (the last call is the one a response ends)."""
        self.sent_at = datetime.now(UTC)
        self.started = time.monotonic()
        self.first_chunk = self.done = None
        for event in self.provider.stream(request):
            now = time.monotonic()
            if isinstance(event, Done):
                self.done = now
            elif self.first_chunk is None:
                self.first_chunk = now
            yield event

    def write(self, event: RequestSent, harness: VeilHarness) -> None:
        def ms(moment: float | None) -> float | None:
            return None if moment is None else round((moment - self.started) * 1000, 1)

        record: dict[str, Any] = {
            "at": format_time(self.sent_at) if self.sent_at is not None else None,
            "session": self.setup.session_id,
            "turn": event.turn,
            "latency_ms": ms(self.done),
            "first_chunk_ms": ms(self.first_chunk),
            **trace_record(event.request, event.response),
            "veil": harness.request_figures(),
        }
        clean = harness.store.redactor.redact_json(record).value
        self.out.write(json.dumps(clean, ensure_ascii=False) + "\n")
        self.out.flush()

    def close(self) -> None:
        self.setup.config.provider = self.provider
        self.out.close()


@dataclass(frozen=True)
class _TimedProvider:
    """The run's provider as :class:`Trace` times it."""

    trace: Trace

    @property
    def model(self) -> str:
        return self.trace.provider.model

    @property
    def context_window(self) -> int:
        return self.trace.provider.context_window

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        return self.trace.stream(request)
