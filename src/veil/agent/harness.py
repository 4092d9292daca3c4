"""VeilHarness: the memory layers installed as hooks of an agent loop.

``harness = VeilHarness(db_path=".veil/context.db")`` then
``AgentLoopConfig(..., **harness.hooks())`` — the same hooks the ``veil`` command installs. On
every tool call, on the way out (``after_tool_call``): capture into the context engine, record
an attempt, score and evict. Before every model call (``transform_context``): evicted tool
results and turns become stubs with pointers, so the request really shrinks;
(``transform_system``): the manifest, the long-term memory briefing and the convergence note go
into the system prompt. Before a tool runs (``before_tool_call``): an identical re-run of a failed
edit is blocked at level 2. At every turn boundary (``on_turn_end``): the budget is checked
and level 3 stops the run with a summary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from veil.agent.hooks import Block, Hooks, Stop
from veil.agent.memory_tools import MemoryTool, memory_tools
from veil.agent.tool import ToolResult
from veil.clock import Clock
from veil.context import ContextConfig, ContextEngine, EvictionReport
from veil.context.render import turn_stub
from veil.convergence.attempt import Action
from veil.convergence.monitor import Escalation
from veil.convergence.record import AttemptLog
from veil.embed.protocol import Embedder
from veil.llm.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from veil.memory import Memory
from veil.tape import JSONValue, Store, new_id, open_store

EXPLORATION = frozenset({"read", "grep", "find", "ls"})
_TEST = re.compile(
    r"\b(pytest|py\.test|unittest|tox|nox|go test|cargo test|npm test|yarn test|"
    r"jest|vitest|mocha|rspec|mvn test|gradle test|manage\.py test|make test)\b"
)
_EXIT = re.compile(r"\[exit code (-?\d+)\]\s*$")


def action_of(tool_name: str, arguments: dict[str, Any]) -> Action | None:
    """Which attempts a tool call is: edits, test runs and other commands. Reading is not an
    attempt; memory tools are not either."""
    if tool_name in ("edit", "write"):
        return "edit"
    if tool_name == "bash":
        return "test" if _TEST.search(str(arguments.get("command", ""))) else "command"
    return None


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
        )
        self.escalations: list[Escalation] = []
        self.attempts = AttemptLog(
            store, scope, self.session_id, clock, on_escalation=self._on_escalation
        )
        self.expanded: set[str] = set()
        self._turn_items: dict[int, str] = {}
        self._result_items: dict[int, str] = {}
        self._call_seen: dict[str, int] = {}
        self._seen = 0
        self._briefing = ""
        self._stop: str | None = None
        self.full_outputs: dict[str, str] = {}
        self.tool_tokens = 0
        self.reports: list[EvictionReport] = []
        """Every eviction report, in order (the demo and the TUI read them)."""
        """Tokens of the tool schemas sent with every request (set by whoever builds the
        tool list: ``count_tool_tokens``)."""
        for item in self.engine.items():
            if item.kind == "turn" and item.target and item.target.startswith("turn:"):
                self._turn_items[int(item.target.split(":", 1)[1])] = item.id

    # ---- session start --------------------------------------------------------------

    def start(self, task: str, messages: list[Message] | None = None) -> None:
        """A new task: it becomes the goal (attempts of earlier sessions reload), the intent
        item, and the query of the long-term memory briefing."""
        self.attempts.begin(task)
        if self.memory is not None:
            briefing = self.memory.recall(task, user_id=self.scope, token_budget=600)
            self._briefing = briefing.text
        if messages is not None:
            self.observe(messages)

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
                item = self.engine.capture_turn(
                    "assistant",
                    _turn_text(message),
                    tool_names=[c.name for c in message.tool_calls],
                    target=f"turn:{index}",
                )
                self._turn_items[index] = item.id
        self._seen = len(messages)

    # ---- hooks ---------------------------------------------------------------------

    def hooks(self) -> Hooks:
        return {
            "transform_context": self.transform_context,
            "transform_system": self.transform_system,
            "before_tool_call": self.before_tool_call,
            "after_tool_call": self.after_tool_call,
            "on_turn_end": self.on_turn_end,
        }

    def tools(self) -> list[MemoryTool]:
        return memory_tools(self)

    def count_tool_tokens(self, tools: Sequence[Any]) -> int:
        """Count the schemas of the tools the loop will send, for the window budget."""
        import json

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
        return self.tool_tokens

    def transform_context(self, messages: list[Message]) -> list[Message]:
        """The eviction point: what the model will see. Evicted tool results and turns become
        stubs with pointers; everything else is passed through unchanged."""
        self.observe(messages)
        out = [self._render(index, message) for index, message in enumerate(messages)]
        self.engine.flush()
        return out

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
        note = self.attempts.note() if self.attempts.goal is not None else ""
        parts.append(self.engine.manifest(notes=[note] if note else []))
        prompt = "\n\n".join(p for p in parts if p)
        # What every request costs besides the items: the budget for items is what is left.
        self.engine.overhead_tokens = self.engine.count_tokens(prompt) + self.tool_tokens
        return prompt

    def before_tool_call(self, call: ToolCall) -> Block | None:
        if self.attempts.goal is None:
            return None
        reason = self.attempts.should_block(call.name, cast(dict[str, JSONValue], call.arguments))
        return Block(reason) if reason else None

    def after_tool_call(self, call: ToolCall, result: ToolResult) -> ToolResult | None:
        """Capture → record the attempt → score and evict. Returns the result the model sees
        (with a pointer to the full output when the tool truncated it)."""
        if call.name.startswith("veil_"):
            return None
        content = result.content
        if result.full_output is not None and result.full_output != result.content:
            full = self.engine.add(
                "tool_output", result.full_output, target=f"full output of {call.name} {call.id}"
            )
            self.engine.evict(full.id)
            self.full_outputs[call.id] = full.id
            content = f"{content}\n[full output: {full.pointer}]"
        self.engine.capture_tool_result(
            tool_call_id=call.id,
            tool_name=call.name,
            arguments=call.arguments,
            output=content,
            is_error=result.is_error,
        )
        action = action_of(call.name, call.arguments)
        if action is not None and self.attempts.goal is not None:
            exit_match = _EXIT.search(result.content)
            exit_code = result.details.get("exit_code")
            if exit_code is None and exit_match:
                exit_code = int(exit_match.group(1))
            target = str(call.arguments.get("path") or call.arguments.get("command") or call.name)
            files = [str(call.arguments["path"])] if "path" in call.arguments else []
            self.attempts.record_call(
                action=action,
                target=target[:500],
                tool_name=call.name,
                arguments=cast(dict[str, JSONValue], call.arguments),
                output=result.full_output or result.content,
                exit_code=int(exit_code) if isinstance(exit_code, int) else None,
                is_error=result.is_error,
                tool_call_id=call.id,
                files=files,
            )
        self.reports.append(self.engine.step())
        return replace(result, content=content) if content != result.content else None

    def on_turn_end(self, turn: int) -> Stop | None:
        """The budget check at the turn boundary, and the convergence stop."""
        self.reports.append(self.engine.step())
        if self._stop is not None:
            return Stop(self._stop)
        return None

    def _on_escalation(self, escalation: Escalation) -> None:
        self.escalations.append(escalation)
        self.engine.convergence_warning()
        if escalation.level >= 3:
            self._stop = self.attempts.note()

    # ---- reports --------------------------------------------------------------------

    def attempts_report(self) -> str:
        if self.attempts.goal is None:
            return "no goal yet"
        found = self.attempts.attempts()
        if not found:
            return "no attempts recorded for this goal yet"
        assessment = self.attempts.assess()
        lines = [f"goal {self.attempts.goal.id}: level {assessment.level}; {len(found)} attempts"]
        lines.extend(
            f"- #{a.iteration} {a.action} {a.target}: {a.outcome}"
            f"{' ' + a.fingerprint if a.fingerprint else ''} ({a.session_id})"
            for a in found[-20:]
        )
        return "\n".join(lines)

    def evicted_tool_calls(self) -> set[str]:
        """Tool-call ids whose results are not in the prompt now (the TUI dims them)."""
        return {i.tool_call_id for i in self.engine.items() if i.tool_call_id and i.tier != "live"}


def _turn_text(message: AssistantMessage) -> str:
    """An assistant turn as the prompt carries it: its text and its tool calls' arguments
    (a file written through a tool call costs its tokens in every request)."""
    if not message.tool_calls:
        return message.content
    import json

    calls = "\n".join(
        f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in message.tool_calls
    )
    return f"{message.content}\n{calls}" if message.content else calls
