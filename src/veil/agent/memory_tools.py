"""The memory tools the model can call: the catalogue's agent verbs, named ``veil_<verb>``
(:mod:`veil.verbs`; docs/tools.md).

Names, descriptions and argument schemas come from the catalogue; this module binds them to a
session — its engine, its attempt log, the project's long-term memory and scope — and keeps
the two logs the harness reads back after each call. Only tools that can work are offered:
without a long-term memory (``Layers.memory`` is None) there is no ``veil_remember`` nor
``veil_history``, and ``veil_recall`` searches earlier context only; with a memory that has no
extraction model (a scripted run) there is no ``veil_remember``.

Errors (an unknown pointer, a bad argument, a missing model) become error results the model
reads; nothing here raises into the loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from veil.agent.tool import ToolContext, ToolResult
from veil.context import ContextEngine
from veil.context.items import ContextItem
from veil.convergence.record import AttemptLog
from veil.llm.messages import ToolSpec
from veil.memory import Fact, Memory
from veil.verbs import CATALOGUE, Binding, Earlier, Restored, Services, Verb, offered
from veil.verbs.attempt_verbs import attempts as attempts_verb
from veil.verbs.memory_verbs import RecallAnswer

PREFIX = "veil_"
EXPAND_TOOL = PREFIX + CATALOGUE["expand"].name
"""The agent's tool that restores a pointer (the catalogue's ``expand``): the name every stub,
the manifest and the system prompt give the model."""
RECALL_MIN_SIMILARITY = 0.3
"""Earlier context found only by embedding similarity is listed by ``veil_recall`` when its
cosine with the query reaches this (text matches are always listed)."""


@dataclass
class Layers:
    """What the memory tools work on: the session's engine and attempt log, the project's
    long-term memory (None when off), and two logs the harness reads back after each call —
    items the model brought back (``expanded``) and facts recall showed it (``recalled``)."""

    engine: ContextEngine
    attempts: AttemptLog
    memory: Memory | None
    scope: str
    session_id: str
    expanded: list[tuple[str, bool]] = field(default_factory=lambda: [])
    """(item id, whether the call brought it into the prompt) for each expansion or load."""
    recalled: list[Fact] = field(default_factory=lambda: [])


def _restored(item: ContextItem) -> Restored:
    return Restored(
        item.id, item.pointer, item.tool_name or item.kind, item.target or "", item.tokens,
        item.content,
    )  # fmt: skip


@dataclass(frozen=True)
class SessionWorkingMemory:
    """The session's engine as the verbs' working memory: a restore is a tool call (the clock
    advances: its result is the item it brings back) and is logged for the harness."""

    layers: Layers
    expand_tool: str = EXPAND_TOOL

    def search(self, query: str, *, limit: int) -> Sequence[Earlier]:
        found = self.layers.engine.search(query, limit=limit, min_similarity=RECALL_MIN_SIMILARITY)
        return [Earlier(i.pointer, i.tool_name or i.kind, i.target or "", i.tokens) for i in found]

    def expand(self, pointer: str) -> Restored:
        return self._restore(pointer, self.layers.engine.expand)

    def load(self, pointer: str) -> Restored:
        return self._restore(pointer, self.layers.engine.load)

    def _restore(self, pointer: str, how: Callable[[str], ContextItem]) -> Restored:
        engine = self.layers.engine
        restored = engine.restores(pointer)
        engine.advance_clock()
        item = how(pointer)
        self.layers.expanded.append((item.id, restored))
        return _restored(item)


@dataclass(frozen=True)
class MemoryTool:
    """One catalogue verb as the agent's tool, bound to a session."""

    spec: ToolSpec
    verb: Verb
    layers: Layers
    services: Services
    mutates: bool = False
    """Memory is not the user's files: no approval is asked for a memory verb."""
    parallel_safe: bool = False

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        log = self.layers.attempts
        who = Binding(
            user_id=self.layers.scope,
            author="assistant",
            session_id=self.layers.session_id,
            goal_id=log.goal.id if log.goal is not None else None,
        )
        try:
            result = self.verb.call(self.services, who, arguments)
        except (LookupError, ValueError, TypeError) as exc:
            return ToolResult(f"{self.spec.name}: {exc}", is_error=True)
        except Exception as exc:  # the model reads the failure; the loop goes on
            return ToolResult(
                f"{self.spec.name} failed: {type(exc).__name__}: {exc}", is_error=True
            )
        if isinstance(result, RecallAnswer) and result.recall is not None:
            self.layers.recalled.extend(result.recall.facts)
        return ToolResult(self.verb.text(result))


def attempts_report(log: AttemptLog) -> str:
    """The current goal's record as the model reads it (the ``attempts`` verb's text)."""
    if log.goal is None:
        return "no goal yet"
    who = Binding(user_id=log.scope, goal_id=log.goal.id)
    return attempts_verb.text(attempts_verb.call(Services(attempts=log), who, {}))


def memory_tools(layers: Layers) -> list[MemoryTool]:
    """The agent's verbs that can work over ``layers`` (see the module docstring)."""
    services = Services(
        memory=layers.memory,
        working=SessionWorkingMemory(layers),
        engine=layers.engine,
        attempts=layers.attempts,
    )
    return [
        MemoryTool(ToolSpec(PREFIX + v.name, v.description, v.schema), v, layers, services)
        for v in offered("agent")
        if v.available(services)
    ]
