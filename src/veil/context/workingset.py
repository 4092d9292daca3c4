"""The engine's in-memory working set: every item of the session as a value and as a row of
numpy columns, so one pass scores all of them. Holds no I/O; the engine persists.

Rows are never removed (nothing is dropped); an item's row is rewritten when the item changes
(:meth:`WorkingSet.update`). Relevance and structure depend on the task and are recomputed for
every row when it changes (:meth:`WorkingSet.retask`), which is rare.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import numpy as np

from veil.clock import parse_time
from veil.context import fsrs
from veil.context.columns import Columns
from veil.context.config import ContextConfig
from veil.context.items import NEVER_EVICTED, ContextItem
from veil.context.references import ReferenceIndex
from veil.context.render import stub, turn_stub
from veil.context.score import Task, combine, static_part
from veil.context.signals import jaccard, structure
from veil.embed.protocol import Embedder

Floats = np.ndarray[Any, np.dtype[np.float64]]
Bools = np.ndarray[Any, np.dtype[np.bool_]]


class WorkingSet:
    def __init__(
        self, config: ContextConfig, count_tokens: Callable[[str], int], embedder: Embedder | None
    ) -> None:
        self._config = config
        self.count_tokens = count_tokens
        self.embedder = embedder
        self.task = Task()
        self.items: dict[str, ContextItem] = {}
        self.ids: list[str] = []
        self.cols = Columns()
        self._row: dict[str, int] = {}
        self._by_call: dict[str, list[str]] = {}
        self._by_target: dict[tuple[str, str], list[str]] = {}
        self._reads: dict[str, list[str]] = {}
        """Results that read a file (whole or a range), by path."""
        self._written: dict[str, int] = {}
        """The tick of the latest write to each file, by path."""
        self._children: dict[str, list[str]] = {}
        self._turn_matrix = np.zeros((0, 1), dtype=np.float32)
        """One row per turn (its embedding, computed once at capture), grown geometrically."""
        self._turn_ids: list[str] = []
        self._sim_cache: tuple[int, Floats] | None = None
        self._turn_rows = np.zeros(64, dtype=np.int64)
        """Row of each turn, by ordinal (the first ``turns`` entries), grown geometrically."""
        self._dirty: list[int] = []
        """Rows whose clock-free score parts must be recomputed before the next scoring."""
        self._version = 0
        """Bumped by every change that can move what the prompt costs (live tokens cache)."""
        self._live_tokens: tuple[int, int] | None = None
        self._scored: tuple[tuple[int, int, int], Floats] | None = None
        """The last scores and the (tick, version, turn version) they were computed at."""
        self._turn_factor: tuple[tuple[int, int], Floats] | None = None
        self._turn_version = 0
        """Bumped when a turn's kind or pin changes (the cached turn factor depends on them)."""
        self._ring = np.zeros((0, 0), dtype=np.float32)
        self._ring_done = 0
        self.correction = 0
        """Rendered conversation tokens minus :meth:`raw_tokens`, as of the last rendering."""
        self.references = ReferenceIndex(paths_only=config.reference_names == "paths")
        """Distinctive names in non-turn items' content, for re-reference touches."""

    @property
    def config(self) -> ContextConfig:
        return self._config

    @config.setter
    def config(self, value: ContextConfig) -> None:
        """A new configuration (weights, horizons, turn rules): every cached score part, turn
        factor and similarity is recomputed at the next scoring; stubs are sized again when
        their text may have changed."""
        before, self._config = self._config, value
        if (before.stub_chars, before.expand_tool) != (value.stub_chars, value.expand_tool):
            for item_id, row in self._row.items():
                self._size_stub(row, self.items[item_id])
        self._dirty = list(range(self.cols.size))
        self._turn_factor = None
        self._sim_cache = None
        self._version += 1

    # ---- lookups --------------------------------------------------------------------

    def row(self, item_id: str) -> int:
        return self._row[item_id]

    def rows_of(self, item_ids: Collection[str]) -> Bools:
        """``item_ids`` as a row mask (ids of no item are ignored)."""
        rows = np.zeros(self.cols.size, dtype=np.bool_)
        for item_id in item_ids:
            row = self._row.get(item_id)
            if row is not None:
                rows[row] = True
        return rows

    def call_item(self, tool_call_id: str) -> str | None:
        """The latest item holding a result of ``tool_call_id`` (some models reuse ids)."""
        found = self._by_call.get(tool_call_id)
        return found[-1] if found else None

    def items_for_call(self, tool_call_id: str) -> list[ContextItem]:
        return [self.items[i] for i in self._by_call.get(tool_call_id, [])]

    def children(self, turn_id: str) -> list[str]:
        """The results of the calls a turn made."""
        return self._children.get(turn_id, [])

    def with_target(self, tool_name: str, target: str) -> list[ContextItem]:
        return [self.items[i] for i in self._by_target.get((tool_name, target), [])]

    @property
    def turns(self) -> int:
        return len(self._turn_ids)

    def raw_tokens(self) -> int:
        """Live items in full, evicted results and turns as their stubs. Cached until the next
        change to an item."""
        cached = self._live_tokens
        if cached is not None and cached[0] == self._version:
            return cached[1]
        live = self.cols.flag("live")
        total = int(
            self.cols.view("tokens")[live].sum() + self.cols.view("stub_tokens")[~live].sum()
        )
        self._live_tokens = (self._version, total)
        return total

    def live_tokens(self) -> int:
        """What the prompt's conversation costs, as the planner sees it: :meth:`raw_tokens`
        plus :attr:`correction`, the difference the last rendering measured (collapsed runs,
        an item's stub in two places, parts no item stands for). The renderer
        (:mod:`veil.context.window`) owns what is sent; this follows it."""
        return self.raw_tokens() + self.correction

    def _add_turn_vector(self, ordinal: int, vector: np.ndarray[Any, np.dtype[np.float32]]) -> None:
        matrix = self._turn_matrix
        if matrix.shape[1] != vector.shape[0]:  # the first turn fixes the width
            matrix = np.zeros((max(64, ordinal + 1), vector.shape[0]), dtype=np.float32)
        elif ordinal >= matrix.shape[0]:
            grown = np.zeros((2 * matrix.shape[0] + 1, matrix.shape[1]), dtype=np.float32)
            grown[: matrix.shape[0]] = matrix
            matrix = grown
        matrix[ordinal] = vector
        self._turn_matrix = matrix

    def _turn_row_array(self) -> np.ndarray[Any, np.dtype[np.int64]]:
        return self._turn_rows[: len(self._turn_ids)]

    # ---- changes --------------------------------------------------------------------

    def add(self, item: ContextItem) -> None:
        row = self.cols.add()
        self._row[item.id] = row
        self.ids.append(item.id)
        if item.tool_call_id:
            self._by_call.setdefault(item.tool_call_id, []).append(item.id)
        f, b = self.cols.f, self.cols.b
        self._supersede(item)
        if item.tool_name and item.target:
            self._by_target.setdefault((item.tool_name, item.target), []).append(item.id)
        if item.effect in ("read", "read_part") and item.code_refs:
            self._reads.setdefault(item.code_refs[0], []).append(item.id)
        if item.effect == "write" and item.code_refs:
            self._written[item.code_refs[0]] = item.created_tick
        if item.parent:
            self._children.setdefault(item.parent, []).append(item.id)
        if item.kind != "turn" and self.config.touch_on_reference:
            self.references.add(item.id, item.content)
        f["tokens"][row] = item.tokens
        self._size_stub(row, item)
        f["created_tick"][row] = item.created_tick
        b["result"][row] = item.tool_call_id is not None
        f["turn_index"][row] = -1
        f["manual_tick"][row] = -1e9 if item.manual_tick is None else item.manual_tick
        b["procedural"][row] = item.kind == "procedural"
        b["is_turn"][row] = item.kind == "turn"
        if item.kind == "turn":
            ordinal = len(self._turn_ids)
            f["turn_index"][row] = ordinal
            if ordinal >= len(self._turn_rows):
                grown = np.zeros(2 * len(self._turn_rows), dtype=np.int64)
                grown[:ordinal] = self._turn_rows[:ordinal]
                self._turn_rows = grown
            self._turn_rows[ordinal] = row
            self._turn_ids.append(item.id)
            vector = (
                self.embedder.embed([item.content])[0]
                if self.embedder is not None
                else np.zeros(1, dtype=np.float32)
            )
            self._add_turn_vector(len(self._turn_ids) - 1, vector)
        self.update(item)

    def _size_stub(self, row: int, item: ContextItem) -> None:
        """What the item costs out of the prompt: a tool result or a turn leaves its stub (a
        clipped result its head and tail); other items leave nothing. Whether that stub is
        shorter than the item, in characters: no other is ever evicted."""
        config = self.config
        if item.tool_call_id:
            text = stub(item, config.stub_chars, config.expand_tool)
        elif item.kind == "turn":
            text = turn_stub(item, config.expand_tool)
        else:
            text = ""
        self.cols.f["stub_tokens"][row] = self.count_tokens(text) if text else 0.0
        self.cols.b["stub_shorter"][row] = len(text) < len(item.content)

    def _supersede(self, item: ContextItem) -> None:
        """A result the model asked for again makes the earlier ones redundant: the same call
        target (a command run again, the same range read again) or, for a whole-file read,
        every earlier read of that file. Pressure takes superseded results first: the newer
        one holds what the model would look for in them (or what replaced it)."""
        if item.tool_call_id is None or item.effect == "write":
            return
        earlier: list[str] = []
        if item.tool_name and item.target:
            earlier += self._by_target.get((item.tool_name, item.target), [])
        if item.effect == "read" and item.code_refs:
            earlier += self._reads.get(item.code_refs[0], [])
        for old in earlier:
            if old != item.id:
                self.cols.b["superseded"][self._row[old]] = True

    def update(self, item: ContextItem) -> None:
        row = self._row[item.id]
        f, b = self.cols.f, self.cols.b
        f["stability"][row] = item.stability
        f["durable_stability"][row] = item.durable_stability
        f["last_tick"][row] = item.last_access_tick
        f["last_wall"][row] = (
            parse_time(item.last_access_at).timestamp() if item.last_access_at else 0.0
        )
        f["access"][row] = item.access_count
        f["cognitive"][row] = item.cognitive_weight
        f["relevance"][row] = jaccard(item.tags, self.task.tags)
        f["structure"][row] = structure(item.code_refs, self.task.touched, self.task.neighbours)
        f["manual_tick"][row] = -1e9 if item.manual_tick is None else item.manual_tick
        f["tokens"][row] = item.tokens
        before = self.items.get(item.id)
        if item.excerpt or (
            before is not None and (before.excerpt, before.tokens) != (0, item.tokens)
        ):
            self._size_stub(row, item)  # clipped (head and tail), or back to one line, or resized
        b["clipped"][row] = bool(item.excerpt)
        b["manual"][row] = item.manual
        b["pinned"][row] = item.pinned
        b["live"][row] = item.tier == "live"
        b["warm"][row] = item.tier == "warm"
        b["never"][row] = item.kind in NEVER_EVICTED or item.turn_kind in NEVER_EVICTED
        if item.kind == "turn":
            f["turn_weight"][row] = self.config.turn_weights[item.turn_kind or "exploration"]
            if before is None or (before.turn_kind, before.pinned) != (item.turn_kind, item.pinned):
                self._turn_version += 1
        self.items[item.id] = item
        if len(self._dirty) > 2 * self.cols.size + 64:  # never scored for a while: all rows
            self._dirty = list(range(self.cols.size))
        self._dirty.append(row)
        self._version += 1

    def retask(self, task: Task) -> None:
        """A new task: each item's relevance (when the tags changed) and structure signal
        (for the items that point at a file whose place in the task changed) again. A session
        touches a new file every few calls, and a touch changes no tag: only the rows that
        changed are recomputed and rescored."""
        before, self.task = self.task, task
        relevance, structure_of = self.cols.f["relevance"], self.cols.f["structure"]
        tags_changed = task.tags != before.tags
        moved = (task.touched ^ before.touched) | (task.neighbours ^ before.neighbours)
        changed: list[int] = []
        for item in self.items.values():
            refs = item.code_refs
            if not tags_changed and not (refs and moved.intersection(refs)):
                continue
            row = self._row[item.id]
            if tags_changed:
                relevance[row] = jaccard(item.tags, task.tags)
            structure_of[row] = structure(refs, task.touched, task.neighbours)
            changed.append(row)
        self._dirty = list(range(self.cols.size)) if tags_changed else self._dirty + changed
        self._version += 1

    # ---- scoring --------------------------------------------------------------------

    def scores(self, tick: int) -> Floats:
        """Every item's score, in row order. A turn scores ``base × (1 − its turn eviction
        score)`` where base is 1 (``turn_score_base="constant"``) or the turn's own five-signal
        score (``"signals"``, the same scale as every other item, so that stage 2 weighs an old
        turn against an old tool result fairly).

        The same arithmetic as :func:`veil.context.score.score_many`, but the parts that do not
        move with the clock are kept per row (recomputed only for rows that changed) and each
        turn's factor is kept until a turn arrives or changes: this runs on every tool call.
        Scored twice at the same tick with no change between (a step, then the manifest of the
        request it renders), the second call is a copy of the first."""
        key = (tick, self._version, self._turn_version)
        if self._scored is None or self._scored[0] != key:
            self._scored = (key, self._score_all(tick))
        return self._scored[1].copy()

    def _score_all(self, tick: int) -> Floats:
        """Every item's score at ``tick``, computed (see :meth:`scores`)."""
        c = self.cols
        self._refresh_parts()
        recency = fsrs.retrievability_after_ticks(tick - c.view("last_tick"), c.view("rate"))
        boost = c.view("boost")
        scores = combine(recency, c.view("rest"), c.view("multiplier"), boost, self.config)
        if self.turns:
            rows = self._turn_row_array()
            factor = self._turn_factors()
            base = 1.0 if self.config.turn_score_base == "constant" else scores[rows] - boost[rows]
            scores[rows] = base * factor + boost[rows]
        return scores

    def _refresh_parts(self) -> None:
        """Recompute the clock-free score parts of the rows that changed, one row at a time in
        plain floats (the values of :func:`veil.context.score.static_parts` to floating-point
        precision; a row's parts never depend on how many rows changed with it)."""
        if not self._dirty:
            return
        rows = sorted(set(self._dirty))
        self._dirty = []
        f, b = self.cols.f, self.cols.b
        config, per_day = self.config, self.config.ticks_per_day
        access, relevance, structure_signal = f["access"], f["relevance"], f["structure"]
        cognitive_weight, stability = f["cognitive"], f["stability"]
        procedural, manual, pinned = b["procedural"], b["manual"], b["pinned"]
        rest, multiplier, boost, rate = f["rest"], f["multiplier"], f["boost"], f["rate"]
        for row in rows:
            rest[row], multiplier[row], boost[row] = static_part(
                access=int(access[row]),
                relevance=float(relevance[row]),
                structure_signal=float(structure_signal[row]),
                cognitive_weight=float(cognitive_weight[row]),
                procedural=bool(procedural[row]),
                manual=bool(manual[row]),
                pinned=bool(pinned[row]),
                config=config,
            )
            rate[row] = fsrs.decay_rate(float(stability[row]), per_day)

    def _turn_factors(self) -> Floats:
        """``1 − turn eviction score`` of each turn, by ordinal: 0 for the last
        ``protected_turns``, then rising with age over ``turn_age_span`` turns, weighted by the
        turn's kind and lowered for a turn much like a recent one. It depends only on the
        turns, so it is cached until one arrives or changes kind."""
        key = (self.turns, self._turn_version)
        cached = self._turn_factor
        if cached is not None and cached[0] == key:
            return cached[1]
        c = self.cols
        rows = self._turn_row_array()
        age = (self.turns - 1) - np.arange(self.turns, dtype=np.float64)
        protected = self.config.protected_turns
        evict = (
            np.clip((age - protected) / self.config.turn_age_span, 0.0, 1.0)
            * c.f["turn_weight"][rows]
        )
        evict = np.where(age < protected, 0.0, evict)
        sim = self.turn_similarity()[rows]
        evict = np.where(sim > self.config.turn_similarity, evict * (1.0 - sim), evict)
        factor = 1.0 - evict
        self._turn_factor = (key, factor)
        return factor

    def turn_similarity(self) -> Floats:
        """Each older turn's best cosine with the recent turns. It changes only when a turn
        arrives, so it is cached by the number of turns."""
        protected = self.config.protected_turns
        n_turns = self.turns
        cached = self._sim_cache
        if cached is not None and cached[0] == n_turns:
            if len(cached[1]) < self.cols.size:  # new non-turn items: similarity 0
                grown = np.zeros(self.cols.size, dtype=np.float64)
                grown[: len(cached[1])] = cached[1]
                self._sim_cache = (n_turns, grown)
                return grown
            return cached[1]
        sim = np.zeros(self.cols.size, dtype=np.float64)
        if self.embedder is not None and n_turns > protected > 0:
            sim[self._turn_row_array()[:-protected]] = self._recent_cosines(n_turns, protected)
        self._sim_cache = (n_turns, sim)
        return sim

    def _recent_cosines(
        self, n_turns: int, protected: int
    ) -> np.ndarray[Any, np.dtype[np.float32]]:
        """For each turn older than the last ``protected``, its largest cosine with one of them
        (what :func:`max_similarities` computes), kept incrementally: row ``j % protected``
        of a ring holds every earlier turn's cosine with turn ``j``, written once when turn
        ``j`` arrives (one matrix-vector product), so a new turn costs O(turns) instead of a
        matrix product over all turns."""
        matrix = self._turn_matrix
        ring = self._ring
        if ring.shape[0] != protected or self._ring_done > n_turns:
            ring = np.zeros((protected, 0), dtype=np.float32)
            self._ring_done = 0
        if ring.shape[1] < n_turns:
            grown = np.zeros((protected, max(64, 2 * n_turns)), dtype=np.float32)
            grown[:, : ring.shape[1]] = ring
            ring = grown
        # Row ``j % protected`` is contiguous: writing it and reducing over the few rows are
        # plain passes (a column per recent turn made both strided).
        for j in range(max(self._ring_done, n_turns - protected), n_turns):
            ring[j % protected, :j] = matrix[:j] @ matrix[j]
        self._ring = ring
        self._ring_done = n_turns
        return ring[:, : n_turns - protected].max(axis=0)

    def protected(self, tick: int) -> tuple[Bools, Bools, Bools]:
        """(hard, soft, threshold-exempt). Hard: pinned/intent/correction, never moved. Soft:
        the newest ``pressure_protected_turns`` turns, fresh manual loads, the newest tool
        results and the latest read of a file being edited (:meth:`editing`) — they yield only
        when the window cannot fit otherwise. Threshold-exempt: the last ``protected_turns``
        turns, which stage 1 never demotes (their turn eviction score is 0) but which window
        pressure may."""
        c = self.cols
        recent_manual = (tick - c.view("manual_tick")) < self.config.manual_protect_ticks
        turn_age = (self.turns - 1) - c.view("turn_index")
        is_turn = c.flag("is_turn")
        young_turn = is_turn & (turn_age < self.config.protected_turns)
        newest_turn = is_turn & (turn_age < self.config.pressure_protected_turns)
        unread = c.flag("result") & (
            (tick - c.view("created_tick")) < self.config.protected_results_ticks
        )
        return (
            c.flag("pinned") | c.flag("never"),
            newest_turn | recent_manual | unread | self.editing(tick),
            young_turn,
        )

    def editing(self, tick: int) -> Bools:
        """The latest whole read of each file written in the last ``editing_ticks``: the text
        the model copies what its next edit must match from."""
        rows = np.zeros(self.cols.size, dtype=np.bool_)
        for path, written in self._written.items():
            if tick - written >= self.config.editing_ticks:
                continue
            whole = [i for i in self._reads.get(path, ()) if self.items[i].effect == "read"]
            if whole:
                rows[self._row[whole[-1]]] = True
        return rows
