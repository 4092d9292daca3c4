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

:class:`ContextEngine` is the wiring of its layers, one module each:
:class:`~veil.context.working_memory.WorkingMemory` (the state, the query side, the recorded
changes and their persistence), :class:`~veil.context.restore.RestoreVerbs` (pointers,
``expand``, ``load``, ``pin``) and :class:`~veil.context.boundary.TurnBoundary` (``step``,
``window``, ``render``). Here: building the state and resuming it, capture, and the rest of the
model's verbs (``touch`` on reference, ``evict``, ``mark_turn``, outcomes, contradictions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from veil.clock import Clock, SystemClock
from veil.context import events
from veil.context.boundary import Boundary, EvictionReport, TurnBoundary
from veil.context.calibration import Calibration
from veil.context.capture import Origin, call_effect, generic_target, new_item
from veil.context.codegraph import CodeGraph
from veil.context.config import ContextConfig
from veil.context.conflicts import Belief, Conflict, ConflictBook, content_digest
from veil.context.items import ITEM_KINDS, NEVER_EVICTED, ContextItem, ItemKind, TurnKind
from veil.context.projection import ContextProjection
from veil.context.restore import POINTER, RestoreVerbs
from veil.context.resume import read_session, restore_into
from veil.context.score import Task
from veil.context.search import IndexQueue
from veil.context.signals import tags_of
from veil.context.threshold import Threshold, on_regret
from veil.context.turns import CallKind, classify_turn
from veil.context.working_memory import UnknownItem
from veil.context.workingset import WorkingSet
from veil.context.writer import ContextWriter
from veil.embed.protocol import Embedder
from veil.tape import Store
from veil.tape.recorder import Recorder
from veil.tokens import TokenCounter, TokenMemo, estimate_tokens


class ContextEngine(RestoreVerbs, TurnBoundary):
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
        self.deferred = deferred
        self.session_id = session_id
        self.scope = scope
        self.config = config or ContextConfig()
        self.embedder = embedder
        self.clock = clock or SystemClock()
        self.count_tokens = token_counter
        self._count = TokenMemo(token_counter)
        self.calibration = Calibration()
        self.graph = CodeGraph(project_root) if project_root else None
        if register:
            store.register(ContextProjection())
        self._set = WorkingSet(self.config, token_counter, embedder)
        self._book = ConflictBook()
        self._has_intent = False
        self._to_index = IndexQueue()
        self._writer = ContextWriter(
            Recorder(
                store,
                scope=scope,
                actor="veil",
                clock=self.clock,
                id_prefix="cx",
                provenance={"session_id": session_id},
            ),
            before_take=lambda: self._index_some(self.config.index_per_step),
            off_thread=self._set.references.prepare,
        )
        self.tick = 0
        self._boundary_tick = 0
        self._step_boundary = 0
        self._unread = np.zeros(0, dtype=np.bool_)
        self._requests = 0
        self._batches = 0
        self._manifest_text = None
        self.expansions = 0
        self.returns = 0
        self.overhead_tokens = 0
        self._threshold = Threshold.start(self.config.threshold)
        self._tail_tokens = 0
        self._renderer = None
        self._looks_changed = set()
        self._task_text = ""
        self._load()

    def calibrate(self, reported_tokens: int, estimated_tokens: int) -> None:
        """The provider reported ``reported_tokens`` input tokens for a request estimated at
        ``estimated_tokens`` (the whole request: fixed overhead, conversation and tail): budgets
        are in the provider's tokens from now on (:mod:`veil.context.calibration`)."""
        self.calibration = self.calibration.observe(reported_tokens, estimated_tokens)

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
        self.tick += 1
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
            self._book.note_write(writes, self.tick)
        if self.graph is not None and path:
            rel = self.graph.rel(path)
            if rel and writes is not None:
                self.graph.changed(rel)
            if rel and rel not in self.task.touched:
                self._retask(touched=self.task.touched | {rel})
        item = self._admit(
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
        item = self._admit(
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
        item = self._admit(
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

    def set_task(self, text: str) -> None:
        """The task the session works on: its tags drive the relevance signal."""
        self._task_text = text
        self._retask(tags=frozenset(tags_of(text)))

    def _origin(self) -> Origin:
        return Origin(self.tick, self.clock.now(), self.session_id, self.config, self.count_tokens)

    def _admit(self, item: ContextItem) -> ContextItem:
        """A new item joins the working set and the tape."""
        self._set.add(item)
        self._emit(events.ITEM, events.ItemAdded(item))
        return item

    def _retask(
        self, *, tags: frozenset[str] | None = None, touched: frozenset[str] | None = None
    ) -> None:
        task = self.task
        neighbours = (
            self.graph.neighbours(touched)
            if self.graph and touched is not None
            else task.neighbours
        )
        self._set.retask(
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
        for item in self._set.with_target(tool_name, target):
            if item.tier != "live":
                self._regret(item.id, f"{tool_name} again")
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
        for item_id in self._set.references.named_by(
            text, max_items=self.config.reference_max_items
        ):
            if self._set.items[item_id].tier == "live":
                self.touch(item_id)
                touched.append(item_id)
                if len(touched) >= self.config.reference_max_touches:
                    break
        return touched

    def advance_clock(self) -> None:
        """A tool call that adds no item (an expansion: its result is the item it brings back)
        still moves the session clock one tick; call it before the call's effects."""
        self.tick += 1

    def evict(self, item_id: str) -> ContextItem:
        """The model evicts an item itself (to warm). Intent and corrections cannot be."""
        item = self.item(item_id)
        if item.kind in NEVER_EVICTED or item.turn_kind in NEVER_EVICTED:
            raise ValueError(f"{item_id} is {item.turn_kind or item.kind}: never evicted")
        if item.pinned:
            raise ValueError(f"{item_id} is pinned: unpin it first")
        return self._move(item, "warm", stage=0, reason="evicted by the model")

    def mark_turn(self, item_id: str, kind: TurnKind) -> ContextItem:
        item = self.item(item_id)
        if item.kind != "turn":
            raise ValueError(f"{item_id} is a {item.kind}, not a turn")
        updated = replace(item, turn_kind=kind)
        self._set.update(updated)
        self._looks_changed.add(item.id)
        self._emit(events.TURN_KIND, events.TurnKindSet(item.id, kind))
        return updated

    def record_outcome(self, ok: bool, used: Sequence[str]) -> None:
        """Cognitive weight: the items a step actually used move toward +1 (it passed) or −1."""
        weights: dict[str, float] = {}
        for item_id in used:
            item = self._set.items.get(item_id)
            if item is None:
                continue
            w = min(1.0, max(-1.0, item.cognitive_weight + (0.25 if ok else -0.25)))
            self._set.update(replace(item, cognitive_weight=w))
            weights[item_id] = w
        if weights:
            self._emit(events.COGNITIVE, events.Cognitive(ok, weights))

    def convergence_warning(self) -> None:
        """The convergence monitor escalated: multiplicative decrease, keep more context."""
        self._threshold = on_regret(self._threshold, tick=self.tick, config=self.config.threshold)

    # ---- conflicts --------------------------------------------------------------------

    def _check_belief(self, belief: Belief, *, file_path: str | None = None) -> None:
        for conflict in self._book.add(belief, self.tick, file_path=file_path):
            self._emit(events.CONFLICT, events.conflict_added(conflict, self.session_id))

    def resolve(self, conflict_id_: str, *, keep: str, reason: str, actor: str) -> Conflict:
        """Settle a contradiction explicitly: which item to keep, why, and who decided."""
        try:
            settled = self._book.settle(conflict_id_, keep=keep, reason=reason)
        except KeyError:
            raise UnknownItem(f"no conflict {conflict_id_!r}") from None
        self._emit(
            events.RESOLVED,
            events.Resolved(id=settled.id, kept=keep, reason=reason, actor=actor),
        )
        self.flush()
        return settled

    # ---- resume -----------------------------------------------------------------------

    def _load(self) -> None:
        """Resume: rebuild the in-memory state of this session from the projection."""
        resumed = read_session(self.store, scope=self.scope, session_id=self.session_id)
        self._has_intent = restore_into(resumed, self._set, self._book, self._to_index)
        if resumed.threshold is not None:
            self.tick = resumed.tick
            self._threshold = resumed.threshold
            self._task_text = resumed.task
            self.calibration = resumed.calibration
            if self._task_text:
                self._retask(tags=frozenset(tags_of(self._task_text)))


__all__ = ["POINTER", "Boundary", "ContextEngine", "EvictionReport", "UnknownItem"]
