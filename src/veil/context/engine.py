"""The context engine: working memory for one agent session, over the tape.

Every tool call passes through ``capture`` (an item on the tape), scoring (pure arithmetic over
numpy columns) and eviction (three stages, :mod:`veil.context.eviction`) at ``step``. Nothing is
dropped: items move live → warm → cold, and ``expand`` restores any of them byte-identical from
the tape. Decisions are pure functions; this class holds state and does the I/O.

The session clock is the tick: one per captured tool call. Live-tier decay runs on ticks, so a
session left idle overnight has not forgotten anything when it resumes.

Persistence is buffered: capture and ``step`` decide in memory and queue their events; ``flush``
appends them (and indexes what was demoted) in one transaction. With ``deferred=True`` ``step``
does not flush; the caller persists with :meth:`ContextEngine.persist_in_background` while the
model request is in flight (the harness does), so the hook on the tool-call path is arithmetic
only. An event counts as acknowledged once its flush returned; a crash before that loses only
decisions the model has not yet acted on, never a written event.

:class:`ContextEngine` composes three parts, each given what it uses:
:class:`~veil.context.working_memory.WorkingMemory` (``memory``: the state, the query side, the
recorded changes and their persistence), :class:`~veil.context.restore.Restorer`
(``restorer``, over the memory: pointers, ``expand``, ``load``, ``pin``) and
:class:`~veil.context.boundary.TurnBoundary` (``boundary``, over the memory: ``step``,
``window``, ``render``). Here: capture, the rest of the model's verbs (``touch`` on reference,
``evict``, ``mark_turn``, outcomes, contradictions), and the public API, each verb delegated to
the part that does it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

from veil.clock import Clock, SystemClock
from veil.context import events
from veil.context.boundary import Boundary, EvictionReport, TailMode, TurnBoundary
from veil.context.calibration import Calibration
from veil.context.capture import Origin, call_effect, generic_target, new_item
from veil.context.codegraph import CodeGraph
from veil.context.config import ContextConfig
from veil.context.conflicts import Belief, Conflict, content_digest
from veil.context.items import ITEM_KINDS, NEVER_EVICTED, ContextItem, ItemKind, Tier, TurnKind
from veil.context.projection import ContextProjection
from veil.context.restore import POINTER, Restorer
from veil.context.score import Task
from veil.context.signals import tags_of
from veil.context.turns import CallKind, classify_turn
from veil.context.window import Entry, Rendered
from veil.context.working_memory import UnknownItem, WorkingMemory
from veil.embed.protocol import Embedder
from veil.tape import Store
from veil.tokens import TokenCounter, estimate_tokens


class ContextEngine:
    """Working memory for one session of a project (``scope``), over ``store``; a new engine
    with the session id of one that ran resumes it (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        *,
        session_id: str,
        scope: str = "project",
        config: ContextConfig | None = None,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        project_root: Path | None = None,
        token_counter: TokenCounter = estimate_tokens,
        register: bool = True,
        deferred: bool = False,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.scope = scope
        self.embedder = embedder
        self.clock = clock or SystemClock()
        self.count_tokens = token_counter
        self.graph = CodeGraph(project_root) if project_root else None
        if register:
            store.register(ContextProjection())
        self.memory = WorkingMemory(
            store,
            session_id=session_id,
            scope=scope,
            config=config or ContextConfig(),
            embedder=embedder,
            clock=self.clock,
            token_counter=token_counter,
        )
        """The state, the query side and the recorded changes."""
        self.restorer = Restorer(self.memory)
        """Pointers and the verbs that bring an item back."""
        self.boundary = TurnBoundary(self.memory, deferred=deferred)
        """The turn boundary: stepping and rendering."""
        self._has_intent = self.memory.resume()
        if self.memory.task_text:
            self._retask(tags=frozenset(tags_of(self.memory.task_text)))

    # ---- state (the memory's and the boundary's) ---------------------------------------

    @property
    def config(self) -> ContextConfig:
        return self.memory.config

    @config.setter
    def config(self, value: ContextConfig) -> None:
        self.memory.config = value

    @property
    def deferred(self) -> bool:
        """Whether :meth:`step` leaves its events buffered for :meth:`persist_in_background`
        instead of flushing them."""
        return self.boundary.deferred

    @property
    def tick(self) -> int:
        """The session clock: one tick per captured tool call."""
        return self.memory.tick

    @property
    def calibration(self) -> Calibration:
        return self.memory.calibration

    @property
    def overhead_tokens(self) -> int:
        """What a request costs besides the items (system prompt, tool schemas, the tail)."""
        return self.memory.overhead_tokens

    @property
    def expansions(self) -> int:
        """Items brought back by an expansion, since this engine started."""
        return self.memory.expansions

    @property
    def returns(self) -> int:
        """Items out of the prompt that the model asked for again by running their call again
        (a re-read, a re-run): where eviction's cost hides, beside the expansions."""
        return self.memory.returns

    @property
    def task(self) -> Task:
        return self.memory.task

    @property
    def threshold(self) -> float:
        return self.memory.threshold

    @property
    def request_budget(self) -> int:
        """What a whole request may come to, in the provider's tokens: ``budget_tokens`` when
        set, else the window minus the reserve (for the reply)."""
        return self.memory.request_budget

    @property
    def budget(self) -> int:
        """Tokens the conversation may use, in estimated tokens: :attr:`request_budget`
        converted with the calibration, minus the fixed overhead of each request (system prompt,
        tool schemas, the tail), which the caller passes to :meth:`step` or :meth:`window`."""
        return self.memory.budget

    @property
    def batches(self) -> int:
        """Batches of evictions run so far."""
        return self.boundary.batches

    @property
    def live_tokens(self) -> int:
        """What the conversation costs, in estimated tokens: after :meth:`window`, exactly the
        renderer's count of what is sent (tail aside); between renderings, the working set's
        estimate corrected by what the last rendering measured."""
        return self.memory.live_tokens

    def calibrate(self, reported_tokens: int, estimated_tokens: int) -> None:
        """The provider reported ``reported_tokens`` input tokens for a request estimated at
        ``estimated_tokens`` (the whole request: fixed overhead, conversation and tail): budgets
        are in the provider's tokens from now on (:mod:`veil.context.calibration`)."""
        memory = self.memory
        memory.calibration = memory.calibration.observe(reported_tokens, estimated_tokens)

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced (the store's redactor: what is written to the
        tape and what the engine keeps and re-sends are the same)."""
        return self.memory.redact(text)

    # ---- the query side (the memory's) -------------------------------------------------

    def items(self, tier: Tier | None = None) -> list[ContextItem]:
        return self.memory.items(tier)

    def item(self, item_id: str) -> ContextItem:
        """An item by id (or by the id of the tool call whose result it holds)."""
        return self.memory.item(item_id)

    def by_tool_call(self, tool_call_id: str) -> ContextItem | None:
        return self.memory.by_tool_call(tool_call_id)

    def items_for_call(self, tool_call_id: str) -> list[ContextItem]:
        """Every item holding a result of ``tool_call_id``, oldest first."""
        return self.memory.items_for_call(tool_call_id)

    def is_live(self, item_id: str) -> bool:
        return self.memory.is_live(item_id)

    def stub(self, item_id: str) -> str:
        return self.memory.stub(item_id)

    def scores(self) -> dict[str, float]:
        return self.memory.scores()

    def conflicts(self, *, unresolved_only: bool = True) -> list[Conflict]:
        return self.memory.conflicts(unresolved_only=unresolved_only)

    def manifest(self, notes: Sequence[str] = ()) -> str:
        """What is loaded, in at most ``manifest_max_share`` of the window."""
        return self.memory.manifest(notes)

    def search(
        self, query: str, limit: int = 10, *, min_similarity: float = -1.0
    ) -> list[ContextItem]:
        """Warm and cold items of this project matching ``query`` (see
        :meth:`WorkingMemory.search`)."""
        return self.memory.search(query, limit, min_similarity=min_similarity)

    # ---- persistence (the memory's) ----------------------------------------------------

    def flush(self) -> None:
        """Append every buffered event now, in one transaction (after any background write).
        Explicit verbs flush; capture buffers; ``step`` flushes unless deferred."""
        self.memory.flush()

    def persist_in_background(self) -> Future[None]:
        """Queue the buffered events for one append on the engine's writer thread and return
        at once (the harness calls this as the model request goes out)."""
        return self.memory.persist_in_background()

    def wait(self) -> None:
        """Block until queued background writes are on the tape; raise if one failed."""
        self.memory.wait()

    def close(self) -> None:
        """Persist everything buffered and stop the writer thread (the store stays open)."""
        self.memory.close()

    # ---- bringing items back (the restorer's) ------------------------------------------

    def resolve_pointer(self, pointer_or_id: str) -> ContextItem:
        return self.restorer.resolve_pointer(pointer_or_id)

    def restores(self, pointer_or_id: str) -> bool:
        """Whether expanding this pointer would bring something into the prompt that is not
        there."""
        return self.restorer.restores(pointer_or_id)

    def expand(self, pointer_or_id: str) -> ContextItem:
        """Bring an evicted item back live, byte-identical (see :meth:`Restorer.expand`)."""
        return self.restorer.expand(pointer_or_id)

    def load(self, pointer_or_id: str) -> ContextItem:
        """Load an item by hand: it comes back live, counts ×1.5 and is protected a few ticks."""
        return self.restorer.load(pointer_or_id)

    def pin(self, item_id: str, pinned: bool = True) -> ContextItem:
        return self.restorer.pin(item_id, pinned)

    def unpin(self, item_id: str) -> ContextItem:
        return self.restorer.unpin(item_id)

    # ---- the turn boundary (the boundary's) --------------------------------------------

    def step(self, *, overhead_tokens: int | None = None, overflow: bool = False) -> EvictionReport:
        """A turn boundary over the working set alone (see :meth:`TurnBoundary.step`)."""
        return self.boundary.step(overhead_tokens=overhead_tokens, overflow=overflow)

    def window(
        self,
        entries: Sequence[Entry],
        *,
        fixed_tokens: int,
        collapse: bool = True,
        notes: Sequence[str] = (),
        tail: bool | TailMode = True,
        cold: bool = False,
        overflow: bool = False,
    ) -> Boundary:
        """One turn boundary of a conversation, and ``entries`` rendered as the model will see
        them (see :meth:`TurnBoundary.window`)."""
        return self.boundary.window(
            entries,
            fixed_tokens=fixed_tokens,
            collapse=collapse,
            notes=notes,
            tail=tail,
            cold=cold,
            overflow=overflow,
        )

    def render(
        self, entries: Sequence[Entry], *, collapse: bool = True, tail: bool | TailMode = True
    ) -> Rendered:
        """``entries`` as the model would see them now, without a turn boundary."""
        return self.boundary.render(entries, collapse=collapse, tail=tail)

    def tail(self, notes: Sequence[str] = (), *, manifest: bool = True) -> str:
        """What ends a request (see :meth:`TurnBoundary.tail`)."""
        return self.boundary.tail(notes, manifest=manifest)

    def prompt_manifest(self) -> str:
        """The manifest as a request carries it: as of the last batch, once there is something
        to say (see :meth:`TurnBoundary.prompt_manifest`)."""
        return self.boundary.prompt_manifest()

    # ---- capture ----------------------------------------------------------------------

    def capture_tool_result(
        self,
        *,
        tool_call_id: str,
        tool_name: str,
        output: str,
        is_error: bool = False,
        arguments: Mapping[str, Any] | None = None,
        target: str | None = None,
        reads: str | None = None,
        partial: bool = False,
        writes: str | None = None,
        parent: str | None = None,
        full_output: str | None = None,
    ) -> ContextItem:
        """A tool call's result enters working memory (one tick of the session clock).

        ``output`` is what the model is given; ``full_output``, when the tool truncated it, the
        whole output: the item's content is then the full output (what an expansion returns)
        and its tokens count the shorter text the prompt shows (``ContextItem.partial``).

        The engine knows no tool by name: ``tool_name`` is a label. What the call did comes as
        plain values from the caller (the harness reads each tool's declaration): ``target`` is
        what it addressed (a path, ``path#range``, a command line), ``reads`` a file it read
        (``partial`` when only a range), ``writes`` a file it changed. A result of a whole-file
        read becomes a ``file`` item and a belief about that file's content; a call that names
        the target of an evicted item again is a regret. Without ``target`` the label and the
        arguments name the call."""
        self.memory.tick += 1
        args = dict(arguments or {})
        self._touch_referenced(" ".join(str(v) for v in args.values()))
        if target is None:
            target = generic_target(args)
        # What the engine keeps (and re-sends in stubs, expansions, search) is redacted; the
        # caller's transcript keeps what the model was given while it is live.
        shown = self.redact(output)
        full = self.redact(full_output) if full_output is not None else None
        target = self.redact(target) if target else target
        path = reads or writes or ""
        did = call_effect(output, reads=reads, partial=partial, writes=writes, is_error=is_error)
        if writes is None:
            self._regret_if_returning(tool_name, target)
        else:
            self.memory.book.note_write(writes, self.tick)
        if self.graph is not None and path:
            rel = self.graph.rel(path)
            if rel and writes is not None:
                self.graph.changed(rel)
            if rel and rel not in self.task.touched:
                self._retask(touched=self.task.touched | {rel})
        item = self.memory.add(
            new_item(
                did.kind,
                full if full is not None else shown,
                self._origin(),
                target=target,
                tool_name=tool_name,
                tool_call_id=tool_call_id,
                code_refs=did.code_refs,
                effect=did.effect,
                parent=parent,
                shown=shown if full is not None else None,
            )
        )
        if reads and not partial and not is_error:
            self._check_belief(
                Belief(
                    item.id, reads, "content", content_digest(shown), tool_call_id, self.session_id
                ),
                file_path=reads,
            )
        return item

    def capture_turn(
        self,
        role: str,
        text: str,
        *,
        calls: Sequence[CallKind] = (),
        turn_kind: TurnKind | None = None,
        target: str | None = None,
    ) -> ContextItem:
        """A conversation turn becomes an item; its kind is classified unless given.
        ``calls`` says, for each tool call the turn makes, whether it ``act``s (changes
        something) or ``look``s. ``target`` names where it sits (the harness uses
        ``turn:<transcript index>``)."""
        first_user = role == "user" and not self._has_intent
        if role == "assistant":
            self._touch_referenced(text)
        text = self.redact(text)
        kind = turn_kind or classify_turn(role, text, calls, first_user_turn=first_user)
        self._has_intent = self._has_intent or kind == "intent"
        item = self.memory.add(
            new_item("turn", text, self._origin(), target=target or role, turn_kind=kind)
        )
        if role == "user" and kind == "intent":
            self.set_task(text)
        return item

    def add(
        self,
        kind: ItemKind,
        content: str,
        *,
        target: str | None = None,
        tags: Sequence[str] | None = None,
        code_refs: Sequence[str] = (),
        pinned: bool = False,
        manual: bool = False,
        belief: tuple[str, str, str] | None = None,
    ) -> ContextItem:
        """Any other item (a fact, procedural note, decision, plan, correction…). ``belief`` is
        ``(subject, relation, value)`` for items that assert something checkable."""
        if kind not in ITEM_KINDS:
            raise ValueError(f"unknown item kind {kind!r}")
        content = self.redact(content)
        item = self.memory.add(
            new_item(
                kind,
                content,
                self._origin(),
                target=target,
                code_refs=tuple(code_refs),
                tags=tuple(tags) if tags is not None else None,
                pinned=pinned,
                manual=manual,
            )
        )
        if belief is not None:
            subject, relation, value = belief
            self._check_belief(Belief(item.id, subject, relation, value, None, self.session_id))
        return item

    def set_aside(self, content: str, *, target: str, reason: str) -> ContextItem:
        """Text a surface took out of the request itself (the proxy's elided tool inputs),
        kept as a ``message`` item that is out of the prompt from the start (warm, never
        counted in it): its pointer brings the text back (redacted, as every item is)."""
        item = self.memory.add(
            new_item("message", self.redact(content), self._origin(), target=target)
        )
        return self.memory.move(item, "warm", stage=0, reason=reason)

    def set_task(self, text: str) -> None:
        """The task the session works on: its tags drive the relevance signal."""
        self.memory.task_text = text
        self._retask(tags=frozenset(tags_of(text)))

    def _origin(self) -> Origin:
        return Origin(self.tick, self.clock.now(), self.session_id, self.config, self.count_tokens)

    def _retask(
        self, *, tags: frozenset[str] | None = None, touched: frozenset[str] | None = None
    ) -> None:
        task = self.task
        neighbours = (
            self.graph.neighbours(touched)
            if self.graph and touched is not None
            else task.neighbours
        )
        self.memory.working_set.retask(
            Task(
                tags=tags if tags is not None else task.tags,
                touched=touched if touched is not None else task.touched,
                neighbours=neighbours,
            )
        )

    def _regret_if_returning(self, tool_name: str, target: str | None) -> None:
        """A call that names the target of an item out of the prompt again is a regret."""
        if not target:
            return
        for item in self.memory.working_set.with_target(tool_name, target):
            if item.tier != "live":
                self.memory.regret(item.id, f"{tool_name} again")
                return

    # ---- the model's verbs ------------------------------------------------------------

    def referenced(self, text: str) -> list[str]:
        """An assistant message that is not kept as a turn item (a proxy keeps tool results
        only) still says what it is working with: the live items it names are touched, as
        :meth:`capture_turn` does for a turn. Returns their ids."""
        return self._touch_referenced(text)

    def _touch_referenced(self, text: str) -> list[str]:
        """Touch the live items whose content carries a distinctive name ``text`` mentions
        (``touch_on_reference``; see :mod:`veil.context.references`)."""
        if not self.config.touch_on_reference or not text:
            return []
        touched: list[str] = []
        ws = self.memory.working_set
        for item_id in ws.references.named_by(text, max_items=self.config.reference_max_items):
            if ws.items[item_id].tier == "live":
                self.touch(item_id)
                touched.append(item_id)
                if len(touched) >= self.config.reference_max_touches:
                    break
        return touched

    def touch(self, item_id: str) -> ContextItem:
        """A recall: the model used, reloaded or re-referenced the item (FSRS raises its
        stability)."""
        return self.memory.touch(item_id)

    def advance_clock(self) -> None:
        """A tool call that adds no item (an expansion: its result is the item it brings back)
        still moves the session clock one tick; call it before the call's effects."""
        self.memory.tick += 1

    def evict(self, item_id: str) -> ContextItem:
        """The model evicts an item itself (to warm). Intent and corrections cannot be."""
        item = self.item(item_id)
        if item.kind in NEVER_EVICTED or item.turn_kind in NEVER_EVICTED:
            raise ValueError(f"{item_id} is {item.turn_kind or item.kind}: never evicted")
        if item.pinned:
            raise ValueError(f"{item_id} is pinned: unpin it first")
        return self.memory.move(item, "warm", stage=0, reason="evicted by the model")

    def mark_turn(self, item_id: str, kind: TurnKind) -> ContextItem:
        item = self.item(item_id)
        if item.kind != "turn":
            raise ValueError(f"{item_id} is a {item.kind}, not a turn")
        updated = replace(item, turn_kind=kind)
        self.memory.update(updated, look_changed=True)
        self.memory.emit(events.TURN_KIND, events.TurnKindSet(item.id, kind))
        return updated

    def record_outcome(self, ok: bool, used: Sequence[str]) -> None:
        """Cognitive weight: the items a step actually used move toward +1 (it passed) or −1."""
        weights: dict[str, float] = {}
        for item_id in used:
            item = self.memory.working_set.items.get(item_id)
            if item is None:
                continue
            w = min(1.0, max(-1.0, item.cognitive_weight + (0.25 if ok else -0.25)))
            self.memory.update(replace(item, cognitive_weight=w))
            weights[item_id] = w
        if weights:
            self.memory.emit(events.COGNITIVE, events.Cognitive(ok, weights))

    def convergence_warning(self) -> None:
        """The convergence monitor escalated: multiplicative decrease, keep more context."""
        self.memory.back_off()

    # ---- conflicts --------------------------------------------------------------------

    def _check_belief(self, belief: Belief, *, file_path: str | None = None) -> None:
        for conflict in self.memory.book.add(belief, self.tick, file_path=file_path):
            self.memory.emit(events.CONFLICT, events.conflict_added(conflict, self.session_id))

    def resolve(self, conflict_id_: str, *, keep: str, reason: str, actor: str) -> Conflict:
        """Settle a contradiction explicitly: which item to keep, why, and who decided."""
        try:
            settled = self.memory.book.settle(conflict_id_, keep=keep, reason=reason)
        except KeyError:
            raise UnknownItem(f"no conflict {conflict_id_!r}") from None
        self.memory.emit(
            events.RESOLVED,
            events.Resolved(id=settled.id, kept=keep, reason=reason, actor=actor),
        )
        self.flush()
        return settled


__all__ = ["POINTER", "Boundary", "ContextEngine", "EvictionReport", "UnknownItem"]
