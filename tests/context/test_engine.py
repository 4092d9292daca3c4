"""The context engine through its public API, on a real SQLite tape."""

from __future__ import annotations

import pytest

from tests.context.conftest import MakeEngine
from veil.context import MANIFEST_CLOSE, MANIFEST_OPEN, ContextEngine, UnknownItem
from veil.testing import FakeClock


def read(engine: ContextEngine, n: int, path: str, text: str):
    return engine.capture_tool_result(
        tool_call_id=f"call{n}",
        tool_name="read",
        arguments={"path": path},
        output=text,
        target=path,
        reads=path,
    )


def test_evicted_result_becomes_a_stub_and_expands_byte_identical(make_engine: MakeEngine) -> None:
    engine = make_engine(window_tokens=600, reserve_tokens=100)
    engine.capture_turn("user", "Fix the tokenizer bug in lexer.py")
    content = "def lex(src):\n    return [tok for tok in src.split()]  # naïve ✓\n" * 30
    big = read(engine, 1, "src/lexer.py", content)
    report = engine.step()
    for i in range(2, 6):
        read(engine, i, f"src/other{i}.py", f"x{i} = {i}\n" * 60)
        report = engine.step()
    assert engine.live_tokens <= engine.budget
    evicted = [i for i in engine.items() if i.tier != "live"]
    assert evicted, "a 600-token window must evict something"
    victim = evicted[0]
    stub = engine.stub(victim.id)
    assert victim.pointer in stub and (victim.target or "") in stub
    assert len(stub) < 260
    restored = engine.expand(victim.pointer)
    assert restored.content == victim.content and restored.tier == "live"
    assert big.content == content
    assert isinstance(report.threshold_after, float)


def test_reread_of_an_evicted_file_is_a_regret_that_halves_the_threshold(
    make_engine: MakeEngine,
) -> None:
    engine = make_engine()
    first = read(engine, 1, "src/a.py", "a = 1\n")
    engine.evict(first.id)
    before = engine.threshold
    read(engine, 2, "src/a.py", "a = 1\n")
    assert engine.threshold == pytest.approx(max(before * 0.5, 0.02))
    kinds = [e.kind for e in engine.store.read("project:test")]
    engine.flush()
    kinds = [e.kind for e in engine.store.read("project:test")]
    assert "context.regret" in kinds


def test_pinned_intent_and_corrections_are_never_demoted(make_engine: MakeEngine) -> None:
    engine = make_engine(window_tokens=400, reserve_tokens=50)
    intent = engine.capture_turn("user", "Make the CSV export stream rows " * 10)
    correction = engine.capture_turn("user", "No, keep the header row " * 10)
    note = engine.add("plan", "Step 1: write a failing test " * 10)
    engine.pin(note.id)
    for i in range(30):
        read(engine, i, f"src/f{i}.py", f"v{i} = {i}\n" * 40)
        engine.step()
        live = {it.id for it in engine.items("live")}
        assert {intent.id, correction.id, note.id} <= live
    with pytest.raises(ValueError, match="never evicted"):
        engine.evict(intent.id)
    with pytest.raises(ValueError, match="pinned"):
        engine.evict(note.id)
    assert correction.turn_kind == "correction"


def test_idle_wall_time_does_not_decay_the_live_tier(
    make_engine: MakeEngine, clock: FakeClock
) -> None:
    engine = make_engine()
    item = read(engine, 1, "src/a.py", "a = 1\n")
    before = engine.scores()[item.id]
    clock.advance(days=3)
    assert engine.scores()[item.id] == before
    for i in range(24):
        engine.capture_tool_result(
            tool_call_id=f"b{i}",
            tool_name="bash",
            arguments={"command": f"echo {i}"},
            output=str(i),
        )
    assert engine.scores()[item.id] < before


def test_touch_raises_stability_more_when_recalled_late(make_engine: MakeEngine) -> None:
    engine = make_engine()
    early = read(engine, 1, "src/a.py", "a\n")
    late = read(engine, 2, "src/b.py", "b\n")
    engine.touch(early.id)
    for i in range(40):
        engine.capture_tool_result(
            tool_call_id=f"x{i}", tool_name="bash", arguments={"command": f"true {i}"}, output=""
        )
    engine.touch(late.id)
    early_gain = engine.item(early.id).stability / early.stability
    late_gain = engine.item(late.id).stability / late.stability
    assert late_gain > early_gain > 1.0


def test_stage_three_moves_idle_warm_items_cold_with_a_pointer(
    make_engine: MakeEngine, clock: FakeClock
) -> None:
    engine = make_engine(cold_after_ticks=5)
    item = read(engine, 1, "src/a.py", "alpha\n")
    engine.evict(item.id)
    for i in range(6):
        engine.capture_tool_result(
            tool_call_id=f"x{i}", tool_name="bash", arguments={"command": f"true {i}"}, output=""
        )
    engine.step()
    assert engine.item(item.id).tier == "warm"  # durable R still high
    clock.advance(days=60)  # FSRS-6 decays by a power law: R(60 d, S = 0.5 d) ≈ 0.49
    report = engine.step()
    cold = engine.item(item.id)
    assert cold.tier == "cold" and cold.pointer == f"veil://cold/{item.id}"
    assert any(m.stage == 3 for m in report.moves)
    assert engine.expand(cold.pointer).content == "alpha\n"


def test_manifest_lists_loaded_items_threshold_fill_and_conflicts(
    make_engine: MakeEngine, tmp_path: object
) -> None:
    engine = make_engine()
    read(engine, 1, "src/a.py", "a = 1\n")
    read(engine, 2, "src/a.py", "a = 2\n")  # the file changed under us: a contradiction
    manifest = engine.manifest()
    assert manifest.startswith(MANIFEST_OPEN) and manifest.endswith(MANIFEST_CLOSE)
    assert "threshold T=" in manifest and "tokens of the conversation's budget" in manifest
    assert "read src/a.py" in manifest
    (conflict,) = engine.conflicts()
    assert conflict.id in manifest and "call1" in manifest and "call2" in manifest
    settled = engine.resolve(
        conflict.id, keep=conflict.b.item_id, reason="re-read after edit", actor="model"
    )
    assert settled.resolved and engine.conflicts() == []
    assert conflict.id not in engine.manifest()


def test_own_edits_are_not_contradictions(make_engine: MakeEngine) -> None:
    engine = make_engine()
    read(engine, 1, "src/a.py", "a = 1\n")
    engine.capture_tool_result(
        tool_call_id="e1",
        tool_name="edit",
        arguments={"path": "src/a.py", "old_text": "1", "new_text": "2"},
        output="edited",
        target="src/a.py",
        writes="src/a.py",
    )
    read(engine, 2, "src/a.py", "a = 2\n")
    assert engine.conflicts() == []


def test_fact_beliefs_conflict_with_provenance(make_engine: MakeEngine) -> None:
    engine = make_engine()
    a = engine.add("fact", "The API base URL is /v1", belief=("api", "base_url", "/v1"))
    b = engine.add("fact", "The API base URL is /v2", belief=("api", "base_url", "/v2"))
    (conflict,) = engine.conflicts()
    assert {conflict.a.item_id, conflict.b.item_id} == {a.id, b.id}
    assert conflict.a.session_id == "s1"
    with pytest.raises(ValueError):
        engine.resolve(conflict.id, keep="ci_other", reason="x", actor="model")
    with pytest.raises(ValueError):
        engine.resolve(conflict.id, keep=a.id, reason=" ", actor="model")


def test_resume_restores_items_tick_threshold_and_conflicts(make_engine: MakeEngine) -> None:
    engine = make_engine()
    engine.capture_turn("user", "Fix the lexer")
    item = read(engine, 1, "src/a.py", "a = 1\n")
    read(engine, 2, "src/a.py", "a = 2\n")
    engine.evict(item.id)
    engine.step()
    again = make_engine()
    assert again.tick == engine.tick and again.threshold == engine.threshold
    assert {i.id: i.tier for i in again.items()} == {i.id: i.tier for i in engine.items()}
    assert [c.id for c in again.conflicts()] == [c.id for c in engine.conflicts()]
    assert again.expand(item.pointer).content == "a = 1\n"


def test_warm_items_are_searchable_and_loadable_by_hand(make_engine: MakeEngine) -> None:
    engine = make_engine()
    item = read(engine, 1, "src/payments.py", "def refund(order):\n    charge_back(order)\n")
    engine.evict(item.id)
    engine.flush()
    hits = engine.search("refund charge_back")
    assert [h.id for h in hits][:1] == [item.id]
    loaded = engine.load(item.id)
    assert loaded.manual and loaded.tier == "live"
    scores = engine.scores()
    assert scores[item.id] > 0


def test_other_projects_items_cannot_be_expanded(make_engine: MakeEngine) -> None:
    engine = make_engine()
    with pytest.raises(UnknownItem):
        engine.expand("veil://warm/ci_doesnotexist")
    with pytest.raises(UnknownItem):
        engine.expand("veil://warm/../../etc/passwd")


def test_cognitive_weight_follows_outcomes_of_used_items(make_engine: MakeEngine) -> None:
    engine = make_engine()
    used = read(engine, 1, "src/a.py", "a\n")
    idle = read(engine, 2, "src/b.py", "b\n")
    before = engine.scores()
    engine.record_outcome(True, [used.id])
    after = engine.scores()
    assert after[used.id] > before[used.id] and after[idle.id] == before[idle.id]
    engine.record_outcome(False, [used.id, used.id, used.id])
    assert engine.item(used.id).cognitive_weight < 0


def test_convergence_warning_halves_the_threshold(make_engine: MakeEngine) -> None:
    engine = make_engine()
    before = engine.threshold
    engine.convergence_warning()
    assert engine.threshold == pytest.approx(before / 2)


def test_similar_old_turns_are_rescued(make_engine: MakeEngine) -> None:
    engine = make_engine()
    old = engine.capture_turn(
        "assistant",
        "The flaky test is test_upload_retry in tests/test_upload.py",
        turn_kind="status",
    )
    filler = [
        engine.capture_turn(
            "assistant", f"Looked at unrelated module number {i}", turn_kind="status"
        )
        for i in range(25)
    ]
    scores = engine.scores()
    assert scores[old.id] < 1.0
    engine.capture_turn(
        "assistant",
        "The flaky test is test_upload_retry in tests/test_upload.py again",
        turn_kind="status",
    )
    rescued = engine.scores()[old.id]
    assert rescued > scores[old.id]
    now = engine.scores()
    # Recent turns carry no turn eviction score: above an old, dissimilar one of the same kind.
    assert now[filler[-1].id] > now[filler[0].id]


def test_rebuild_of_the_context_tape_is_identical(make_engine: MakeEngine) -> None:
    engine = make_engine(window_tokens=500, reserve_tokens=50)
    engine.capture_turn("user", "Refactor the parser")
    for i in range(12):
        read(engine, i, f"src/m{i}.py", f"m{i} = {i}\n" * 30)
        engine.step()
    before = engine.store.snapshot()
    engine.store.rebuild()
    assert engine.store.snapshot() == before


def test_indexing_of_a_burst_is_spread_but_search_sees_everything(make_engine: MakeEngine) -> None:
    engine = make_engine(index_per_step=2)
    items = [
        read(engine, i, f"src/burst{i}.py", f"def burst_{i}(): return {i}\n") for i in range(6)
    ]
    for it in items:
        engine.evict(it.id)
    engine.step()
    indexed = [e for e in engine.store.read("project:test", kinds=["context.indexed"])]
    assert len(indexed) == 2
    resumed = make_engine()  # a new process picks up the rest of the queue
    hits = {h.id for h in resumed.search("burst_5 burst_3 burst_0")}
    assert {items[5].id, items[3].id, items[0].id} <= hits


def test_resume_keeps_what_conflict_detection_knows(make_engine: MakeEngine) -> None:
    engine = make_engine()
    read(engine, 1, "src/a.py", "a = 1\n")
    engine.capture_tool_result(
        tool_call_id="w1",
        tool_name="write",
        arguments={"path": "src/b.py", "content": "b"},
        output="wrote",
        target="src/b.py",
        writes="src/b.py",
    )
    read(engine, 2, "src/b.py", "b\n")
    engine.step()
    again = make_engine()
    read(again, 3, "src/a.py", "a = 2\n")  # changed behind our back: a contradiction
    read(again, 4, "src/b.py", "b\n")  # unchanged
    assert [c.subject for c in again.conflicts()] == ["src/a.py"]


def test_turn_score_base_puts_turns_on_the_item_scale(make_engine: MakeEngine) -> None:
    """With base "constant" a recent turn scores exactly 1 (above every unpinned item); with
    "signals" it scores its own five-signal score, so a fresh tool result can outrank an old
    turn."""
    for base in ("constant", "signals"):
        engine = make_engine(session=f"s-{base}", turn_score_base=base)
        engine.capture_turn("user", "Fix the date parser", target="turn:1")
        turns = [
            engine.capture_turn("assistant", f"Reading module {i}", calls=["look"])
            for i in range(30)
        ]
        result = engine.capture_tool_result(
            tool_call_id="c1",
            tool_name="read",
            arguments={"path": "a.py"},
            output="x = 1\n",
            target="a.py",
            reads="a.py",
        )
        scores = engine.scores()
        if base == "constant":
            assert scores[turns[-1].id] == 1.0
            assert scores[turns[0].id] > scores[result.id]
        else:
            assert scores[turns[-1].id] < 1.0
            assert scores[turns[0].id] < scores[turns[-1].id]
            assert scores[result.id] > scores[turns[0].id]


def _scores_recomputed(engine: ContextEngine) -> dict[str, float]:
    """Every score from scratch (``score_many`` over the columns, the turn factor from each
    turn's age, kind and similarity): what the working set's cached parts must equal."""
    import numpy as np

    from veil.context.score import score_many

    ws = engine.memory.working_set
    c, config = ws.cols, engine.config
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
        tick=engine.tick,
        config=config,
    )
    turns = c.flag("is_turn")
    age = (ws.turns - 1) - c.view("turn_index")
    evict = np.clip((age - config.protected_turns) / config.turn_age_span, 0.0, 1.0)
    evict = np.where(age < config.protected_turns, 0.0, evict * c.view("turn_weight"))
    sim = ws.turn_similarity()
    evict = np.where(sim > config.turn_similarity, evict * (1.0 - sim), evict)
    boost = np.where(c.flag("pinned"), config.weights.pin_boost, 0.0)
    scores = np.where(turns, (scores - boost) * (1.0 - evict) + boost, scores)
    return {item_id: float(scores[i]) for i, item_id in enumerate(ws.ids)}


def test_cached_score_parts_equal_scores_recomputed_from_scratch(make_engine: MakeEngine) -> None:
    """The hot path keeps each item's clock-free score parts and each turn's factor between
    calls; after captures, touches, pins, manual loads, evictions, turn kinds and a new task
    they must still equal a full recomputation (and the scalar ``score`` for non-turns) — also
    after the configuration changes mid-session."""
    import random

    from veil.context.score import score

    rng = random.Random(7)
    engine = make_engine(window_tokens=4_000, reserve_tokens=500, protected_turns=3)
    engine.capture_turn("user", "Fix the tokenizer in src/lexer.py")
    for n in range(120):
        roll = rng.random()
        if roll < 0.2:
            engine.capture_turn("assistant", f"looking at module {n % 7} and lexer", calls=["look"])
        else:
            body = f"def f{n}(x):\n    return x * {n}\n" * (n % 9 + 1)
            read(engine, n, f"src/m{n % 11}.py", body)
        items = engine.items()
        pick = items[rng.randrange(len(items))]
        action = rng.randrange(6)
        if action == 0:
            engine.touch(pick.id)
        elif action == 1 and pick.kind != "turn":
            engine.pin(pick.id, not pick.pinned)
        elif action == 2:
            engine.load(pick.id)
        elif action == 3 and pick.kind == "turn":
            engine.mark_turn(pick.id, rng.choice(["decision", "status", "exploration"]))
        elif action == 4 and n % 40 == 39:
            engine.set_task(f"Now fix module {n % 11} and the parser")
        if n == 70:  # new weights and horizons mid-session: every cached part is stale
            from dataclasses import replace

            config = engine.config
            engine.config = replace(
                config,
                weights=replace(config.weights, recency=0.5, frequency=0.05, procedural=2.0),
                ticks_per_day=96.0,
                turn_age_span=5,
            )
        if n % 10 == 9:  # an old turn changes kind with no new turn: the cached factor moves
            old = next(i for i in engine.items() if i.kind == "turn" and i.turn_kind != "intent")
            engine.mark_turn(old.id, "status" if old.turn_kind != "status" else "exploration")
        engine.step()
        if n % 10 == 9:
            got, want = engine.scores(), _scores_recomputed(engine)
            assert got.keys() == want.keys()
            for item_id, value in want.items():
                assert got[item_id] == pytest.approx(value, rel=1e-12, abs=1e-12), item_id
            for it in engine.items():
                if it.kind != "turn":
                    expected = score(it, engine.task, engine.tick, engine.config)
                    assert got[it.id] == pytest.approx(expected, rel=1e-12), it.id
