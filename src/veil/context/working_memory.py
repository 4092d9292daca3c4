"""One session's working memory: its state, what can be read of it, and the one place each
change to it is recorded.

:class:`WorkingMemory` is the part of :class:`~veil.context.engine.ContextEngine` that every
other part is given. It builds the state (the working set, the contradictions, the session
clock, the threshold T, the calibration, the event writer) and holds:

- the query side: the items and their scores, the budget, what the conversation costs, the
  manifest, contradictions, and search over warm and cold items — reads, except that a search
  first makes every demoted item searchable and flushes;
- the recorded changes the other parts go through: a new item (:meth:`~WorkingMemory.add`), an
  access (:meth:`~WorkingMemory.touch`), a tier move (:meth:`~WorkingMemory.move`), a regret
  (:meth:`~WorkingMemory.regret`), and the event buffer (:meth:`~WorkingMemory.emit`) with its
  persistence (``flush``, ``persist_in_background``, ``wait``, ``close``; see
  :class:`~veil.context.writer.ContextWriter` for what a failed write keeps);
- resuming: :meth:`~WorkingMemory.resume` takes back what the tape holds of the session.

The parts over it take it in their constructors and add verbs only: bringing items back
(:class:`~veil.context.restore.Restorer`), the turn boundary
(:class:`~veil.context.boundary.TurnBoundary`), capture and the rest of the model's verbs
(:class:`~veil.context.engine.ContextEngine`, which composes them). Every decision is a pure
function of its own module; these parts hold state and do the I/O.
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
from veil.context.config import ContextConfig
from veil.context.conflicts import Conflict, ConflictBook
from veil.context.items import ContextItem, Tier
from veil.context.manifest import manifest_of
from veil.context.render import stub
from veil.context.resume import read_item, read_session, restore_into
from veil.context.score import Task
from veil.context.search import IndexQueue, find, search_text
from veil.context.threshold import Threshold, on_regret
from veil.context.workingset import WorkingSet
from veil.context.writer import ContextWriter
from veil.embed.protocol import Embedder
from veil.tape import Store
from veil.tape.kinds import EventKind
from veil.tape.recorder import Recorder
from veil.tokens import TokenCounter

P = TypeVar("P")


class UnknownItem(KeyError):
    """An id or pointer that names no item of this project's working memory."""

    def __str__(self) -> str:  # a KeyError would quote its message
        return str(self.args[0]) if self.args else "unknown item"


class WorkingMemory:
    """The state of one session's working memory and the one place each change to it is
    recorded (see the module docstring). Built empty; :meth:`resume` takes back what the tape
    holds of the session."""

    def __init__(
        self,
        store: Store,
        *,
        session_id: str,
        scope: str,
        config: ContextConfig,
        embedder: Embedder | None,
        clock: Clock,
        token_counter: TokenCounter,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.scope = scope
        self.embedder = embedder
        self.clock = clock
        self.count_tokens = token_counter
        self._config = config
        self.working_set = WorkingSet(config, token_counter, embedder)
        """The items, their columns and scores."""
        self.book = ConflictBook()
        """What conflict detection knows: beliefs, and the contradictions between them."""
        self._to_index = IndexQueue()
        self._writer = ContextWriter(
            Recorder(
                store,
                scope=scope,
                actor="veil",
                clock=clock,
                id_prefix="cx",
                provenance={"session_id": session_id},
            ),
            before_take=lambda: self.index_some(self.config.index_per_step),
            off_thread=self.working_set.references.prepare,
        )
        self.tick = 0
        """The session clock: one tick per captured tool call."""
        self.calibration = Calibration()
        self.overhead_tokens = 0
        """What a request costs besides the items (system prompt, tool schemas, the tail)."""
        self.threshold_state = Threshold.start(config.threshold)
        """The AIMD threshold T and the tick of the last regret."""
        self.task_text = ""
        """The task as it was set (the ``context.state`` event keeps its head)."""
        self.expansions = 0
        """Items brought back by an expansion, since this memory was built."""
        self.returns = 0
        """Items out of the prompt that the model asked for again by running their call again
        (a re-read, a re-run): where eviction's cost hides, beside the expansions."""
        self._looks_changed: set[str] = set()
        """Items whose look in a request changed since the last rendering (tier, excerpt,
        size, turn kind): the renderer re-renders from their first entry."""

    # ---- state ------------------------------------------------------------------------

    @property
    def task(self) -> Task:
        return self.working_set.task

    @property
    def config(self) -> ContextConfig:
        return self._config

    @config.setter
    def config(self, value: ContextConfig) -> None:
        self._config = value
        self.working_set.config = value

    @property
    def threshold(self) -> float:
        return self.threshold_state.value

    @property
    def request_budget(self) -> int:
        """What a whole request may come to, in the provider's tokens: ``budget_tokens`` when
        set, else the window minus the reserve (for the reply)."""
        return self.config.request_budget

    @property
    def budget(self) -> int:
        """Tokens the conversation may use, in estimated tokens: :attr:`request_budget`
        converted with the calibration, minus the fixed overhead of each request (system prompt,
        tool schemas, the tail: :attr:`overhead_tokens`, which the turn boundary keeps)."""
        room = self.calibration.estimated(self.request_budget)
        return max(1, room - self.overhead_tokens)

    @property
    def live_tokens(self) -> int:
        """What the conversation costs, in estimated tokens: after a rendering, exactly the
        renderer's count of what is sent (tail aside); between renderings, the working set's
        estimate corrected by what the last rendering measured."""
        return self.working_set.live_tokens()

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced (the store's redactor: what is written to the
        tape and what the engine keeps and re-sends are the same)."""
        return self.store.redactor.redact(text).text

    def state(self) -> events.State:
        """The ``context.state`` event: what a resumed session takes back besides its items
        (:func:`veil.context.resume.read_session`)."""
        return events.State(
            session_id=self.session_id,
            tick=self.tick,
            threshold=self.threshold_state.value,
            last_regret_tick=self.threshold_state.last_regret_tick,
            task=self.task_text[:2000],
            turns=self.working_set.turns,
            ratio=self.calibration.ratio,
            samples=self.calibration.samples,
        )

    def resume(self) -> bool:
        """Take back what the tape holds of this session (its items, contradictions, clock,
        threshold, task and calibration). Whether one of its items is the session's intent."""
        resumed = read_session(self.store, scope=self.scope, session_id=self.session_id)
        has_intent = restore_into(resumed, self.working_set, self.book, self._to_index)
        if resumed.threshold is not None:
            self.tick = resumed.tick
            self.threshold_state = resumed.threshold
            self.task_text = resumed.task
            self.calibration = resumed.calibration
        return has_intent

    # ---- the query side ---------------------------------------------------------------

    def items(self, tier: Tier | None = None) -> list[ContextItem]:
        return [i for i in self.working_set.items.values() if tier is None or i.tier == tier]

    def item(self, item_id: str) -> ContextItem:
        """An item by id (or by the id of the tool call whose result it holds)."""
        ws = self.working_set
        try:
            return ws.items[ws.call_item(item_id) or item_id]
        except KeyError:
            raise UnknownItem(f"no context item {item_id!r} in this session") from None

    def by_tool_call(self, tool_call_id: str) -> ContextItem | None:
        item_id = self.working_set.call_item(tool_call_id)
        return self.working_set.items.get(item_id) if item_id else None

    def items_for_call(self, tool_call_id: str) -> list[ContextItem]:
        """Every item holding a result of ``tool_call_id``, oldest first."""
        return self.working_set.items_for_call(tool_call_id)

    def is_live(self, item_id: str) -> bool:
        return self.item(item_id).tier == "live"

    def stub(self, item_id: str) -> str:
        return stub(self.item(item_id), self.config.stub_chars, self.config.expand_tool)

    def scores(self) -> dict[str, float]:
        values = self.working_set.scores(self.tick)
        return {item_id: float(values[i]) for i, item_id in enumerate(self.working_set.ids)}

    def conflicts(self, *, unresolved_only: bool = True) -> list[Conflict]:
        return self.book.list(unresolved_only=unresolved_only)

    def manifest(self, notes: Sequence[str] = ()) -> str:
        """What is loaded, in at most ``manifest_max_share`` of the window (see
        :mod:`veil.context.manifest`)."""
        return manifest_of(
            self.working_set,
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
        self.index_some(None)
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
            item = self.working_set.items.get(item_id) or self.adopt(item_id)
            if item is not None:
                out.append(item)
        return out[:limit]

    def adopt(self, item_id: str) -> ContextItem | None:
        """An item of another session of this project (scope-bound: never another project),
        adopted into this session's working set."""
        adopted = read_item(
            self.store, scope=self.scope, item_id=item_id, session_id=self.session_id
        )
        if adopted is not None:
            self.working_set.add(adopted)
        return adopted

    # ---- recorded changes -------------------------------------------------------------

    def add(self, item: ContextItem) -> ContextItem:
        """A new item joins the working set and the tape."""
        self.working_set.add(item)
        self.emit(events.ITEM, events.ItemAdded(item))
        return item

    def update(self, item: ContextItem, *, look_changed: bool = False) -> None:
        """An item's new state (``look_changed``: how a request shows it changed too)."""
        self.working_set.update(item)
        if look_changed:
            self._looks_changed.add(item.id)

    def take_looks_changed(self) -> set[str]:
        """The items whose look changed since the last call (the renderer re-renders from
        their first entry)."""
        changed, self._looks_changed = self._looks_changed, set()
        return changed

    def touch(self, item_id: str) -> ContextItem:
        """A recall: the model used, reloaded or re-referenced the item. FSRS raises its
        stability on both horizons — more when it was recalled late."""
        item = self.item(item_id)
        updated = recalled(item, tick=self.tick, now=self.clock.now(), config=self.config)
        self.working_set.update(updated)
        self.emit(events.ACCESS, events.accessed(updated, self.tick))
        return updated

    def move(
        self, item: ContextItem, tier: Tier, *, stage: int, reason: str, excerpt: int = 0
    ) -> ContextItem:
        """The one place a tier changes: the working set, the renderer's changed looks, the
        ``context.tier`` event, and whether the item waits to be made searchable."""
        updated = replace(item, tier=tier, excerpt=excerpt if tier != "live" else 0)
        self.update(updated, look_changed=True)
        self.emit(
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

    def regret(self, item_id: str, how: str) -> None:
        """An evicted item came back (``how``): multiplicative decrease of T."""
        if how == "expanded":
            self.expansions += 1
        else:
            self.returns += 1
        self.back_off()
        self.emit(
            events.REGRET,
            events.Regret(
                id=item_id, how=how, tick=self.tick, threshold=self.threshold_state.value
            ),
        )

    def back_off(self) -> None:
        """Multiplicative decrease of T (a regret, or the convergence monitor escalated)."""
        self.threshold_state = on_regret(
            self.threshold_state, tick=self.tick, config=self.config.threshold
        )

    def index_some(self, limit: int | None) -> None:
        """Make up to ``limit`` demoted items searchable (all when None)."""
        for item_id in self._to_index.take(limit):
            text = search_text(self.working_set.items[item_id])
            self.emit(events.INDEXED, events.Indexed(item_id, text))

    # ---- persistence ------------------------------------------------------------------

    def emit(self, kind: EventKind[P], payload: P) -> None:
        """Buffer one event (see :meth:`flush`)."""
        self._writer.emit(kind, payload)

    def flush(self) -> None:
        """Append every buffered event now, in one transaction (after any background write).
        Explicit verbs flush; capture buffers; a turn boundary flushes unless deferred. See
        :class:`~veil.context.writer.ContextWriter` for what a failed write keeps."""
        self._writer.flush()

    def persist_in_background(self) -> Future[None]:
        """Queue the buffered events for one append on the writer thread and return at once
        (the harness calls this as the model request goes out)."""
        return self._writer.persist_in_background()

    def wait(self) -> None:
        """Block until queued background writes are on the tape; raise if one failed."""
        self._writer.wait()

    def close(self) -> None:
        """Persist everything buffered and stop the writer thread (the store stays open)."""
        self._writer.close()


__all__ = ["UnknownItem", "WorkingMemory"]
