"""VeilHarness: the memory layers installed as hooks of an agent loop.

``harness = VeilHarness(db_path=".veil/context.db")`` then
``AgentLoopConfig(..., **harness.hooks())`` — the same hooks the ``veil`` command installs.

- ``transform_context``, before every model call (the turn boundary): new transcript messages
  become turn items, the engine scores everything and evicts (``step``, once per turn, with
  the request's overhead passed in), and evicted tool results and turns become stubs with
  pointers — the request really shrinks. The manifest and the convergence note, which change
  every turn, are a system message at the *end* of the request: everything before them (the
  system prompt, the tool schemas, the conversation so far) stays byte-identical from one turn
  to the next unless an eviction rewrote it, so provider prompt caches (OpenAI, Anthropic,
  llama.cpp) reuse it.
- ``transform_system``: the system prompt and the long-term memory briefing (both fixed for the
  session).
- ``before_tool_call``: an identical re-run of a failed edit is refused at level 2.
- ``after_tool_call``: the result is captured (what the call touched comes from the tool's own
  declaration, :mod:`veil.agent.capture`), an attempt is recorded for edits and commands, and a
  check's outcome feeds the cognitive-weight signal and procedural outcome tracking.
- ``on_message``: an assistant message with no tool call is a step for the monologue pattern.
- ``on_turn_end``: level 3 stops the run with a summary.
- ``drain_events``: evictions, expansions, attempts and level changes for the event stream.

Every hook runs on the loop's thread (:mod:`veil.agent.loop`), so nothing here is shared with
the threads that execute tools.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from veil.agent.capture import Capture, call_kinds, capture
from veil.agent.events import (
    AgentEvent,
    AttemptRecorded,
    Evicted,
    EvictedItem,
    Expanded,
    LevelChanged,
)
from veil.agent.hooks import Block, Hooks, Stop
from veil.agent.memory_tools import Layers, MemoryTool, attempts_report, memory_tools
from veil.agent.tool import ToolResult
from veil.agent.tools import coding_tools
from veil.clock import Clock
from veil.context import ContextConfig, ContextEngine, EvictionReport
from veil.context.render import range_note, turn_stub
from veil.convergence.attempt import Attempt, call_digest, text_digest
from veil.convergence.monitor import Escalation, is_check
from veil.convergence.record import AttemptLog
from veil.embed.protocol import Embedder
from veil.llm.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from veil.memory import Fact, Memory
from veil.tape import JSONValue, Store, new_id, open_store


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
        self.escalations: list[Escalation] = []
        self.attempts = AttemptLog(
            store, scope, self.session_id, clock, on_escalation=self._on_escalation
        )
        self.layers = Layers(self.engine, self.attempts, memory, scope, self.session_id)
        self.full_outputs: dict[str, str] = {}
        """Tool-call id → the item holding that call's full (untruncated) output."""
        self.reports: list[EvictionReport] = []
        """Every eviction report, in order (the demo and the TUI read them)."""
        self.tool_tokens = 0
        """Tokens of the tool schemas sent with every request (:meth:`use_tools`)."""
        self._tools: dict[str, object] = {t.spec.name: t for t in coding_tools()}
        self._turn_items: dict[int, str] = {}
        self._call_turn: dict[str, str] = {}
        """Tool-call id → the turn item of the message that made the call."""
        self._result_items: dict[int, str] = {}
        self._call_seen: dict[str, int] = {}
        self._seen = 0
        self._briefing = ""
        self._stop: str | None = None
        self._events: list[AgentEvent] = []
        self._turn = 0
        self._frame_tokens = 0
        self._prompt_tokens: int | None = None
        self._tail_tokens = 0
        self._level = 0
        self._checked_tick = self.engine.tick
        self._procedural: dict[str, Fact] = {}
        self._used_facts: dict[str, None] = {}
        for item in self.engine.items():
            if item.kind == "turn" and item.target and item.target.startswith("turn:"):
                self._turn_items[int(item.target.split(":", 1)[1])] = item.id

    # ---- session start --------------------------------------------------------------

    def start(self, task: str, messages: list[Message] | None = None) -> None:
        """A new task: it becomes the goal (attempts of earlier sessions reload), the intent
        item, and the query of the long-term memory briefing."""
        self.attempts.begin(task)
        self._level = self.attempts.assess().level
        if self.memory is not None:
            briefing = self.memory.recall(task, user_id=self.scope, token_budget=600)
            self._briefing = briefing.text
            self._note_recalled(briefing.facts)
        if messages is not None:
            self.observe(messages)

    def use_tools(self, tools: Sequence[Any], system_prompt: str | None = None) -> int:
        """The tools (and base system prompt) the loop will send: their declarations say what
        a call touches, and their schemas count toward every request's overhead. Returns the
        schemas' tokens. Without this call the seven coding tools' declarations are used."""
        self._tools.update({t.spec.name: t for t in tools})
        self.tool_tokens = sum(
            self.engine.count_tokens(
                json.dumps(
                    {
                        "name": t.spec.name,
                        "description": t.spec.description,
                        "parameters": t.spec.parameters,
                    }
                )
            )
            for t in tools
        )
        if system_prompt is not None:
            self._frame_tokens = self.engine.count_tokens(system_prompt)
        return self.tool_tokens

    count_tool_tokens = use_tools

    def observe(self, messages: list[Message]) -> None:
        """Capture transcript messages not seen yet as turns (user messages, resumed ones)."""
        for index in range(self._seen, len(messages)):
            message = messages[index]
            if isinstance(message, ToolResultMessage):
                # The k-th result carrying a call id is the k-th item captured for it: robust
                # to models that reuse tool-call ids across turns, and to resuming.
                k = self._call_seen.get(message.tool_call_id, 0)
                self._call_seen[message.tool_call_id] = k + 1
                found = self.engine.items_for_call(message.tool_call_id)
                if k < len(found):
                    self._result_items[index] = found[k].id
                continue
            if index in self._turn_items:
                continue
            if isinstance(message, UserMessage):
                item = self.engine.capture_turn("user", message.content, target=f"turn:{index}")
                self._turn_items[index] = item.id
            elif isinstance(message, AssistantMessage):
                self._capture_assistant(message, index)
        self._seen = len(messages)

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
        }

    def tools(self) -> list[MemoryTool]:
        return memory_tools(self.layers)

    def request_overhead(self) -> int:
        """What the next request costs besides the items: the system prompt as last sent (or
        the base prompt and briefing before the first request), the tool schemas, and the
        manifest at the end as last rendered."""
        if self._prompt_tokens is not None:
            prompt = self._prompt_tokens
        else:
            prompt = self._frame_tokens + self.engine.count_tokens(self._briefing)
        return prompt + self.tool_tokens + self._tail_tokens

    def transform_context(self, messages: list[Message]) -> list[Message]:
        """The turn boundary and the eviction point: capture the new turns, score and evict
        once, then render what the model will see (stubs with pointers for evicted items)."""
        self._turn += 1
        self.observe(messages)
        report = self.engine.step(overhead_tokens=self.request_overhead())
        self.reports.append(report)
        self._report_moves(report)
        out = self._collapse(
            messages, [self._render(index, message) for index, message in enumerate(messages)]
        )
        tail = self.tail_context()
        self._tail_tokens = self.engine.count_tokens(tail)
        # The request goes out next: the step's events are written while it is in flight.
        self.engine.persist_in_background()
        return [*out, SystemMessage(tail)] if tail else out

    def tail_context(self) -> str:
        """What goes at the end of a request: the manifest with the convergence note — once
        there is something to say (an item was evicted, a contradiction or a convergence note
        exists). Before that it would only repeat the conversation, cost tokens every turn,
        and small models take a trailing note for a pattern to continue."""
        note = self.attempts.note() if self.attempts.goal is not None else ""
        evicted = any(i.tier != "live" for i in self.engine.items())
        if not (note or evicted or self.engine.conflicts()):
            return ""
        return self.engine.manifest(notes=[note] if note else [])

    def _collapse(self, messages: list[Message], rendered: list[Message]) -> list[Message]:
        """Runs of steps whose turn and tool results are all out of the prompt become one note:
        the request loses them as truncation would, but the note names them and their
        pointers. A step is an assistant message with tool calls and the results after it."""
        out: list[Message] = []
        run: list[str] = []  # result item ids of the collapsed steps in the current run
        run_tokens = steps = 0
        index = 0
        while index < len(messages):
            message = messages[index]
            end = index + 1
            while end < len(messages) and isinstance(messages[end], ToolResultMessage):
                end += 1
            collapsed = self._collapsed(index, end, message)
            if collapsed is not None:
                run.extend(collapsed)
                run_tokens += sum(self.engine.item(i).tokens for i in collapsed)
                turn = self._turn_items[index]
                run_tokens += self.engine.item(turn).tokens
                steps += 1
                index = end
                continue
            if run:
                out.append(
                    SystemMessage(range_note([self.engine.item(i) for i in run], run_tokens, steps))
                )
                run, run_tokens, steps = [], 0, 0
            out.extend(
                rendered[index:end] if isinstance(message, AssistantMessage) else [rendered[index]]
            )
            index = end if isinstance(message, AssistantMessage) else index + 1
        if run:
            out.append(
                SystemMessage(range_note([self.engine.item(i) for i in run], run_tokens, steps))
            )
        return out

    def _collapsed(self, index: int, end: int, message: Message) -> list[str] | None:
        """The result items of the step at ``index`` when it and they are all evicted."""
        if not isinstance(message, AssistantMessage) or not message.tool_calls:
            return None
        turn = self._turn_items.get(index)
        if turn is None or self.engine.item(turn).tier == "live":
            return None
        results = [self._result_items.get(i) for i in range(index + 1, end)]
        if not results or any(r is None for r in results):
            return None
        found = [r for r in results if r is not None]
        if any(self.engine.item(r).tier == "live" or self.engine.item(r).excerpt for r in found):
            return None
        return found

    def _render(self, index: int, message: Message) -> Message:
        if isinstance(message, ToolResultMessage):
            item_id = self._result_items.get(index)
            item = self.engine.item(item_id) if item_id else None
            if item is not None and item.tier != "live":
                return replace(message, content=self.engine.stub(item.id))
            return message
        if index not in self._turn_items:
            return message
        item = self.engine.item(self._turn_items[index])
        if item.tier == "live":
            return message
        stub = turn_stub(item)
        if isinstance(message, AssistantMessage):
            return replace(message, content=stub)
        if isinstance(message, UserMessage):
            return UserMessage(stub)
        return message

    def transform_system(self, system: str) -> str:
        parts = [system]
        if self._briefing:
            parts.append(
                "<veil-memory>\nWhat long-term memory holds for this project:\n"
                f"{self._briefing}\n</veil-memory>"
            )
        prompt = "\n\n".join(p for p in parts if p)
        self._frame_tokens = self.engine.count_tokens(system)
        self._prompt_tokens = self.engine.count_tokens(prompt)
        return prompt

    def before_tool_call(self, call: ToolCall) -> Block | None:
        if self.attempts.goal is None:
            return None
        reason = self.attempts.should_block(call.name, cast(dict[str, JSONValue], call.arguments))
        return Block(reason) if reason else None

    def after_tool_call(self, call: ToolCall, result: ToolResult) -> ToolResult | None:
        """Capture → record the attempt → feed the outcome signals. Returns the result the
        model sees (with a pointer to the full output when the tool truncated it)."""
        tool = self._tools.get(call.name)
        if isinstance(tool, MemoryTool):
            self._report_expanded()
            self._note_recalled(self.layers.recalled)
            self.layers.recalled.clear()
            return None
        content = result.content
        if result.full_output is not None and result.full_output != result.content:
            full = self.engine.add(
                "tool_output", result.full_output, target=f"full output of {call.name} {call.id}"
            )
            self.engine.evict(full.id)
            self.full_outputs[call.id] = full.id
            content = f"{content}\n[full output: {full.pointer}]"
        found = capture(tool, call.arguments, result)
        item = self.engine.capture_tool_result(
            tool_call_id=call.id,
            tool_name=call.name,
            arguments=call.arguments,
            output=content,
            is_error=result.is_error,
            target=found.target,
            reads=found.touches.reads,
            partial=found.touches.partial,
            writes=found.touches.writes,
            parent=self._call_turn.get(call.id),
        )
        self._note_used_facts(call)
        if self.attempts.goal is not None:
            if found.action is not None:
                attempt = self._record_attempt(call, result, found)
                self._after_attempt(attempt, exclude=item.id)
            else:
                self.attempts.observe(
                    action=call_digest(call.name, cast(dict[str, JSONValue], call.arguments)),
                    observation=text_digest(result.content),
                    is_error=result.is_error,
                )
                self._report_level()
        return replace(result, content=content) if content != result.content else None

    def _capture_assistant(self, message: AssistantMessage, index: int) -> str:
        """The turn item of the assistant message at transcript ``index`` (each tool call
        classified as acting or looking by its tool's declaration)."""
        item = self.engine.capture_turn(
            "assistant",
            _turn_text(message),
            calls=call_kinds(self._tools, [c.name for c in message.tool_calls]),
            target=f"turn:{index}",
        )
        self._turn_items[index] = item.id
        return item.id

    def on_message(self, message: AssistantMessage) -> None:
        """An assistant message becomes a turn item as soon as it is complete, before its tools
        run, so that their results know it (a turn and its results leave the prompt together).
        A message with no tool call is also a step of its own (the monologue pattern)."""
        index = self._seen  # the loop appended it right after the last request was built
        if message.tool_calls and index not in self._turn_items:
            item_id = self._capture_assistant(message, index)
            for call in message.tool_calls:
                self._call_turn[call.id] = item_id
        if message.tool_calls or not message.content.strip() or self.attempts.goal is None:
            return
        self.attempts.observe(action=None, message=message.content.strip())
        self._report_level()

    def on_turn_end(self, turn: int) -> Stop | None:
        """The convergence stop at the turn boundary (level 3)."""
        if self._stop is not None:
            return Stop(self._stop)
        return None

    def drain_events(self) -> list[AgentEvent]:
        events, self._events = self._events, []
        return events

    # ---- attempts and outcomes --------------------------------------------------------

    def _record_attempt(self, call: ToolCall, result: ToolResult, found: Capture) -> Attempt:
        assert found.action is not None
        attempt = self.attempts.record_call(
            action=found.action,
            target=(found.target or call.name)[:500],
            tool_name=call.name,
            arguments=cast(dict[str, JSONValue], call.arguments),
            output=result.full_output or result.content,
            exit_code=found.exit_code,
            is_error=result.is_error,
            tool_call_id=call.id,
            files=list(found.files),
        )
        self._events.append(
            AttemptRecorded(
                self._turn,
                attempt.action,
                attempt.target,
                attempt.outcome,
                attempt.fingerprint,
                attempt.tool_call_id,
            )
        )
        return attempt

    def _after_attempt(self, attempt: Attempt, *, exclude: str) -> None:
        """A check that passed or failed: the items the agent used since the previous check
        get the credit or the blame (cognitive weight), and so do the procedural facts from
        long-term memory whose tool or source the agent used."""
        self._report_level()
        if attempt.outcome not in ("pass", "fail"):
            return
        earlier = self.attempts.attempts()[:-1]
        failed = {a.target for a in earlier if a.outcome in ("fail", "partial")}
        if not is_check(attempt, failed):
            return
        ok = attempt.outcome == "pass"
        used = [
            i.id
            for i in self.engine.items("live")
            if i.kind != "turn" and i.last_access_tick > self._checked_tick and i.id != exclude
        ]
        self.engine.record_outcome(ok, used)
        self._checked_tick = self.engine.tick
        if self.memory is not None:
            for fact_id in list(self._used_facts):
                self.memory.record_outcome(fact_id, user_id=self.scope, ok=ok)
        self._used_facts.clear()

    def _note_recalled(self, facts: Sequence[Fact]) -> None:
        if self.memory is None:
            return
        relations = self.memory.config.relations
        for fact in facts:
            relation = relations.get(fact.relation)
            if relation is not None and relation.procedural and len(fact.object) >= 3:
                self._procedural[fact.id] = fact

    def _note_used_facts(self, call: ToolCall) -> None:
        """A procedural fact is used when a call names its object (``uses_tool ruff`` and the
        agent runs ``ruff check``)."""
        if not self._procedural:
            return
        text = json.dumps(call.arguments, ensure_ascii=False).lower()
        for fact in self._procedural.values():
            if fact.object.lower() in text:
                self._used_facts[fact.id] = None

    def _on_escalation(self, escalation: Escalation) -> None:
        self.escalations.append(escalation)
        self.engine.convergence_warning()
        if escalation.level >= 3:
            self._stop = self.attempts.note()

    def _report_level(self) -> None:
        assessment = self.attempts.assess()
        if assessment.level != self._level:
            self._events.append(
                LevelChanged(self._turn, assessment.level, self._level, assessment.reasons)
            )
            self._level = assessment.level

    # ---- reports --------------------------------------------------------------------

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
                    self._turn,
                    tuple(out),
                    report.threshold_after,
                    report.live_tokens_after,
                    report.budget,
                )
            )

    def _report_expanded(self) -> None:
        for item_id in self.layers.expanded:
            item = self.engine.item(item_id)
            what = f"{item.tool_name or item.kind} {item.target or ''}".strip()
            self._events.append(Expanded(self._turn, item.id, what, item.tokens))
        self.layers.expanded.clear()

    @property
    def level(self) -> int:
        """The current goal's convergence level as last reported."""
        return self._level

    def attempts_report(self) -> str:
        return attempts_report(self.attempts)

    def evicted_tool_calls(self) -> set[str]:
        """Tool-call ids whose results are not in the prompt now (the TUI dims them)."""
        return {i.tool_call_id for i in self.engine.items() if i.tool_call_id and i.tier != "live"}


def _turn_text(message: AssistantMessage) -> str:
    """An assistant turn as the prompt carries it: its text and its tool calls' arguments
    (a file written through a tool call costs its tokens in every request)."""
    if not message.tool_calls:
        return message.content
    calls = "\n".join(
        f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in message.tool_calls
    )
    return f"{message.content}\n{calls}" if message.content else calls
