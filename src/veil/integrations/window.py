"""A framework's conversation through Veil's context engine: the part both adapters share.

An adapter describes its framework's history as :class:`~veil.context.transcript.Found`
messages and hands them to :meth:`ContextWindow.render`, one turn boundary: the transcript
finds or captures each message's item (:mod:`veil.context.transcript`), the engine scores,
evicts and renders with the one renderer every surface uses (:mod:`veil.context.window`), and
the adapter translates the parts back into its framework's messages. A history read again —
or by a new process on the same store and session — captures nothing twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from veil.context import ContextEngine, EvictionReport
from veil.context.transcript import Found, Transcript
from veil.context.window import Rendered
from veil.verbs import CATALOGUE, Verb

PREFIX = "veil_"


def tool_name(verb: Verb) -> str:
    """A catalogue verb's tool as both adapters offer it."""
    return PREFIX + verb.name


EXPAND_TOOL = tool_name(CATALOGUE["expand"])
"""The adapters' tool that restores a pointer: the name stubs and the manifest give the model."""


@dataclass(frozen=True)
class WindowReport:
    """What one :meth:`ContextWindow.render` did: the rendering, the eviction report, and the
    tokens of the conversation with every item in full (``tokens_full``) and as rendered."""

    rendered: Rendered
    report: EvictionReport
    tokens_full: int

    @property
    def tokens_rendered(self) -> int:
        return self.rendered.tokens

    @property
    def results(self) -> int:
        """Tool results in the rendered conversation."""
        return sum(1 for p in self.rendered.parts if p.role == "tool")

    @property
    def evicted(self) -> tuple[str, ...]:
        return tuple(m.id for m in self.report.moves if m.to != "live")


class ContextWindow:
    """One conversation kept in a :class:`ContextEngine` (whose store and session it uses).
    ``fixed_overhead_tokens`` is what each request costs that the history does not show
    (instructions, tool schemas). ``collapse`` and ``tail``: see
    :meth:`ContextEngine.window`. Stubs and the manifest name the adapters' expand tool,
    :data:`EXPAND_TOOL` (the engine's ``config.expand_tool`` is set to it)."""

    def __init__(
        self,
        engine: ContextEngine,
        *,
        fixed_overhead_tokens: int = 0,
        collapse: bool = True,
        tail: bool = True,
    ) -> None:
        if fixed_overhead_tokens < 0:
            raise ValueError("fixed_overhead_tokens must not be negative")
        if engine.config.expand_tool != EXPAND_TOOL:
            engine.config = replace(engine.config, expand_tool=EXPAND_TOOL)
        self.engine = engine
        self.fixed_overhead_tokens = fixed_overhead_tokens
        self.collapse = collapse
        self.tail = tail
        self.transcript = Transcript(engine, expand_tools=(EXPAND_TOOL,))

    def render(self, found: Sequence[Found], *, other_tokens: int = 0) -> WindowReport:
        """One turn boundary over the conversation (see the module docstring). The first user
        message sets the task relevance is measured against. ``other_tokens``: what the
        request carries that ``found`` does not describe."""
        entries = self.transcript.entries(found)
        count = self.engine.count_tokens
        full = sum(
            (self.engine.item(e.item).tokens if e.item else count(e.text)) + e.extra_tokens
            for e in entries
        )
        boundary = self.engine.window(
            entries,
            fixed_tokens=self.fixed_overhead_tokens + other_tokens,
            collapse=self.collapse,
            tail=self.tail,
        )
        return WindowReport(boundary.rendered, boundary.report, full)

    def expand(self, pointer: str, *, call_id: str | None = None) -> str:
        """The ``veil_expand`` tool: the item's full content, byte-identical, and the item is
        live again (a regret for the engine). ``call_id`` is the expanding call's id, so the
        content is shown in its result and not a second time in place. Raises
        :class:`~veil.context.UnknownItem` for a pointer that names nothing."""
        return self.transcript.expand(pointer, call_id=call_id)
