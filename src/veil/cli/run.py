"""``veil -p TASK``: print mode — run the agent once, non-interactively, and exit with a status.

The same loop and hooks as the TUI. Exit status: 0 done, 1 error (including a model that is not
configured), 3 stopped by the convergence monitor (level 3: see the summary), 4 the scripted
model ran out of turns, 5 max turns reached, 130 aborted.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from veil.agent.events import AgentEnd, AgentEvent, MessageEnd, Notice, RequestSent, ToolEnd
from veil.agent.harness import VeilHarness
from veil.agent.instructions import project_instructions
from veil.agent.loop import AgentLoopConfig, run_agent
from veil.agent.permissions import PermissionPolicy
from veil.agent.project import project_root, project_scope
from veil.agent.sessions import Sessions
from veil.agent.tool import ToolContext
from veil.agent.tools import coding_tools
from veil.agent.transcript import trace_record
from veil.context import ContextConfig
from veil.llm.messages import Message, UserMessage
from veil.llm.provider import Provider
from veil.tape import open_store

EXIT = {"done": 0, "error": 1, "stopped": 3, "script_exhausted": 4, "max_turns": 5, "aborted": 130}

SYSTEM_PROMPT = """You are Veil, a coding agent working in the user's project directory.
Use the tools to read, search, edit and run code; make the smallest change that solves the task
and check it (run the tests). Reply without tool calls when you are done, with a short summary.

Your context is managed by Veil's memory: tool results you have not used for a while may be
replaced by a one-line stub with a pointer such as veil://warm/ci_…; call veil_expand with the
pointer to get the content back exactly. The <veil-manifest> block below lists what is loaded.
veil_pin keeps something in the context; veil_recall searches long-term memory and earlier
context; veil_attempts shows what was already tried for this task. If a contradiction is
listed, settle it with veil_resolve. Never repeat an edit that already failed."""


@dataclass
class RunOptions:
    task: str
    model: str | None
    approve: str = "ask"
    trace: Path | None = None
    window: int | None = None
    json: bool = False
    resume: bool = False
    session: str | None = None
    fork: bool = False
    """With ``resume``/``session``: branch a new session from that one (its transcript copied,
    its id recorded as the parent) instead of continuing it."""
    max_turns: int = 50
    cwd: Path = dataclasses.field(default_factory=Path.cwd)


@dataclass
class Setup:
    harness: VeilHarness
    sessions: Sessions
    session_id: str
    messages: list[Message]
    config: AgentLoopConfig
    provider: Provider


def setup(
    options: RunOptions,
    *,
    ask: Callable[[str, dict[str, Any]], bool] | None = None,
) -> Setup:
    """Everything a run needs, shared by print mode and the TUI."""
    from veil.embed import default_embedder
    from veil.llm.registry import extraction_complete_from_provider, provider_from_spec
    from veil.memory import Memory

    root = project_root(options.cwd)
    scope = project_scope(root)
    veil_dir = root / ".veil"
    veil_dir.mkdir(exist_ok=True)
    provider = provider_from_spec(options.model)
    window = options.window or provider.context_window
    embedder = default_embedder()
    store = open_store(f"sqlite:///{veil_dir / 'context.db'}?synchronous=normal", embedder=embedder)
    sessions = Sessions(store, scope=scope)
    messages: list[Message] = []
    previous = None
    if options.session:
        previous = sessions.get(options.session)
        if previous is None:
            raise SystemExit(
                f"veil: no session {options.session} in this project (see `veil sessions`)"
            )
    elif options.resume:
        previous = sessions.latest()
    if previous is not None and options.fork:
        messages = sessions.messages(previous.id)
        session_id = sessions.start(
            title=options.task, model=provider.model, parent_id=previous.id, copy_messages=messages
        )
    elif previous is not None:
        session_id = previous.id
        messages = sessions.messages(session_id)
    else:
        session_id = sessions.start(title=options.task, model=provider.model)
    is_scripted = provider.model.startswith("scripted")
    memory = Memory(
        veil_dir / "memory.db",
        embedder=embedder,
        complete=None if is_scripted else extraction_complete_from_provider(provider),
    )
    reserve = min(max(window // 5, 256), 16_000)
    harness = VeilHarness(
        store=store,
        scope=scope,
        session_id=session_id,
        project_root=root,
        memory=memory,
        embedder=embedder,
        config=ContextConfig(window_tokens=window, reserve_tokens=reserve),
    )
    harness.start(options.task, messages)
    instructions = project_instructions(root)
    system = SYSTEM_PROMPT + (f"\n\nProject instructions:\n{instructions}" if instructions else "")
    policy = PermissionPolicy(mode=options.approve, ask=ask)  # type: ignore[arg-type]
    tools = [*coding_tools(), *harness.tools()]
    harness.count_tool_tokens(tools)
    config = AgentLoopConfig(
        provider=provider,
        tools=tools,
        system_prompt=system,
        tool_context=ToolContext(cwd=root),
        permission=policy.decide,
        max_turns=options.max_turns,
        **harness.hooks(),
    )
    return Setup(harness, sessions, session_id, messages, config, provider)


def event_json(event: AgentEvent) -> str:
    return json.dumps(dataclasses.asdict(event), default=str, ensure_ascii=False)


def run_print(options: RunOptions, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    from veil.llm import ModelNotConfigured

    try:
        s = setup(options)
    except ModelNotConfigured as exc:
        print(f"veil: {exc}", file=err)
        return 1
    harness, sessions = s.harness, s.sessions
    persisted = len(s.messages)  # a resumed transcript is already on the tape
    s.messages.append(UserMessage(options.task))
    if harness.memory is not None and harness.memory.complete is not None:
        harness.memory.remember(
            options.task, user_id=harness.scope, author="user", session_id=s.session_id
        )
    trace = options.trace.open("a", encoding="utf-8") if options.trace else None
    end: AgentEnd | None = None
    try:
        for event in run_agent(s.config, s.messages, session_id=s.session_id):
            if trace is not None and isinstance(event, RequestSent):
                trace.write(
                    json.dumps(trace_record(event.request, event.response), ensure_ascii=False)
                    + "\n"
                )
                trace.flush()
            if options.json:
                print(event_json(event), file=out, flush=True)
            elif isinstance(event, ToolEnd):
                status = (
                    "blocked" if event.blocked else ("error" if event.result.is_error else "ok")
                )
                print(f"· {event.call.name} {_args(event.call.arguments)} [{status}]", file=err)
            elif isinstance(event, Notice):
                print(f"veil: {event.text}", file=err)
            elif (
                isinstance(event, MessageEnd) and event.message.content and event.message.tool_calls
            ):
                print(event.message.content, file=err)
            if isinstance(event, (ToolEnd, MessageEnd)):
                sessions.append(s.session_id, persisted, s.messages[persisted:])
                persisted = len(s.messages)
            if isinstance(event, AgentEnd):
                end = event
    except KeyboardInterrupt:
        s.config.abort.set()
        end = AgentEnd("aborted", "interrupted", 0)
    finally:
        if trace is not None:
            trace.close()
    sessions.append(s.session_id, persisted, s.messages[persisted:])
    assert end is not None
    sessions.end(s.session_id, status=end.reason, summary=end.message)
    harness.engine.flush()
    if not options.json:
        if end.reason == "done":
            print(end.message, file=out)
        else:
            print(f"veil: run ended ({end.reason}): {end.message}", file=err)
    return EXIT.get(end.reason, 1)


def _args(arguments: dict[str, Any]) -> str:
    text = json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= 100 else text[:97] + "..."
