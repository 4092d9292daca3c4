"""Deferred persistence and the incremental structures of the hot path.

``step`` with ``deferred=True`` decides in memory; ``persist_in_background`` writes what it
buffered, in order, on the engine's writer thread; a failed write loses nothing and is raised
on the owner's next call. The incremental turn similarities and the vectorised collapse must
equal their from-scratch definitions after every change.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from tests.context.conftest import MakeEngine
from veil.context import ContextConfig, ContextEngine
from veil.context.projection import ITEMS
from veil.context.render import turn_stub
from veil.context.turns import max_similarities
from veil.tape import Event
from veil.tape.sqlite import SQLiteStore
from veil.testing import FakeClock, HashEmbedder


def engine_on(
    store: SQLiteStore, clock: FakeClock, *, register: bool = True, **config: Any
) -> ContextEngine:
    return ContextEngine(
        store,
        session_id="s1",
        scope="project:test",
        config=ContextConfig(**config),
        embedder=HashEmbedder(),
        clock=clock,
        deferred=True,
        register=register,
    )


def call(engine: ContextEngine, n: int, size: int = 20) -> str:
    turn = engine.capture_turn("assistant", f"Running step {n}.", calls=["act"])
    item = engine.capture_tool_result(
        tool_call_id=f"call-{n}",
        tool_name="bash",
        arguments={"command": f"echo {n}"},
        output="".join(f"out {n} line {i}\n" for i in range(size)),
        parent=turn.id,
    )
    return item.id


def stored_items(store: SQLiteStore) -> set[str]:
    return {str(r["item_id"]) for r in store.fetch(ITEMS, scope="project:test")}


def test_a_deferred_step_writes_nothing_until_persisted(tmp_path: Path) -> None:
    clock = FakeClock()
    store = SQLiteStore(tmp_path / "c.db", embedder=HashEmbedder(), clock=clock)
    engine = engine_on(store, clock, window_tokens=400, reserve_tokens=0)
    ids: list[str] = []
    for n in range(12):
        ids.append(call(engine, n))
        engine.step()
    assert stored_items(store) == set()
    engine.persist_in_background()
    engine.wait()
    assert stored_items(store) >= set(ids)
    # what step decided is on the tape too: a reopened engine resumes the same tiers
    tiers = {i.id: i.tier for i in engine.items()}
    engine.close()
    again = engine_on(store, clock, register=False, window_tokens=400, reserve_tokens=0)
    assert {i.id: i.tier for i in again.items()} == tiers
    assert any(t != "live" for t in tiers.values())
    store.close()


class FailingAppends(SQLiteStore):
    """A store whose appends fail while ``broken`` is set (a full disk, say)."""

    broken = False

    def append(self, events: Any, *, keep_recorded_at: bool = False) -> Any:
        if self.broken:
            raise OSError("disk full")
        return super().append(events, keep_recorded_at=keep_recorded_at)


def test_a_failed_background_write_is_raised_and_loses_nothing(tmp_path: Path) -> None:
    clock = FakeClock()
    store = FailingAppends(tmp_path / "c.db", embedder=HashEmbedder(), clock=clock)
    engine = engine_on(store, clock)
    first = call(engine, 1)
    engine.step()
    store.broken = True
    engine.persist_in_background()
    with pytest.raises(OSError, match="disk full"):
        engine.wait()
    assert stored_items(store) == set()
    second = call(engine, 2)
    engine.step()
    with pytest.raises(OSError, match="disk full"):
        engine.flush()  # still broken: the kept batch and the new one stay kept
    store.broken = False
    engine.flush()  # the failed batch first, then the rest, in order
    assert stored_items(store) == {first, second} | {
        i.id for i in engine.items() if i.kind == "turn"
    }
    written = [
        cast(dict[str, Any], e.payload["item"])["item_id"]
        for e in store.read("project:test", kinds=["context.item"])
    ]
    assert written.index(first) < written.index(second)
    engine.close()
    store.close()


def test_background_writes_keep_their_order(tmp_path: Path) -> None:
    clock = FakeClock()
    store = SQLiteStore(tmp_path / "c.db", embedder=HashEmbedder(), clock=clock)
    engine = engine_on(store, clock, window_tokens=300, reserve_tokens=0)
    for n in range(30):
        call(engine, n)
        engine.step()
        engine.persist_in_background()
    engine.close()
    events: list[Event] = store.read("project:test")
    ticks = [cast(int, e.payload["tick"]) for e in events if e.kind == "context.state"]
    assert ticks == sorted(ticks) and len(ticks) == 30
    assert not store.check().problems
    store.close()


def test_incremental_structures_equal_their_definitions(make_engine: MakeEngine) -> None:
    engine = make_engine(window_tokens=900, reserve_tokens=0, protected_turns=3)
    ws = engine.memory.working_set
    rng = np.random.default_rng(7)
    for n in range(60):
        call(engine, n, size=int(rng.integers(2, 60)))
        if n % 7 == 3:  # a turn with no calls breaks a run
            engine.capture_turn("assistant", f"Thinking about {n}.")
        engine.step()
        live = ws.cols.flag("live")
        want = sum(i.tokens for i in ws.items.values() if i.tier == "live") + sum(
            ws.count_tokens(engine.stub(i.id))
            if i.tool_call_id
            else ws.count_tokens(turn_stub(i))
            if i.kind == "turn"
            else 0
            for i in ws.items.values()
            if i.tier != "live"
        )
        assert ws.raw_tokens() == want and int(live.sum()) >= 1
        sim = ws.turn_similarity()
        turns = [ws.row(t) for t in ws._turn_ids]  # pyright: ignore[reportPrivateUsage]
        p = ws.config.protected_turns
        if len(turns) > p:
            vectors = HashEmbedder().embed([ws.items[ws.ids[r]].content for r in turns])
            best = max_similarities(vectors[:-p], vectors[-p:])
            np.testing.assert_allclose(sim[turns[:-p]], best, rtol=1e-5, atol=1e-6)
    assert any(engine.item(i).tier != "live" for i in ws.ids)
