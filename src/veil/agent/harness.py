"""VeilHarness: the memory layers installed as hooks of an agent loop.

``harness = VeilHarness(db_path=".veil/context.db")`` then
``AgentLoopConfig(..., **harness.hooks())`` — the same hooks the ``veil`` command installs.

- ``transform_context``, before every model call (the turn boundary): new transcript messages
  become turn items, and the engine scores, evicts and renders the request
  (:meth:`ContextEngine.window`, the one renderer of :mod:`veil.context.window`): evicted
  results and turns become stubs with pointers, the request really shrinks, and the manifest
  with the convergence note goes at the end so the prefix before it stays cacheable.
- ``transform_system``: the system prompt and the long-term memory briefing (both fixed for the
  session).
- ``before_tool_call``: an identical re-run of a failed edit is refused at level 2.
- ``after_tool_call``: the result becomes an item (what the call touched comes from the tool's
  own declaration, :mod:`veil.agent.capture`) and the result message names it; edits and
  commands are attempts (:mod:`veil.agent.outcomes`).
- ``on_response``: the provider's reported input tokens calibrate every later budget.
- ``on_overflow``: the provider refused the request as too long: the window shrinks to what the
  error states (or a quarter less) and the loop retries once.
- ``on_message``, ``on_turn_end`` (level 3 stops the run), ``drain_events``.

Every hook runs on the loop's thread (:mod:`veil.agent.loop`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from veil.agent import conversation
from veil.agent.capture import capture
from veil.agent.events import AgentEvent, Evicted, EvictedItem, Expanded
from veil.agent.hooks import Block, Hooks, Stop
from veil.agent.memory_tools import Layers, MemoryTool, attempts_report, memory_tools
from veil.agent.outcomes import Outcomes
from veil.agent.tool import ToolResult
from veil.agent.tools import coding_tools
from veil.clock import Clock
from veil.context import ContextConfig, ContextEngine, EvictionReport
from veil.context.transcript import Found, Transcript
from veil.context.window import Entry, Rendered
from veil.convergence.record import AttemptLog
from veil.embed.protocol import Embedder
from veil.llm.failures import overflow_limits
from veil.llm.messages import (
    AssistantMessage,
    ContextOverflow,
    Message,
    Request,
    Response,
    ToolCall,
    UserMessage,
    spec_text,
)
from veil.memory import Memory
from veil.memory.briefing import brief
from veil.tape import JSONValue, Store, new_id, open_store

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
    ) -> None:
        if embedder is None:
            from veil.embed import default_embedder

            embedder = default_embedder()
        if store is None:
            path = Path(db_path)
            store = open_store(
                f"sqlite:///{path}?synchronous=normal", embedder=embedder, clock=clock
            )
        self.store = store
        self.scope = scope
        self.session_id = session_id or new_id("s")
        self.memory = memory
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
        self.reports: list[EvictionReport] = []
        """Every eviction report, in order (the demo and the TUI read them)."""
        self.rendered: Rendered | None = None
        """The last request's conversation as the model saw it."""
        self.tool_tokens = 0
        """Tokens of the tool schemas sent with every request (:meth:`use_tools`)."""
        self._tools: dict[str, object] = {t.spec.name: t for t in coding_tools()}
        self.transcript = Transcript(self.engine)
        """Which item each message of the transcript is."""
        self._call_turn: dict[str, str] = {}
        """Tool-call id → the turn item of the message that made the call."""
        self._seen = 0
        self._described: list[tuple[Message, Found]] = []
        """Each transcript message and how it was described (the transcript only grows)."""
        self._briefing = ""
        self._system_tokens = 0
        self._sent = 0
        """Estimated tokens of the last request as sent (calibration compares usage to it)."""

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
        self.tool_tokens = sum(self.engine.count_tokens(spec_text(t.spec)) for t in tools)
        if system_prompt is not None:
            self._system_tokens = self.engine.count_tokens(self._system(system_prompt))
        return self.tool_tokens

    def observe(self, messages: list[Message]) -> list[Entry]:
        """The transcript as the renderer's entries, capturing the turns not seen yet (user
        messages, resumed ones; an assistant message is captured as soon as it is complete, by
        ``on_message``)."""
        known = self._described
        same = (i for i, (m, _) in enumerate(known) if i >= len(messages) or messages[i] is not m)
        del known[next(same, len(known)) :]
        for message in messages[len(known) :]:
            known.append((message, conversation.found(message, self._tools)))
        self._seen = len(messages)
        return self.transcript.entries([f for _, f in known])

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
        fixed = self._system_tokens + self.tool_tokens
        note = self.attempts.note() if self.attempts.goal is not None else ""
        boundary = self.engine.window(entries, fixed_tokens=fixed, notes=[note])
        self.reports.append(boundary.report)
        self.rendered = boundary.rendered
        self._sent = fixed + boundary.rendered.tokens
        self._report_moves(boundary.report)
        # The request goes out next: the step's events are written while it is in flight.
        self.engine.persist_in_background()
        return conversation.messages(messages, boundary.rendered)

    def transform_system(self, system: str) -> str:
        prompt = self._system(system)
        self._system_tokens = self.engine.count_tokens(prompt)
        return prompt

    def _system(self, system: str) -> str:
        if not self._briefing:
            return system
        memory = (
            "<veil-memory>\nWhat long-term memory holds for this project:\n"
            f"{self._briefing}\n</veil-memory>"
        )
        return f"{system}\n\n{memory}" if system else memory

    def on_response(self, request: Request, response: Response) -> None:
        """The provider's count of the request's input tokens calibrates Veil's estimate."""
        self.engine.calibrate(response.usage.input_tokens, self._sent)

    def on_overflow(self, error: ContextOverflow, count: int) -> str | None:
        """The request was too long for the model. The first time: the window becomes what the
        error states (with the calibration it implies) or a quarter less than what was sent,
        and the loop retries; the second time the run ends with how to fix it."""
        window = self.engine.config.window_tokens
        limit, sent = overflow_limits(str(error))
        if count > 1:
            said = f" (the model's limit is {limit:,} tokens)" if limit else ""
            return (
                f"the model refused the request as too long twice{said}, even after evicting: "
                f"its context window is smaller than the {window:,} tokens Veil plans for; "
                "run with a smaller --window"
            )
        if sent:
            self.engine.calibrate(sent, self._sent)
        provider_sent = self.engine.calibration.provider_tokens(self._sent)
        smaller = limit if limit else int(min(window, provider_sent) * 0.75)
        reserve = min(self.engine.config.reserve_tokens, smaller // 4)
        self.engine.config = replace(
            self.engine.config, window_tokens=min(window, smaller), reserve_tokens=reserve
        )
        return None

    def before_tool_call(self, call: ToolCall) -> Block | None:
        if self.attempts.goal is None:
            return None
        arguments = cast(dict[str, JSONValue], call.arguments)
        reason = self.attempts.should_block(call.name, arguments)
        return Block(reason) if reason else None

    def after_tool_call(self, call: ToolCall, result: ToolResult) -> ToolResult | None:
        """Capture the result (its message then names its item) and record the attempt.
        A truncated result says where its full output is."""
        tool = self._tools.get(call.name)
        if isinstance(tool, MemoryTool):
            return self._after_memory_tool(call, result)
        found = capture(tool, call.arguments, result)
        item = self.engine.capture_tool_result(
            tool_call_id=call.id,
            tool_name=call.name,
            arguments=call.arguments,
            output=result.content,
            full_output=result.full_output,
            is_error=result.is_error,
            target=found.target,
            reads=found.touches.reads,
            partial=found.touches.partial,
            writes=found.touches.writes,
            parent=self._call_turn.get(call.id),
        )
        self.outcomes.finished(call, result, found, item.id)
        content = result.content
        if item.partial:
            content += f"\n[full output: veil_expand {item.pointer}]"
        return replace(result, content=content, item=item.id)

    def _after_memory_tool(self, call: ToolCall, result: ToolResult) -> ToolResult:
        """An expansion names the item it brought back; any other memory tool's result is an
        item of its own (it is in the prompt and costs tokens like any result)."""
        expanded = self.layers.expanded[:]
        self.layers.expanded.clear()
        for item_id, _ in expanded:
            item = self.engine.item(item_id)
            what = f"{item.tool_name or item.kind} {item.target or ''}".strip()
            self._events.append(Expanded(self.outcomes.turn, item.id, what, item.tokens))
        self.outcomes.note_recalled(self.layers.recalled)
        self.layers.recalled.clear()
        if expanded and not result.is_error:
            item_id, restored = expanded[-1]
            return replace(result, item=item_id, details={**result.details, "restored": restored})
        item = self.engine.capture_tool_result(
            tool_call_id=call.id,
            tool_name=call.name,
            arguments=call.arguments,
            output=result.content,
            is_error=result.is_error,
            parent=self._call_turn.get(call.id),
        )
        return replace(result, item=item.id)

    def on_message(self, message: AssistantMessage) -> None:
        """An assistant message becomes a turn item as soon as it is complete, before its tools
        run, so that their results know it (a turn and its results leave the prompt together).
        A message with no tool call is also a step of its own (the monologue pattern)."""
        index = self._seen  # the loop appended it right after the last request was built
        if message.tool_calls and self.transcript.turn_item(index) is None:
            described = conversation.found(message, self._tools)
            item_id = self.transcript.turn(index, described)
            for call in message.tool_calls:
                self._call_turn[call.id] = item_id
        if not message.tool_calls:
            self.outcomes.said(message.content)

    def on_turn_end(self, turn: int) -> Stop | None:
        """The convergence stop at the turn boundary (level 3)."""
        return Stop(self.outcomes.stop) if self.outcomes.stop is not None else None

    def drain_events(self) -> list[AgentEvent]:
        events = self._events[:]
        self._events.clear()
        return events

    def _report_moves(self, report: EvictionReport) -> None:
        out: list[EvictedItem] = []
        for move in report.moves:
            if move.to == "live":
                continue
            item = self.engine.item(move.id)
            what = f"{item.tool_name or item.turn_kind or item.kind} {item.target or ''}".strip()
            out.append(
                EvictedItem(
                    item.id, what, item.tokens, move.to, move.stage, item.pointer, item.tool_call_id
                )
            )
        if out:
            self._events.append(
                Evicted(
                    self.outcomes.turn,
                    tuple(out),
                    report.threshold_after,
                    report.live_tokens_after,
                    report.budget,
                )
            )

    # ---- what the UI reads -------------------------------------------------------------

    @property
    def level(self) -> int:
        """The current goal's convergence level as last reported."""
        return self.outcomes.level

    @property
    def escalations(self) -> list[Any]:
        return self.outcomes.escalations

    @property
    def sent_tokens(self) -> int:
        """The last request as sent, in the provider's tokens (calibrated estimate)."""
        return self.engine.calibration.provider_tokens(self._sent)

    def request_figures(self) -> dict[str, int | float]:
        """What Veil counted for the last request (``--trace`` records it beside the request):
        the request and its conversation as estimated, ``live_tokens`` (the conversation
        without the tail, which the budget is checked against), the budget, the window and the
        calibration ratio; ``request_tokens`` is the request in the provider's tokens."""
        rendered = self.rendered
        conversation = rendered.tokens if rendered is not None else 0
        tail = rendered.tail_tokens if rendered is not None else 0
        return {
            "request_tokens": self.sent_tokens,
            "estimated_tokens": self._sent,
            "fixed_tokens": self._sent - conversation,
            "conversation_tokens": conversation,
            "tail_tokens": tail,
            "live_tokens": self.engine.live_tokens,
            "budget": self.engine.budget,
            "window": self.engine.config.window_tokens,
            "ratio": self.engine.calibration.ratio,
        }

    def attempts_report(self) -> str:
        return attempts_report(self.attempts)

    def evicted_tool_calls(self) -> set[str]:
        """Tool-call ids whose results are not in the prompt now (the TUI dims them)."""
        return {i.tool_call_id for i in self.engine.items() if i.tool_call_id and i.tier != "live"}
