"""The catalogue's verbs for the framework adapters (:mod:`veil.verbs`): ``veil_recall``,
``veil_remember`` and ``veil_expand``, with the catalogue's descriptions and schemas.

:class:`AdapterVerbs` binds them once, when the tools are built, to one ``user_id`` and one
author — the model never names whose memory it reads or who is speaking (the known fault of
trusting the caller) — and, with a :class:`ContextWindow`, to the conversation's working memory:
recall then also lists earlier tool results that match, with the pointer that restores each.
Recall never calls a model. Each adapter turns a verb into its framework's tool
(:mod:`veil.integrations.pydantic_ai`, :mod:`veil.integrations.openai_agents`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from veil.context import ContextItem
from veil.integrations.window import EXPAND_TOOL, PREFIX, ContextWindow, tool_name
from veil.memory import Memory
from veil.memory.model import Author
from veil.verbs import Binding, Earlier, Restored, Services, Surface, Verb, offered
from veil.verbs.signature import ArgumentError

RECALL_MIN_SIMILARITY = 0.3


def _restored(item: ContextItem, content: str) -> Restored:
    return Restored(
        item.id, item.pointer, item.tool_name or item.kind, item.target or "", item.tokens, content
    )


@dataclass(frozen=True)
class WindowWorkingMemory:
    """A conversation's :class:`ContextWindow` as the verbs' working memory. ``call_id`` is the
    expanding call's id, so the content is shown in its result and not a second time in
    place."""

    window: ContextWindow
    call_id: str | None = None
    expand_tool: str = EXPAND_TOOL

    def search(self, query: str, *, limit: int) -> Sequence[Earlier]:
        found = self.window.engine.search(query, limit=limit, min_similarity=RECALL_MIN_SIMILARITY)
        return [
            Earlier(i.pointer, i.tool_name or i.kind, i.target or "", i.tokens)
            for i in found
            if i.tier != "live"
        ]

    def expand(self, pointer: str) -> Restored:
        content = self.window.expand(pointer, call_id=self.call_id)
        return _restored(self.window.engine.resolve_pointer(pointer), content)

    load = expand


@dataclass(frozen=True)
class AdapterVerbs:
    """The verbs an adapter offers, bound to whose memory and whose word (see the module
    docstring)."""

    memory: Memory | None
    user_id: str = ""
    author: Author = "assistant"
    window: ContextWindow | None = None

    def offered(self, surface: Surface, names: Sequence[str] | None = None) -> list[Verb]:
        """The verbs of ``surface`` that can work here (``names`` narrows them)."""
        services = self.services()
        return [
            v
            for v in offered(surface)
            if (names is None or v.name in names) and v.available(services)
        ]

    def services(self, call_id: str | None = None) -> Services:
        working = WindowWorkingMemory(self.window, call_id) if self.window is not None else None
        return Services(memory=self.memory, working=working)

    async def run(
        self, verb: Verb, arguments: Mapping[str, object], call_id: str | None = None
    ) -> str:
        """The verb's text for the model; a bad argument or an unknown pointer raises
        :class:`LookupError` / :class:`ValueError` (each adapter answers it its own way)."""
        who = Binding(user_id=self.user_id, author=self.author)
        return verb.text(await verb.acall(self.services(call_id), who, arguments))


def refusal(verb: Verb, exc: Exception) -> str:
    """What the model reads when a verb refuses (a bad argument, a pointer naming nothing)."""
    hint = "; use the veil:// pointer a stub shows" if verb.name == "expand" else ""
    return f"{exc}{hint}"


__all__ = ["PREFIX", "AdapterVerbs", "ArgumentError", "WindowWorkingMemory", "refusal", "tool_name"]
