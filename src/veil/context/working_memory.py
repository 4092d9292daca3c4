"""One session's working memory: its state, what can be read of it, and the one place each
change to it is recorded.

:class:`WorkingMemory` is the bottom layer of :class:`~veil.context.engine.ContextEngine`. It
declares every piece of state the engine keeps (built by the engine's constructor) and holds:

- the query side: the items and their scores, the budget, what the conversation costs, the
  manifest, contradictions, and search over warm and cold items — reads, except that a search
  first makes every demoted item searchable and flushes;
- the recorded changes every layer above goes through: an access (:meth:`touch`), a tier move
  (``_move``), a regret (``_regret``), and the event buffer (``_emit``) with its persistence
  (:meth:`flush`, :meth:`persist_in_background`, :meth:`wait`, :meth:`close`; see
  :class:`~veil.context.writer.ContextWriter` for what a failed write keeps).

The layers above it add verbs only: bringing items back (:mod:`veil.context.restore`), the turn
boundary (:mod:`veil.context.boundary`), capture and the rest of the model's verbs
(:mod:`veil.context.engine`). Every decision is a pure function of its own module; this layer
and the ones above hold state and do the I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import replace
from typing import TypeVar

from veil.clock import Clock
from veil.context import events
from veil.context.access import recalled
from veil.context.calibration import Calibration
from veil.context.codegraph import CodeGraph
from veil.context.config import ContextConfig
from veil.context.conflicts import Conflict, ConflictBook
from veil.context.eviction import Bools
from veil.context.items import ContextItem, Tier
from veil.context.manifest import manifest_of
from veil.context.render import stub
from veil.context.resume import read_item
from veil.context.score import Task
from veil.context.search import IndexQueue, find, search_text
from veil.context.threshold import Threshold, on_regret
from veil.context.window import Renderer
from veil.context.workingset import WorkingSet
from veil.context.writer import ContextWriter
from veil.embed.protocol import Embedder
from veil.tape import Store
from veil.tape.kinds import EventKind
from veil.tokens import TokenCounter, TokenMemo

P = TypeVar("P")


class UnknownItem(KeyError):
    """An id or pointer that names no item of this project's working memory."""

    def __str__(self) -> str:  # a KeyError would quote its message
        return str(self.args[0]) if self.args else "unknown item"


class WorkingMemory:
    """The state of one session's working memory (see the module docstring)."""

    store: Store
    session_id: str
    scope: str
    embedder: Embedder | None
    clock: Clock
    count_tokens: TokenCounter
    deferred: bool
    """Whether :meth:`~veil.context.boundary.TurnBoundary.step` leaves its events buffered
    for :meth:`persist_in_background` instead of flushing them."""
    calibration: Calibration
    graph: CodeGraph | None
    tick: int
    """The session clock: one tick per captured tool call."""
    overhead_tokens: int
    """What a request costs besides the items (system prompt, tool schemas, the tail)."""
    _config: ContextConfig
    _set: WorkingSet
    _book: ConflictBook
    _writer: ContextWriter
    _to_index: IndexQueue
    _threshold: Threshold
    _has_intent: bool
    _task_text: str
    _boundary_tick: int
    """The tick of the last step."""
    _step_boundary: int
    """The boundary before the last step: results captured after it were unread there."""
    _unread: Bools
    """The rows of the results unread at the current boundary."""
    _requests: int
    """Requests of the conversation so far (turn boundaries, or its assistant messages)."""
    _batches: int
    """Batches of evictions this engine ran."""
    _manifest_text: tuple[int, str] | None
    """The manifest as of the last batch (and the open contradictions it counted)."""
    expansions: int
    """Items brought back by an expansion, since this engine started."""
    returns: int
    """Items out of the prompt that the model asked for again by running their call again (a
    re-read, a re-run): where eviction's cost hides, beside the expansions."""
    _count: TokenMemo
    """The renderer's counter: the same counts, remembered for texts seen again."""
    _renderer: Renderer | None
    _looks_changed: set[str]
    """Items whose look in a request changed since the last rendering (tier, excerpt, size,
    turn kind): the renderer re-renders from their first entry."""
    _tail_tokens: int

    # ---- state ------------------------------------------------------------------------

    @property
    def task(self) -> Task:
        return self._set.task

    @property
    def config(self) -> ContextConfig:
        return self._config

    @config.setter
    def config(self, value: ContextConfig) -> None:
        self._config = value
        if hasattr(self, "_set"):
            self._set.config = value
            self._renderer = None  # stub length may have changed: render everything

    @property
    def threshold(self) -> float:
        return self._threshold.value

    @property
    def request_budget(self) -> int:
        """What a whole request may come to, in the provider's tokens: ``budget_tokens`` when
        set, else the window minus the reserve (for the reply)."""
        return self.config.request_budget

    @property
    def budget(self) -> int:
        """Tokens the conversation may use, in estimated tokens: :attr:`request_budget`
        converted with the calibration, minus the fixed overhead of each request (system prompt,
        tool schemas, the tail), which the caller passes to :meth:`step` or :meth:`window`."""
        room = self.calibration.estimated(self.request_budget)
        return max(1, room - self.overhead_tokens)

    @property
    def batches(self) -> int:
        """Batches of evictions run so far."""
        return self._batches

    @property
    def live_tokens(self) -> int:
        """What the conversation costs, in estimated tokens: after :meth:`window`, exactly the
        renderer's count of what is sent (tail aside); between renderings, the working set's
        estimate corrected by what the last rendering measured."""
        return self._set.live_tokens()

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced (the store's redactor: what is written to the
        tape and what the engine keeps and re-sends are the same)."""
        return self.store.redactor.redact(text).text

    # ---- the query side ---------------------------------------------------------------

    def items(self, tier: Tier | None = None) -> list[ContextItem]:
        return [i for i in self._set.items.values() if tier is None or i.tier == tier]

    def item(self, item_id: str) -> ContextItem:
        """An item by id (or by the id of the tool call whose result it holds)."""
        try:
            return self._set.items[self._set.call_item(item_id) or item_id]
        except KeyError:
            raise UnknownItem(f"no context item {item_id!r} in this session") from None

    def by_tool_call(self, tool_call_id: str) -> ContextItem | None:
        item_id = self._set.call_item(tool_call_id)
        return self._set.items.get(item_id) if item_id else None

    def items_for_call(self, tool_call_id: str) -> list[ContextItem]:
        """Every item holding a result of ``tool_call_id``, oldest first."""
        return self._set.items_for_call(tool_call_id)

    def is_live(self, item_id: str) -> bool:
        return self.item(item_id).tier == "live"

    def stub(self, item_id: str) -> str:
        return stub(self.item(item_id), self.config.stub_chars, self.config.expand_tool)

    def scores(self) -> dict[str, float]:
        values = self._set.scores(self.tick)
        return {item_id: float(values[i]) for i, item_id in enumerate(self._set.ids)}

    def conflicts(self, *, unresolved_only: bool = True) -> list[Conflict]:
        return self._book.list(unresolved_only=unresolved_only)

    def manifest(self, notes: Sequence[str] = ()) -> str:
        """What is loaded, in at most ``manifest_max_share`` of the window (see
        :mod:`veil.context.manifest`)."""
        return manifest_of(
            self._set,
            tick=self.tick,
            threshold=self.threshold,
            budget=self.budget,
            conflicts=[c.describe() for c in self.conflicts()],
            notes=notes,
        )

    def search(
        self, query: str, limit: int = 10, *, min_similarity: float = -1.0
    ) -> list[ContextItem]:
        """Warm and cold items of this project matching ``query``: full-text matches first, then
        nearest neighbours by embedding whose cosine with the query is at least
        ``min_similarity`` (a neighbour is always *some* item; the floor keeps unrelated ones
        out)."""
        self._index_some(None)
        self.flush()
        found = find(
            self.store,
            scope=self.scope,
            query=query,
            limit=limit,
            vectors=self.embedder is not None,
            min_similarity=min_similarity,
        )
        out: list[ContextItem] = []
        for item_id in found:
            item = self._set.items.get(item_id) or self._load_foreign(item_id)
            if item is not None:
                out.append(item)
        return out[:limit]

    def _load_foreign(self, item_id: str) -> ContextItem | None:
        """An item of another session of this project (scope-bound: never another project),
        adopted into this session's working set."""
        adopted = read_item(
            self.store, scope=self.scope, item_id=item_id, session_id=self.session_id
        )
        if adopted is not None:
            self._set.add(adopted)
        return adopted

    # ---- recorded changes -------------------------------------------------------------

    def touch(self, item_id: str) -> ContextItem:
        """A recall: the model used, reloaded or re-referenced the item. FSRS raises its
        stability on both horizons — more when it was recalled late."""
        item = self.item(item_id)
        updated = recalled(item, tick=self.tick, now=self.clock.now(), config=self.config)
        self._set.update(updated)
        self._emit(events.ACCESS, events.accessed(updated, self.tick))
        return updated

    def _move(
        self, item: ContextItem, tier: Tier, *, stage: int, reason: str, excerpt: int = 0
    ) -> ContextItem:
        """The one place a tier changes: the working set, the renderer's changed looks, the
        ``context.tier`` event, and whether the item waits to be made searchable."""
        updated = replace(item, tier=tier, excerpt=excerpt if tier != "live" else 0)
        self._set.update(updated)
        self._looks_changed.add(item.id)
        self._emit(
            events.TIER,
            events.TierMoved(
                id=item.id,
                tier=tier,
                stage=stage,
                reason=reason,
                tick=self.tick,
                excerpt=updated.excerpt,
            ),
        )
        if tier == "live":
            self._to_index.restored(item.id)
        elif item.tier == "live":
            self._to_index.demoted(item.id)
        return updated

    def _regret(self, item_id: str, how: str) -> None:
        """An evicted item came back (``how``): multiplicative decrease of T."""
        if how == "expanded":
            self.expansions += 1
        else:
            self.returns += 1
        self._threshold = on_regret(self._threshold, tick=self.tick, config=self.config.threshold)
        self._emit(
            events.REGRET,
            events.Regret(id=item_id, how=how, tick=self.tick, threshold=self._threshold.value),
        )

    def _index_some(self, limit: int | None) -> None:
        """Make up to ``limit`` demoted items searchable (all when None)."""
        for item_id in self._to_index.take(limit):
            text = search_text(self._set.items[item_id])
            self._emit(events.INDEXED, events.Indexed(item_id, text))

    # ---- persistence ------------------------------------------------------------------

    def _emit(self, kind: EventKind[P], payload: P) -> None:
        self._writer.emit(kind, payload)

    def flush(self) -> None:
        """Append every buffered event now, in one transaction (after any background write).
        Explicit verbs flush; capture buffers; ``step`` flushes unless deferred. See
        :class:`~veil.context.writer.ContextWriter` for what a failed write keeps."""
        self._writer.flush()

    def persist_in_background(self) -> Future[None]:
        """Queue the buffered events for one append on the engine's writer thread and return
        at once (the harness calls this as the model request goes out)."""
        return self._writer.persist_in_background()

    def wait(self) -> None:
        """Block until queued background writes are on the tape; raise if one failed."""
        self._writer.wait()

    def close(self) -> None:
        """Persist everything buffered and stop the writer thread (the store stays open)."""
        self._writer.close()


__all__ = ["UnknownItem", "WorkingMemory"]
