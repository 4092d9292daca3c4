"""The engine's in-memory working set: every item of the session as a value and as a row of
numpy columns, so one pass scores all of them. Holds no I/O; the engine persists.

Rows are never removed (nothing is dropped); an item's row is rewritten when the item changes
(:meth:`WorkingSet.update`). Relevance and structure depend on the task and are recomputed for
every row when it changes (:meth:`WorkingSet.retask`), which is rare.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from veil.clock import parse_time
from veil.context.columns import Columns
from veil.context.config import ContextConfig
from veil.context.items import NEVER_EVICTED, ContextItem
from veil.context.references import ReferenceIndex
from veil.context.render import range_note, stub, turn_stub
from veil.context.score import Task, score_many
from veil.context.signals import jaccard, structure
from veil.context.turns import max_similarities
from veil.embed.protocol import Embedder

Floats = np.ndarray[Any, np.dtype[np.float64]]
Bools = np.ndarray[Any, np.dtype[np.bool_]]


class WorkingSet:
    def __init__(
        self, config: ContextConfig, count_tokens: Callable[[str], int], embedder: Embedder | None
    ) -> None:
        self.config = config
        self.count_tokens = count_tokens
        self.embedder = embedder
        self.task = Task()
        self.items: dict[str, ContextItem] = {}
        self.ids: list[str] = []
        self.cols = Columns()
        self._row: dict[str, int] = {}
        self._by_call: dict[str, list[str]] = {}
        self._by_target: dict[tuple[str, str], list[str]] = {}
        self._children: dict[str, list[str]] = {}
        self._turn_vectors: list[np.ndarray[Any, np.dtype[np.float32]]] = []
        self._turn_ids: list[str] = []
        self._sim_cache: tuple[int, Floats] | None = None
        self.references = ReferenceIndex(paths_only=config.reference_names == "paths")
        """Distinctive names in non-turn items' content, for re-reference touches."""

    # ---- lookups --------------------------------------------------------------------

    def row(self, item_id: str) -> int:
        return self._row[item_id]

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

    def live_tokens(self) -> int:
        """Tokens of the prompt as rendered: live items in full, evicted results and turns as
        stubs — except steps whose turn and results are all out, which render as one note per
        run of them (:meth:`collapsed`)."""
        live = self.cols.flag("live")
        stubs = self.cols.view("stub_tokens").copy()
        rows, notes = self.collapsed()
        stubs[rows] = 0.0
        return int(self.cols.view("tokens")[live].sum() + stubs[~live].sum() + notes)

    def collapsed(self) -> tuple[list[int], int]:
        """Rows of the steps that render as part of a collapsed run (a turn out of the prompt
        with every result of its calls out, none clipped), and the tokens of the notes their
        runs render as (in turn order; any other turn ends a run)."""
        c = self.cols
        live = c.flag("live")
        rows: list[int] = []
        notes = 0
        run: list[ContextItem] = []
        run_tokens = steps = 0

        def close() -> int:
            return self.count_tokens(range_note(run, run_tokens, steps)) if run else 0

        for turn_id in self._turn_ids:
            kids = self._children.get(turn_id, [])
            turn_row = self._row[turn_id]
            kid_rows = [self._row[k] for k in kids]
            ok = bool(kids) and not live[turn_row]
            ok = ok and not any(live[r] or self.items[self.ids[r]].excerpt for r in kid_rows)
            if ok:
                rows.append(turn_row)
                rows.extend(kid_rows)
                run.extend(self.items[k] for k in kids)
                run_tokens += self.items[turn_id].tokens + sum(self.items[k].tokens for k in kids)
                steps += 1
            elif run:
                notes += close()
                run, run_tokens, steps = [], 0, 0
        return rows, notes + close()

    def collapsible(self, protected: Bools) -> Bools:
        """Rows whose eviction would leave no stub: turns, and results whose turn may leave
        with them (it is not protected)."""
        c = self.cols
        out = c.flag("is_turn").copy()
        for turn_id, kids in self._children.items():
            if not protected[self._row[turn_id]]:
                out[[self._row[k] for k in kids]] = True
        return out

    # ---- changes --------------------------------------------------------------------

    def add(self, item: ContextItem) -> None:
        row = self.cols.add()
        self._row[item.id] = row
        self.ids.append(item.id)
        if item.tool_call_id:
            self._by_call.setdefault(item.tool_call_id, []).append(item.id)
        if item.tool_name and item.target:
            self._by_target.setdefault((item.tool_name, item.target), []).append(item.id)
        if item.parent:
            self._children.setdefault(item.parent, []).append(item.id)
        if item.kind != "turn" and self.config.touch_on_reference:
            self.references.add(item.id, item.content)
        f, b = self.cols.f, self.cols.b
        f["tokens"][row] = item.tokens
        # An evicted tool result or turn leaves a stub in the transcript; other items nothing.
        cold = replace(item, tier="cold")
        f["stub_tokens"][row] = (
            self.count_tokens(stub(cold))
            if item.tool_call_id
            else self.count_tokens(turn_stub(cold))
            if item.kind == "turn"
            else 0.0
        )
        f["created_tick"][row] = item.created_tick
        b["result"][row] = item.tool_call_id is not None
        f["turn_index"][row] = -1
        f["manual_tick"][row] = -1e9 if item.manual_tick is None else item.manual_tick
        b["procedural"][row] = item.kind == "procedural"
        b["is_turn"][row] = item.kind == "turn"
        if item.kind == "turn":
            f["turn_index"][row] = len(self._turn_ids)
            self._turn_ids.append(item.id)
            self._turn_vectors.append(
                self.embedder.embed([item.content])[0]
                if self.embedder is not None
                else np.zeros(1, dtype=np.float32)
            )
        self.update(item)

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
        before = self.items.get(item.id)
        if item.excerpt:  # a clipped result is shown as its head and tail
            f["stub_tokens"][row] = self.count_tokens(stub(item))
        elif before is not None and before.excerpt:  # …and once read, as its one-line stub
            f["stub_tokens"][row] = self.count_tokens(stub(replace(item, tier="cold")))
        b["manual"][row] = item.manual
        b["pinned"][row] = item.pinned
        b["live"][row] = item.tier == "live"
        b["warm"][row] = item.tier == "warm"
        b["never"][row] = item.kind in NEVER_EVICTED or item.turn_kind in NEVER_EVICTED
        if item.kind == "turn":
            f["turn_weight"][row] = self.config.turn_weights[item.turn_kind or "exploration"]
        self.items[item.id] = item

    def retask(self, task: Task) -> None:
        self.task = task
        for item in self.items.values():
            row = self._row[item.id]
            self.cols.f["relevance"][row] = jaccard(item.tags, task.tags)
            self.cols.f["structure"][row] = structure(item.code_refs, task.touched, task.neighbours)

    # ---- scoring --------------------------------------------------------------------

    def scores(self, tick: int) -> Floats:
        """Every item's score, in row order. A turn scores ``base × (1 − its turn eviction
        score)`` where base is 1 (``turn_score_base="constant"``) or the turn's own five-signal
        score (``"signals"``, the same scale as every other item, so that stage 2 weighs an old
        turn against an old tool result fairly)."""
        c = self.cols
        scores = score_many(
            stability=c.view("stability"),
            last_tick=c.view("last_tick"),
            access=c.view("access"),
            relevance=c.view("relevance"),
            structure_signal=c.view("structure"),
            cognitive_weight=c.view("cognitive"),
            procedural=c.flag("procedural"),
            manual=c.flag("manual"),
            pinned=c.flag("pinned"),
            tick=tick,
            config=self.config,
        )
        turns = c.flag("is_turn")
        if turns.any():
            age = (self.turns - 1) - c.view("turn_index")
            protected = self.config.protected_turns
            evict = np.clip((age - protected) / self.config.turn_age_span, 0.0, 1.0) * c.view(
                "turn_weight"
            )
            evict = np.where(age < protected, 0.0, evict)
            sim = self.turn_similarity()
            evict = np.where(sim > self.config.turn_similarity, evict * (1.0 - sim), evict)
            boost = np.where(c.flag("pinned"), self.config.weights.pin_boost, 0.0)
            base = 1.0 if self.config.turn_score_base == "constant" else scores - boost
            scores = np.where(turns, base * (1.0 - evict) + boost, scores)
        return scores

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
        if self.embedder is not None and n_turns > protected:
            matrix = np.stack(self._turn_vectors)
            best = max_similarities(matrix[:-protected], matrix[-protected:])
            sim[[self._row[i] for i in self._turn_ids[:-protected]]] = best
        self._sim_cache = (n_turns, sim)
        return sim

    def protected(self, tick: int) -> tuple[Bools, Bools, Bools]:
        """(hard, soft, threshold-exempt). Hard: pinned/intent/correction, never moved. Soft:
        the newest ``pressure_protected_turns`` turns, fresh manual loads and the newest tool
        results (the model has not read them yet) — they yield only when the window cannot fit
        otherwise. Threshold-exempt: the last ``protected_turns`` turns, which stage 1 never
        demotes (their turn eviction score is 0) but which window pressure may."""
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
            newest_turn | recent_manual | unread,
            young_turn,
        )
