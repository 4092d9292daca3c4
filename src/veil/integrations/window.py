"""A framework's conversation through Veil's context engine: the part both adapters share.

An adapter walks its framework's history and hands :meth:`ContextWindow.render` the tool
results in order (:class:`FoundResult`), plus the tokens of everything else the request
carries. ``render`` is one turn boundary:

1. every result not seen before is captured (one tick of the session clock); a result is
   known by its call id and by how many results with that id came before it, so a history
   read again — or by a new process on the same store and session — is not captured twice;
2. the engine scores and evicts (:meth:`ContextEngine.step`), the request's other tokens
   counting as overhead;
3. each result gets the text the model is to see: ``None`` (as it is), its full content (it
   was a stub in the history and has been expanded since), or the engine's one-line stub,
   which names the tool, the target and the ``veil_expand`` pointer that restores it.

A live item is shown in full in one place only — the latest result carrying it: its own
call, or a later ``veil_expand`` call that restored it — so an expanded result is not paid
for twice; an earlier place shows a one-line note instead. Results of the memory tools
themselves (:data:`UNTRACKED`) are never captured; they count as overhead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from veil.context import ContextEngine, UnknownItem

EXPAND_TOOL = "veil_expand"
UNTRACKED = frozenset({EXPAND_TOOL, "veil_recall", "veil_remember"})
"""Tools whose results are not working-memory items: Veil's own."""


@dataclass(frozen=True)
class FoundResult:
    """A tool result as the adapter found it in the framework's history."""

    call_id: str
    tool_name: str
    output: str
    arguments: Mapping[str, Any] = field(default_factory=lambda: {})
    is_error: bool = False


@dataclass(frozen=True)
class WindowReport:
    """What one :meth:`ContextWindow.render` did: the texts to show (``None``: as found), the
    items evicted at this boundary, and the tokens of the results in full and as rendered."""

    texts: tuple[str | None, ...]
    evicted: tuple[str, ...]
    tokens_full: int
    tokens_rendered: int


class ContextWindow:
    """Tool results of one conversation kept in a :class:`ContextEngine` (whose store and
    session it uses). ``fixed_overhead_tokens`` is what each request costs that the history
    does not show (instructions, tool schemas)."""

    def __init__(self, engine: ContextEngine, *, fixed_overhead_tokens: int = 0) -> None:
        if fixed_overhead_tokens < 0:
            raise ValueError("fixed_overhead_tokens must not be negative")
        self.engine = engine
        self.fixed_overhead_tokens = fixed_overhead_tokens
        self._expansions: dict[str, str] = {}
        self._task_set = bool(engine.task.tags)

    def render(
        self, results: Sequence[FoundResult], *, other_tokens: int = 0, task: str | None = None
    ) -> WindowReport:
        """One turn boundary over the results in history order (see the module docstring).
        ``task`` (the conversation's first user message) sets what relevance is measured
        against, once."""
        if task and not self._task_set:
            self.engine.set_task(task)
            self._task_set = True
        seen: dict[str, int] = {}
        placed: list[str | None] = []
        overhead = other_tokens + self.fixed_overhead_tokens
        for result in results:
            item_id = self._item_for(result, seen)
            if item_id is None:
                overhead += self.engine.count_tokens(result.output)
            placed.append(item_id)
        report = self.engine.step(overhead_tokens=overhead)
        last = {item_id: i for i, item_id in enumerate(placed) if item_id is not None}
        texts: list[str | None] = []
        full = rendered = 0
        count = self.engine.count_tokens
        for i, (result, item_id) in enumerate(zip(results, placed, strict=True)):
            text = None if item_id is None else self._text(result, item_id, last[item_id] == i)
            texts.append(text)
            full += count(result.output) if item_id is None else self.engine.item(item_id).tokens
            rendered += count(result.output if text is None else text)
        evicted = tuple(m.id for m in report.moves if m.to != "live")
        return WindowReport(tuple(texts), evicted, full, rendered)

    def _item_for(self, result: FoundResult, seen: dict[str, int]) -> str | None:
        if result.tool_name == EXPAND_TOOL:
            if result.is_error:
                return None
            known = self._expansions.get(result.call_id)
            if known is not None:
                return known
            pointer = result.arguments.get("pointer")
            try:
                item = self.engine.resolve_pointer(str(pointer)) if pointer else None
            except UnknownItem:
                return None
            if item is None:
                return None
            self._expansions[result.call_id] = item.id
            return item.id
        if result.tool_name in UNTRACKED:
            return None
        k = seen.get(result.call_id, 0)
        seen[result.call_id] = k + 1
        earlier = self.engine.items_for_call(result.call_id)
        if k < len(earlier):
            return earlier[k].id
        item = self.engine.capture_tool_result(
            tool_call_id=result.call_id,
            tool_name=result.tool_name,
            output=result.output,
            is_error=result.is_error,
            arguments=result.arguments,
            target=_target(result.arguments),
        )
        return item.id

    def _text(self, result: FoundResult, item_id: str, carries: bool) -> str | None:
        item = self.engine.item(item_id)
        if item.tier != "live":
            return self.engine.stub(item_id)
        if not carries:
            what = f"{item.tool_name or item.kind} {item.target or ''}".strip()
            return f"[veil: {what} — shown in full further down, where {EXPAND_TOOL} restored it]"
        return None if result.output == item.content else item.content

    def expand(self, pointer: str, *, call_id: str | None = None) -> str:
        """The ``veil_expand`` tool: the item's full content, byte-identical, and the item is
        live again (a regret for the engine). ``call_id`` is the expanding call's id, so the
        content is shown in its result and not a second time in place. Raises
        :class:`UnknownItem` for a pointer that names nothing."""
        item = self.engine.expand(pointer)
        self.engine.flush()
        if call_id:
            self._expansions[call_id] = item.id
        return item.content


def _target(arguments: Mapping[str, Any]) -> str | None:
    """What a call addressed, for its stub and for noticing a call made again: its scalar
    arguments in name order (the engine knows no tool by name)."""
    parts = [str(v) for _, v in sorted(arguments.items()) if isinstance(v, str | int | float)]
    text = " ".join(parts).strip()
    return text[:200] or None


EXPAND_DESCRIPTION = (
    "Bring back the full text of an earlier tool result that was replaced by a one-line "
    "[veil: ...] stub to keep the context small. Call it only when you need that content "
    "again; the stub names what it was."
)
POINTER_DESCRIPTION = (
    "The pointer from the stub, e.g. veil://warm/ci_0123abcd (the id of the tool call whose "
    "result it was works too)."
)
