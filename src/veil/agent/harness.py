"""VeilHarness: the memory layers installed as hooks of an agent loop.

``harness = VeilHarness(db_path=".veil/context.db")`` then
``AgentLoopConfig(..., **harness.hooks())`` — the same hooks the ``veil`` command installs.
The harness wires four layers and decides nothing itself:

- working memory, :class:`~veil.context.ContextEngine`: the transcript's messages become items
  (:class:`~veil.agent.conversation.Conversation`), and at every turn boundary
  (``transform_context``) the engine scores, evicts and renders the request with the one
  renderer of what the model sees (:mod:`veil.context.window`): evicted results and turns become
  stubs with pointers, the request really shrinks, and the manifest (as of the last batch)
  with the convergence feedback goes at the end so the prefix before it stays cacheable;
- convergence (:class:`~veil.agent.outcomes.Outcomes` over the
  :class:`~veil.convergence.record.AttemptLog`): edits and commands are attempts; the goal's
  feedback text (:mod:`veil.convergence.feedback`, the same the Claude Code and Codex hooks
  give) goes into the prompt, ``before_tool_call`` refuses an identical re-run of a failed
  edit at level 2, and ``on_turn_end`` stops the run at level 3;
- long-term memory: its briefing ends the system prompt (``transform_system``), and the
  memory tools (:mod:`veil.agent.memory_tools`) reach every layer;
- what requests cost (:class:`~veil.agent.request_tokens.RequestTokens`): the provider's
  reported input tokens calibrate every later budget (``on_response``), and a request refused
  as too long shrinks the window once (``on_overflow``).

Every hook runs on the loop's thread (:mod:`veil.agent.loop`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from veil.agent import conversation, memory_moves
from veil.agent.capture import capture
from veil.agent.conversation import Conversation
from veil.agent.events import AgentEvent
from veil.agent.hooks import Block, Hooks, Stop
from veil.agent.memory_tools import (
    EXPAND_TOOL,
    Layers,
    MemoryTool,
    attempts_report,
    memory_tools,
)
from veil.agent.outcomes import Outcomes
from veil.agent.request_tokens import RequestTokens
from veil.agent.tool import ToolResult
from veil.agent.tools import coding_tools
from veil.clock import Clock
from veil.context import ContextConfig, ContextEngine, EvictionReport
from veil.context.window import Entry, Rendered
from veil.convergence.record import AttemptLog
from veil.embed.protocol import Embedder
from veil.llm.messages import (
    AssistantMessage,
    ContextOverflow,
    Message,
    Request,
    Response,
    ToolCall,
    UserMessage,
)
from veil.memory import Memory
from veil.memory.briefing import brief, memory_block
from veil.tape import Store, new_id, open_store

BRIEFING_TOKENS = 600


class VeilHarness:
    def __init__(
        self,
        db_path: str | Path = ".veil/context.db",
        *,
        store: Store | None = None,
        project_root: Path | None = None,
        scope: str = "project",
        session_id: str | None = None,
        memory: Memory | None = None,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        config: ContextConfig | None = None,
        budget: int | None = None,
    ) -> None:
        """``budget``: what a whole request may come to, in the provider's tokens, set directly
        (instead of the configuration's window less the reply's reserve). Stubs and the
        manifest name the harness's own expand tool (``config.expand_tool`` is set to it)."""
        if embedder is None:
            from veil.embed import default_embedder

            embedder = default_embedder()
        if store is None:
            url = f"sqlite:///{Path(db_path)}?synchronous=normal"
            store = open_store(url, embedder=embedder, clock=clock)
        self.store = store
        self.scope = scope
        self.session_id = session_id or new_id("s")
        self.memory = memory
        config = replace(config or ContextConfig(), expand_tool=EXPAND_TOOL)
        if budget is not None:
            config = replace(config, budget_tokens=budget)
        self.engine = ContextEngine(
            store,
            session_id=self.session_id,
            scope=scope,
            config=config,
            embedder=embedder,
            clock=clock,
            project_root=project_root,
            deferred=True,
        )
        self._events: list[AgentEvent] = []
        self.attempts = AttemptLog(store, scope, self.session_id, clock)
        self.outcomes = Outcomes(self.engine, self.attempts, memory, scope, self._events)
        self.attempts.on_escalation = self.outcomes.on_escalation
        self.layers = Layers(self.engine, self.attempts, memory, scope, self.session_id)
        self.tokens = RequestTokens(self.engine)
        self._tools: dict[str, object] = {t.spec.name: t for t in coding_tools()}
        self.conversation = Conversation(self.engine, self._tools)
        self.reports: list[EvictionReport] = []
        """Every eviction report, in order (the demo and the TUI read them)."""
        self._briefing = ""

    # ---- session start --------------------------------------------------------------

    def start(self, task: str, messages: list[Message] | None = None) -> None:
        """A new task: it becomes the goal (attempts of earlier sessions reload), the intent
        item, and the query of the long-term memory briefing."""
        self.outcomes.begin(task)
        if self.memory is not None:
            briefing = brief(self.memory, task, user_id=self.scope, token_budget=BRIEFING_TOKENS)
            self._briefing = briefing.text
            self.outcomes.note_recalled(briefing.facts)
        if messages is not None:
            self.observe(messages)

    def use_tools(self, tools: Sequence[Any], system_prompt: str | None = None) -> int:
        """The tools (and base system prompt) the loop will send: their declarations say what
        a call touches, and their schemas count toward every request. Returns the schemas'
        tokens. Without this call the seven coding tools' declarations are used."""
        self._tools.update({t.spec.name: t for t in tools})
        if system_prompt is not None:
            self.tokens.count_system(self._system(system_prompt))
        return self.tokens.count_tools(tools)

    def observe(self, messages: list[Message]) -> list[Entry]:
        """The transcript as the renderer's entries, capturing the turns not seen yet (user
        messages, resumed ones; an assistant message is captured as soon as it is complete, by
        ``on_message``)."""
        return self.conversation.entries(messages)

    # ---- hooks ---------------------------------------------------------------------

    def hooks(self) -> Hooks:
        return {
            "transform_context": self.transform_context,
            "transform_system": self.transform_system,
            "before_tool_call": self.before_tool_call,
            "after_tool_call": self.after_tool_call,
            "on_message": self.on_message,
            "on_turn_end": self.on_turn_end,
            "drain_events": self.drain_events,
            "on_response": self.on_response,
            "on_overflow": self.on_overflow,
        }

    def tools(self) -> list[MemoryTool]:
        return memory_tools(self.layers)

    def transform_context(self, messages: list[Message]) -> list[Message]:
        """The turn boundary and the eviction point: capture the new turns, then step and
        render once (what the model sees is the renderer's, counted as sent)."""
        self.outcomes.turn += 1
        if messages and isinstance(messages[-1], UserMessage):
            self.outcomes.steered()  # a prompt after a stop
        entries = self.observe(messages)
        notes = [self.outcomes.note()]
        boundary = self.engine.window(entries, fixed_tokens=self.tokens.fixed, notes=notes)
        self.reports.append(boundary.report)
        self.tokens.sending(boundary.rendered)
        evicted = memory_moves.evicted(self.engine, boundary.report, self.outcomes.turn)
        self._events.extend([evicted] if evicted is not None else [])
        # The request goes out next: the step's events are written while it is in flight.
        self.engine.persist_in_background()
        return conversation.messages(messages, boundary.rendered)

    def transform_system(self, system: str) -> str:
        prompt = self._system(system)
        self.tokens.count_system(prompt)
        return prompt

    def _system(self, system: str) -> str:
        """The system prompt as sent: the loop's and the long-term memory briefing."""
        if not self._briefing:
            return system
        memory = memory_block(self._briefing)
        return f"{system}\n\n{memory}" if system else memory

    def on_response(self, request: Request, response: Response) -> None:
        """The provider's count of the request's input tokens calibrates Veil's estimate."""
        self.tokens.reported(response.usage.input_tokens)

    def on_overflow(self, error: ContextOverflow, count: int) -> str | None:
        """The request was too long for the model: the window shrinks and the loop retries
        once (:meth:`RequestTokens.overflow`)."""
        return self.tokens.overflow(str(error), count)

    def before_tool_call(self, call: ToolCall) -> Block | None:
        reason = self.outcomes.block(call)
        return Block(reason) if reason else None

    def after_tool_call(self, call: ToolCall, result: ToolResult) -> ToolResult | None:
        """Capture the result (its message then names its item) and record the attempt.
        A truncated result says where its full output is."""
        tool = self._tools.get(call.name)
        if isinstance(tool, MemoryTool):
            return self._after_memory_tool(call, result)
        found = capture(tool, call.arguments, result)
        item = self.conversation.result(call, result, found)
        self.outcomes.finished(call, result, found, item.id)
        content = result.content
        if item.partial:
            content += f"\n[full output: {EXPAND_TOOL} {item.pointer}]"
        return replace(result, content=content, item=item.id)

    def _after_memory_tool(self, call: ToolCall, result: ToolResult) -> ToolResult:
        """An expansion names the item it brought back; any other memory tool's result is an
        item of its own (it is in the prompt and costs tokens like any result)."""
        expanded = self.layers.expanded[:]
        self.layers.expanded.clear()
        turn = self.outcomes.turn
        self._events.extend(memory_moves.expanded(self.engine, i, turn) for i, _ in expanded)
        self.outcomes.note_recalled(self.layers.recalled)
        self.layers.recalled.clear()
        if expanded and not result.is_error:
            item_id, restored = expanded[-1]
            return replace(result, item=item_id, details={**result.details, "restored": restored})
        item = self.conversation.result(call, result, None)
        return replace(result, item=item.id)

    def on_message(self, message: AssistantMessage) -> None:
        """An assistant message becomes a turn item as soon as it is complete, before its tools
        run, so that their results know it (a turn and its results leave the prompt together).
        A message with no tool call is also a step of its own (the monologue pattern)."""
        self.conversation.assistant(message)
        if not message.tool_calls:
            self.outcomes.said(message.content)

    def on_turn_end(self, turn: int) -> Stop | None:
        """The convergence stop at the turn boundary (level 3)."""
        return Stop(self.outcomes.stop) if self.outcomes.stop is not None else None

    def drain_events(self) -> list[AgentEvent]:
        events = self._events[:]
        self._events.clear()
        return events

    # ---- what the UI reads -------------------------------------------------------------

    @property
    def level(self) -> int:
        """The current goal's convergence level as last reported."""
        return self.outcomes.level

    @property
    def escalations(self) -> list[Any]:
        return self.outcomes.escalations

    @property
    def rendered(self) -> Rendered | None:
        """The last request's conversation as the model saw it."""
        return self.tokens.rendered

    @property
    def tool_tokens(self) -> int:
        """Tokens of the tool schemas sent with every request (:meth:`use_tools`)."""
        return self.tokens.tools

    @property
    def sent_tokens(self) -> int:
        """The last request as sent, in the provider's tokens (calibrated estimate)."""
        return self.tokens.provider_sent

    def request_figures(self) -> dict[str, int | float]:
        """What Veil counted for the last request (:meth:`RequestTokens.figures`)."""
        return self.tokens.figures()

    def attempts_report(self) -> str:
        return attempts_report(self.attempts)

    def evicted_tool_calls(self) -> set[str]:
        """Tool-call ids whose results are not in the prompt now (the TUI dims them)."""
        return {i.tool_call_id for i in self.engine.items() if i.tool_call_id and i.tier != "live"}
