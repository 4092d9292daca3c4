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
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from veil.clock import Clock, SystemClock
from veil.context.access import recalled
from veil.context.calibration import Calibration
from veil.context.capture import Origin, call_effect, generic_target, new_item
from veil.context.codegraph import CodeGraph
from veil.context.config import ContextConfig
from veil.context.conflicts import Belief, Conflict, ConflictBook, content_digest
from veil.context.eviction import Move, Plan
from veil.context.items import (
    ITEM_KINDS,
    NEVER_EVICTED,
    ContextItem,
    ItemKind,
    Tier,
    TurnKind,
)
from veil.context.manifest import manifest_of
from veil.context.pressure import clip_unread, plan_step, shrink_excerpts, with_their_turns
from veil.context.projection import ContextProjection
from veil.context.records import conflict_payload, item_payload
from veil.context.render import stub
from veil.context.resume import read_item, read_session, recall_files
from veil.context.score import Task
from veil.context.search import IndexQueue, find, search_text
from veil.context.signals import tags_of
from veil.context.threshold import Threshold, on_regret, on_tick
from veil.context.turns import CallKind, classify_turn
from veil.context.window import Entry, Rendered, Renderer
from veil.context.workingset import WorkingSet
from veil.context.writer import ContextWriter
from veil.embed.protocol import Embedder
from veil.tape import JSONValue, Store
from veil.tape.recorder import Recorder
from veil.tokens import TokenCounter, TokenMemo, estimate_tokens

POINTER = re.compile(r"^veil://(warm|cold|live)/([A-Za-z0-9_\-]+)$")


class UnknownItem(KeyError):
    """An id or pointer that names no item of this project's working memory."""

    def __str__(self) -> str:  # a KeyError would quote its message
        return str(self.args[0]) if self.args else "unknown item"


@dataclass(frozen=True)
class EvictionReport:
    tick: int
    moves: tuple[Move, ...]
    threshold_before: float
    threshold_after: float
    live_tokens_before: int
    live_tokens_after: int
    budget: int
    pressure: bool


@dataclass(frozen=True)
class Boundary:
    """A turn boundary as :meth:`ContextEngine.window` ran it: what moved, and the request's
    conversation as the model will see it (``rendered.tokens`` in estimated tokens; the
    report's ``live_tokens_after`` is the same count without the tail)."""

    report: EvictionReport
    rendered: Rendered


class ContextEngine:
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
        self.clock: Clock = clock or SystemClock()
        self.count_tokens = token_counter
        self._count = TokenMemo(token_counter)
        """The renderer's counter: the same counts, remembered for texts seen again."""
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
        """The boundary before the last step: results captured after it were unread there."""
        self.overhead_tokens = 0
        self._threshold = Threshold.start(self.config.threshold)
        self._tail_tokens = 0
        self._renderer: Renderer | None = None
        self._looks_changed: set[str] = set()
        """Items whose look in a request changed since the last rendering (tier, excerpt,
        size, turn kind): the renderer re-renders from their first entry."""
        self._task_text = ""
        self._load()

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
    def budget(self) -> int:
        """Tokens the conversation may use, in estimated tokens: the window minus the reserve
        (for the reply), both in the provider's tokens and converted with the calibration,
        minus the fixed overhead of each request (system prompt, tool schemas, the tail), which
        the caller passes to :meth:`step` or :meth:`window`."""
        room = self.calibration.estimated(self.config.window_tokens - self.config.reserve_tokens)
        return max(1, room - self.overhead_tokens)

    @property
    def unread_limit(self) -> int:
        """Tokens the items may use when results the model has not read would not fit the
        budget: the budget plus the reserve above its floor (see ``unread_reserve_floor``)."""
        c = self.config
        return self.budget + self.calibration.estimated(
            int(c.reserve_tokens * (1.0 - c.unread_reserve_floor))
        )

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

    def calibrate(self, reported_tokens: int, estimated_tokens: int) -> None:
        """The provider reported ``reported_tokens`` input tokens for a request estimated at
        ``estimated_tokens`` (the whole request: fixed overhead, conversation and tail): budgets
        are in the provider's tokens from now on (:mod:`veil.context.calibration`)."""
        self.calibration = self.calibration.observe(reported_tokens, estimated_tokens)

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
        self._emit("context.item", {"item": item_payload(item)})
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

    # ---- the model's verbs ------------------------------------------------------------

    def touch(self, item_id: str) -> ContextItem:
        """A recall: the model used, reloaded or re-referenced the item. FSRS raises its
        stability on both horizons — more when it was recalled late."""
        item = self.item(item_id)
        updated = recalled(item, tick=self.tick, now=self.clock.now(), config=self.config)
        self._set.update(updated)
        self._emit(
            "context.access",
            {
                "id": item.id,
                "tick": self.tick,
                "at": updated.last_access_at,
                "access_count": updated.access_count,
                "stability": updated.stability,
                "difficulty": updated.difficulty,
                "durable_stability": updated.durable_stability,
            },
        )
        return updated

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

    def resolve_pointer(self, pointer_or_id: str) -> ContextItem:
        match = POINTER.match(pointer_or_id.strip())
        item_id = match.group(2) if match else pointer_or_id.strip()
        # A tool-call id names the item holding that call's result (models know those ids).
        item_id = self._set.call_item(item_id) or item_id
        item = self._set.items.get(item_id) or self._load_foreign(item_id)
        if item is None:
            raise UnknownItem(f"{pointer_or_id!r} names no item of this project's memory")
        return item

    def advance_clock(self) -> None:
        """A tool call that adds no item (an expansion: its result is the item it brings back)
        still moves the session clock one tick; call it before the call's effects."""
        self.tick += 1

    def restores(self, pointer_or_id: str) -> bool:
        """Whether expanding this pointer would bring something into the prompt that is not
        there: the item is out of it, or only its truncated output is in it."""
        item = self.resolve_pointer(pointer_or_id)
        return item.tier != "live" or item.partial

    def expand(self, pointer_or_id: str) -> ContextItem:
        """Bring an evicted item back live, byte-identical (a truncated result: its full
        output). Coming back is a regret: T halves. It is protected for
        ``manual_protect_ticks`` like a load by hand (without the ×1.5), so that window
        pressure does not stub it again before the model has read it."""
        item = self.resolve_pointer(pointer_or_id)
        restoring = item.tier != "live" or item.partial
        if item.partial:
            item = self._whole(item)
        if item.tier != "live":
            self._regret(item.id, "expanded")
            item = self._move(item, "live", stage=0, reason="expanded")
        if restoring:
            item = replace(item, manual_tick=self.tick)
            self._set.update(item)
            self._emit("context.manual", {"id": item.id, "tick": self.tick, "protect_only": True})
        return self.touch(item.id)

    def _whole(self, item: ContextItem) -> ContextItem:
        """A truncated result's full output is asked for: the item shows it from now on."""
        updated = replace(item, partial=False, tokens=self.count_tokens(item.content))
        self._set.update(updated)
        self._looks_changed.add(item.id)
        self._emit("context.whole", {"id": item.id, "tokens": updated.tokens})
        return updated

    def load(self, pointer_or_id: str) -> ContextItem:
        """Load an item by hand: it comes back live, counts ×1.5 and is protected a few ticks."""
        item = self.expand(pointer_or_id)
        updated = replace(item, manual=True, manual_tick=self.tick)
        self._set.cols.f["manual_tick"][self._set.row(item.id)] = self.tick
        self._set.update(updated)
        self._emit("context.manual", {"id": item.id, "tick": self.tick})
        return updated

    def pin(self, item_id: str, pinned: bool = True) -> ContextItem:
        item = self.item(item_id)
        if item.tier != "live" and pinned:
            item = self.expand(item_id)
        updated = replace(item, pinned=pinned)
        self._set.update(updated)
        self._emit("context.pin", {"id": item.id, "pinned": pinned})
        return updated

    def unpin(self, item_id: str) -> ContextItem:
        return self.pin(item_id, False)

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
        self._emit("context.turn_kind", {"id": item.id, "kind": kind})
        return updated

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

    def record_outcome(self, ok: bool, used: Sequence[str]) -> None:
        """Cognitive weight: the items a step actually used move toward +1 (it passed) or −1."""
        weights: dict[str, JSONValue] = {}
        for item_id in used:
            item = self._set.items.get(item_id)
            if item is None:
                continue
            w = min(1.0, max(-1.0, item.cognitive_weight + (0.25 if ok else -0.25)))
            self._set.update(replace(item, cognitive_weight=w))
            weights[item_id] = w
        if weights:
            self._emit("context.cognitive", {"ok": ok, "weights": weights})

    def convergence_warning(self) -> None:
        """The convergence monitor escalated: multiplicative decrease, keep more context."""
        self._threshold = on_regret(self._threshold, tick=self.tick, config=self.config.threshold)

    # ---- conflicts --------------------------------------------------------------------

    def _check_belief(self, belief: Belief, *, file_path: str | None = None) -> None:
        for conflict in self._book.add(belief, self.tick, file_path=file_path):
            self._emit(
                "context.conflict", {"conflict": conflict_payload(conflict, self.session_id)}
            )

    def conflicts(self, *, unresolved_only: bool = True) -> list[Conflict]:
        return self._book.list(unresolved_only=unresolved_only)

    def resolve(self, conflict_id_: str, *, keep: str, reason: str, actor: str) -> Conflict:
        """Settle a contradiction explicitly: which item to keep, why, and who decided."""
        try:
            settled = self._book.settle(conflict_id_, keep=keep, reason=reason)
        except KeyError:
            raise UnknownItem(f"no conflict {conflict_id_!r}") from None
        self._emit(
            "context.resolved", {"id": settled.id, "kept": keep, "reason": reason, "actor": actor}
        )
        self.flush()
        return settled

    # ---- eviction ---------------------------------------------------------------------

    def scores(self) -> dict[str, float]:
        values = self._set.scores(self.tick)
        return {item_id: float(values[i]) for i, item_id in enumerate(self._set.ids)}

    def step(self, *, overhead_tokens: int | None = None) -> EvictionReport:
        """The turn boundary: score everything, run the three stages, move T. Persisted.

        ``overhead_tokens`` is what the next request costs besides the items (system prompt,
        manifest, tool schemas); the items' budget is the window minus the reserve minus it.
        Without it the last value given is kept. A caller that sends a transcript uses
        :meth:`window`, which steps and renders."""
        if overhead_tokens is not None:
            self.overhead_tokens = max(0, int(overhead_tokens))
        before = self._threshold.value
        if self._boundary_tick != self.tick:  # a step again at the same tick: same unread
            self._step_boundary = self._boundary_tick
        moves, result = self._evict(stages=True)
        self._boundary_tick = self.tick
        live_after = self._set.live_tokens()
        fill = live_after / self.budget
        self._threshold = on_tick(
            self._threshold,
            tick=self.tick,
            fill=fill,
            target_fill=self.config.target_fill,
            pressure=result.pressure,
            config=self.config.threshold,
        )
        self._emit("context.state", self._state())
        if not self.deferred:
            self.flush()
        return EvictionReport(
            self.tick,
            tuple(moves),
            before,
            self._threshold.value,
            result.live_tokens_before,
            live_after,
            self.budget,
            result.pressure,
        )

    def _evict(self, *, stages: bool) -> tuple[list[Move], Plan]:
        """Plan against the working set as it is now and apply the moves: the three stages
        (``stages``), or again after a rendering measured more than planned — then with the
        same results unread as at the step, and T unchanged."""
        decided = plan_step(
            self._set,
            tick=self.tick,
            boundary_tick=self._step_boundary,
            now=self.clock.now(),
            threshold=self._threshold.value if stages else -1.0,
            budget=self.budget,
            # Again after a rendering: only down to the budget (the step already evicted to
            # the target fill; this corrects what the rendering measured).
            target_fill=None if stages else 1.0,
        )
        result, unread = decided.plan, decided.unread
        hard, soft = decided.hard, decided.soft
        if not stages:  # only window pressure: no stage 3 again
            result = replace(result, moves=tuple(m for m in result.moves if m.stage == 2))
        moves = [*result.moves, *with_their_turns(self._set, result.moves, hard | soft)]
        for move in moves:
            self._move(self._set.items[move.id], move.to, stage=move.stage, reason=move.reason)
        shrunk = shrink_excerpts(self._set, unread, self.budget, self._pressure_move)
        for move in with_their_turns(self._set, shrunk, hard | soft):
            self._move(self._set.items[move.id], move.to, stage=move.stage, reason=move.reason)
            shrunk.append(move)
        moves.extend(shrunk)
        moves.extend(
            clip_unread(
                self._set,
                unread,
                self.unread_limit,
                self._pressure_move,
                count_tokens=self.count_tokens,
                min_tokens=self.config.excerpt_min_tokens,
            )
        )
        return moves, result

    def window(
        self,
        entries: Sequence[Entry],
        *,
        fixed_tokens: int,
        collapse: bool = True,
        notes: Sequence[str] = (),
        tail: bool = True,
    ) -> Boundary:
        """One turn boundary of a conversation: :meth:`step`, then render ``entries`` as the
        model will see them (:mod:`veil.context.window`). ``fixed_tokens`` is what the request
        carries besides the conversation (system prompt, tool schemas). With ``tail`` the
        manifest and ``notes`` end the request once there is something to say.

        The rendering is the truth: when it costs more than the working set planned for (an
        item's stub in two places, results with no item, missing results), the difference
        corrects the plan and stage 2 runs again, at most twice; what was measured last is
        :attr:`live_tokens`."""
        report = self.step(overhead_tokens=fixed_tokens + self._tail_tokens)
        moves = list(report.moves)
        rendered = self._render(entries, collapse=collapse, notes=notes, tail=tail)
        for _ in range(2):
            self.overhead_tokens = fixed_tokens + rendered.tail_tokens
            if rendered.tokens - rendered.tail_tokens <= self.budget:
                break
            more, _ = self._evict(stages=False)
            if not more:
                break
            moves.extend(more)
            rendered = self._render(entries, collapse=collapse, notes=notes, tail=tail)
        self.overhead_tokens = fixed_tokens + rendered.tail_tokens
        conversation = rendered.tokens - rendered.tail_tokens
        report = replace(
            report, moves=tuple(moves), live_tokens_after=conversation, budget=self.budget
        )
        return Boundary(report, rendered)

    def render(
        self, entries: Sequence[Entry], *, collapse: bool = True, tail: bool = True
    ) -> Rendered:
        """``entries`` as the model would see them now, without a turn boundary: no step, no
        move (the proxy checks a request against its budget before deciding to evict)."""
        return self._render(entries, collapse=collapse, notes=(), tail=tail)

    def _render(
        self, entries: Sequence[Entry], *, collapse: bool, notes: Sequence[str], tail: bool
    ) -> Rendered:
        text = self.tail(notes) if tail else ""
        renderer = self._renderer
        if renderer is None or renderer.collapse != collapse:
            renderer = Renderer(
                self._count,
                stub_chars=self.config.stub_chars,
                collapse=collapse,
                expand=self.config.expand_tool,
            )
            self._renderer = renderer
            changed: set[str] | None = None
        else:
            changed = self._looks_changed
        rendered = renderer.render(entries, self._set.items, changed=changed, tail=text)
        self._looks_changed = set()
        self._tail_tokens = rendered.tail_tokens
        self._set.correction = rendered.tokens - rendered.tail_tokens - self._set.raw_tokens()
        return rendered

    def tail(self, notes: Sequence[str] = ()) -> str:
        """What ends a request: the manifest with ``notes`` (the convergence note) — once there
        is something to say (an item left the prompt, a contradiction or a note exists).
        Before that it would only repeat the conversation, cost tokens every turn, and small
        models take a trailing note for a pattern to continue."""
        notes = [n for n in notes if n]
        evicted = not bool(self._set.cols.flag("live").all())
        if not (notes or evicted or self._book.list(unresolved_only=True)):
            return ""
        return self.manifest(notes=notes)

    def _state(self) -> dict[str, JSONValue]:
        return {
            "session_id": self.session_id,
            "tick": self.tick,
            "threshold": self._threshold.value,
            "last_regret_tick": self._threshold.last_regret_tick,
            "task": self._task_text[:2000],
            "turns": self._set.turns,
            "ratio": self.calibration.ratio,
            "samples": self.calibration.samples,
        }

    def _pressure_move(self, item: ContextItem, tier: Tier, reason: str, chars: int) -> None:
        self._move(item, tier, stage=2, reason=reason, excerpt=chars)

    def _move(
        self, item: ContextItem, tier: Tier, *, stage: int, reason: str, excerpt: int = 0
    ) -> ContextItem:
        updated = replace(item, tier=tier, excerpt=excerpt if tier != "live" else 0)
        self._set.update(updated)
        self._looks_changed.add(item.id)
        payload: dict[str, JSONValue] = {
            "id": item.id,
            "tier": tier,
            "stage": stage,
            "reason": reason,
            "tick": self.tick,
        }
        if updated.excerpt:
            payload["excerpt"] = updated.excerpt
        self._emit("context.tier", payload)
        if tier == "live":
            self._to_index.restored(item.id)
        elif item.tier == "live":
            self._to_index.demoted(item.id)
        return updated

    def _index_some(self, limit: int | None) -> None:
        """Make up to ``limit`` demoted items searchable (all when None)."""
        for item_id in self._to_index.take(limit):
            text = search_text(self._set.items[item_id])
            self._emit("context.indexed", {"id": item_id, "search_text": text})

    def _regret_if_returning(self, tool_name: str, target: str | None) -> None:
        if not target:
            return
        for item in self._set.with_target(tool_name, target):
            if item.tier != "live":
                self._regret(item.id, f"{tool_name} again")
                return

    def _regret(self, item_id: str, how: str) -> None:
        self._threshold = on_regret(self._threshold, tick=self.tick, config=self.config.threshold)
        self._emit(
            "context.regret",
            {"id": item_id, "how": how, "tick": self.tick, "threshold": self._threshold.value},
        )

    # ---- manifest and persistence -----------------------------------------------------

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

    def _emit(self, kind: str, payload: dict[str, JSONValue]) -> None:
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

    def _load(self) -> None:
        """Resume: rebuild the in-memory state of this session from the projection."""
        resumed = read_session(self.store, scope=self.scope, session_id=self.session_id)
        for entry in resumed.items:
            item = entry.item
            self._set.add(item)
            if item.tier != "live" and not entry.indexed:
                self._to_index.demoted(item.id)
            self._has_intent = self._has_intent or item.turn_kind == "intent"
            recall_files(self._book, item)
        if resumed.threshold is not None:
            self.tick = resumed.tick
            self._threshold = resumed.threshold
            self._task_text = resumed.task
            self.calibration = resumed.calibration
            if self._task_text:
                self._retask(tags=frozenset(tags_of(self._task_text)))
        for conflict in resumed.conflicts:
            self._book.restore(conflict)

    def _load_foreign(self, item_id: str) -> ContextItem | None:
        """An item of another session of this project (scope-bound: never another project)."""
        adopted = read_item(
            self.store, scope=self.scope, item_id=item_id, session_id=self.session_id
        )
        if adopted is not None:
            self._set.add(adopted)
        return adopted


__all__ = ["ContextEngine", "EvictionReport", "UnknownItem"]
