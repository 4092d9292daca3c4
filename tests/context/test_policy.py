"""Pure decisions: score, AIMD threshold, the three stages, turns."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from veil.context.config import TURN_WEIGHTS, ContextConfig, ThresholdConfig
from veil.context.eviction import Depth, plan
from veil.context.items import ContextItem
from veil.context.score import Task, score, score_many
from veil.context.threshold import Threshold, on_regret, on_tick
from veil.context.turns import classify_turn, eviction_score

CONFIG = ContextConfig()
TASK = Task(
    tags=frozenset({"parser", "tokens", "lexer"}),
    touched=frozenset({"src/lexer.py"}),
    neighbours=frozenset({"src/tokens.py"}),
)


def item(**kw: object) -> ContextItem:
    base: dict[str, object] = {
        "id": "ci_1",
        "kind": "file",
        "content": "x",
        "tokens": 10,
        "tags": ("parser", "lexer", "io"),
        "code_refs": ("src/lexer.py",),
        "stability": 0.5,
        "last_access_tick": 0,
        "access_count": 3,
    }
    base.update(kw)
    return ContextItem(**base)  # type: ignore[arg-type]


def test_score_is_the_weighted_sum_of_five_signals() -> None:
    s = score(item(), TASK, tick=0, config=CONFIG)
    w = CONFIG.weights
    from math import log1p

    expected = (
        w.recency * 1.0
        + w.frequency * log1p(3) / log1p(20)
        + w.relevance * (2 / 4)
        + w.structure * 1.0
        + w.cognitive * 0.5
    )
    assert s == pytest.approx(expected)


def test_multipliers_and_pin_boost() -> None:
    plain = score(item(), TASK, tick=5, config=CONFIG)
    assert score(item(kind="procedural"), TASK, tick=5, config=CONFIG) == pytest.approx(plain * 1.2)
    assert score(item(manual=True), TASK, tick=5, config=CONFIG) == pytest.approx(plain * 1.5)
    assert score(item(pinned=True), TASK, tick=5, config=CONFIG) > CONFIG.threshold.maximum + 1


def test_recency_decays_on_ticks_not_wall_time() -> None:
    fresh = score(item(), TASK, tick=0, config=CONFIG)
    later = score(item(), TASK, tick=48, config=CONFIG)
    assert later < fresh
    # years of wall time without a tick change nothing: the live horizon counts ticks
    idle = item(last_access_at="2020-01-01T00:00:00+00:00")
    assert score(idle, TASK, tick=0, config=CONFIG) == pytest.approx(fresh)


def test_structure_signal_reads_the_code_graph() -> None:
    touched = score(item(code_refs=("src/lexer.py",)), TASK, tick=0, config=CONFIG)
    neighbour = score(item(code_refs=("src/tokens.py",)), TASK, tick=0, config=CONFIG)
    unrelated = score(item(code_refs=("docs/x.md",)), TASK, tick=0, config=CONFIG)
    assert touched > neighbour > unrelated


@given(
    st.integers(0, 500),
    st.floats(0.01, 7.0),
    st.integers(1, 100),
    st.floats(-1, 1),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_vectorised_score_equals_the_scalar_score(
    tick: int, s: float, access: int, cog: float, proc: bool, manual: bool, pinned: bool
) -> None:
    it = item(
        stability=s,
        access_count=access,
        cognitive_weight=cog,
        manual=manual,
        pinned=pinned,
        kind="procedural" if proc else "file",
        last_access_tick=0,
    )
    from veil.context.signals import jaccard, structure

    vec = score_many(
        stability=np.array([s]),
        last_tick=np.array([0.0]),
        access=np.array([float(access)]),
        relevance=np.array([jaccard(it.tags, TASK.tags)]),
        structure_signal=np.array([structure(it.code_refs, TASK.touched, TASK.neighbours)]),
        cognitive_weight=np.array([cog]),
        procedural=np.array([proc]),
        manual=np.array([manual]),
        pinned=np.array([pinned]),
        tick=tick,
        config=CONFIG,
    )
    assert vec[0] == pytest.approx(score(it, TASK, tick, CONFIG), rel=1e-12)


def test_same_inputs_same_score_across_processes() -> None:
    here = repr(score(item(), TASK, tick=17, config=CONFIG))
    code = (
        "from veil.context.config import ContextConfig\n"
        "from veil.context.items import ContextItem\n"
        "from veil.context.score import Task, score\n"
        "it = ContextItem(id='ci_1', kind='file', content='x', tokens=10, "
        "tags=('parser','lexer','io'), code_refs=('src/lexer.py',), stability=0.5, "
        "last_access_tick=0, access_count=3)\n"
        "task = Task(tags=frozenset({'parser','tokens','lexer'}), "
        "touched=frozenset({'src/lexer.py'}), neighbours=frozenset({'src/tokens.py'}))\n"
        "print(repr(score(it, task, 17, ContextConfig())))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123"},
    )
    assert out.stdout.strip() == here


# ---- AIMD ---------------------------------------------------------------------------------


def test_threshold_climbs_linearly_under_pressure_and_halves_on_regret() -> None:
    cfg = ThresholdConfig(initial=0.1, increase=0.01, maximum=0.6, minimum=0.02)
    t = Threshold.start(cfg)
    values = []
    for tick in range(10):
        t = on_tick(t, tick=tick, fill=0.9, target_fill=0.7, pressure=False, config=cfg)
        values.append(t.value)
    assert values == pytest.approx([0.1 + 0.01 * (i + 1) for i in range(10)])
    t = on_regret(t, tick=10, config=cfg)
    assert t.value == pytest.approx(0.1)
    # No additive increase right after a regret (calm period), then it resumes.
    t2 = on_tick(t, tick=11, fill=0.9, target_fill=0.7, pressure=False, config=cfg)
    assert t2.value == t.value
    t3 = on_tick(t, tick=15, fill=0.9, target_fill=0.7, pressure=False, config=cfg)
    assert t3.value == pytest.approx(0.11)
    # Below target fill and no pressure: no increase.
    assert on_tick(t, tick=20, fill=0.3, target_fill=0.7, pressure=False, config=cfg) == t


@given(st.lists(st.sampled_from(["tick", "regret", "pressure"]), max_size=300))
def test_threshold_never_leaves_its_bounds(signals: list[str]) -> None:
    cfg = ThresholdConfig()
    t = Threshold.start(cfg)
    for i, signal in enumerate(signals):
        if signal == "regret":
            t = on_regret(t, tick=i, config=cfg)
        else:
            t = on_tick(
                t, tick=i, fill=0.95, target_fill=0.7, pressure=signal == "pressure", config=cfg
            )
        assert cfg.minimum <= t.value <= cfg.maximum


def test_simulated_session_settles_where_regrets_are_rare() -> None:
    """Items have a hidden 'will be needed again' score; evicting one above 0.3 is a regret.
    The controller should settle near that level, with regrets becoming rare."""
    cfg = ThresholdConfig(initial=0.05, increase=0.01)
    rng = np.random.default_rng(7)
    t = Threshold.start(cfg)
    regrets_late = 0
    for tick in range(600):
        scores = rng.uniform(0, 1, size=20)
        evicted = scores[scores < t.value]
        if (evicted > 0.3).any() or (evicted.size and rng.uniform() < 0.02):
            t = on_regret(t, tick=tick, config=cfg)
            regrets_late += tick >= 400
        else:
            t = on_tick(t, tick=tick, fill=0.9, target_fill=0.7, pressure=False, config=cfg)
    assert 0.1 < t.value <= 0.35
    assert regrets_late <= 25  # at most one regret every 8 ticks once settled


# ---- the three stages ---------------------------------------------------------------------


def run_plan(
    scores: list[float],
    tokens: list[int],
    *,
    live: list[bool] | None = None,
    protected: list[bool] | None = None,
    threshold: float = 0.3,
    budget: int = 1000,
    durable_r: list[float] | None = None,
    idle: list[int] | None = None,
    depth: Depth | None = None,
):
    n = len(scores)
    live_arr = np.array(live if live is not None else [True] * n)
    return plan(
        [f"i{k}" for k in range(n)],
        scores=np.array(scores, dtype=float),
        tokens=np.array(tokens, dtype=float),
        live=live_arr,
        warm=~live_arr,
        protected=np.array(protected if protected is not None else [False] * n),
        durable_r=np.array(durable_r if durable_r is not None else [1.0] * n),
        idle_ticks=np.array(idle if idle is not None else [0] * n, dtype=float),
        threshold=threshold,
        budget=budget,
        depth=depth,
        target_fill=0.7,
        cold_retrievability=0.5,
        cold_after_ticks=50,
    )


def test_a_batch_takes_what_scores_under_t_after_its_first_change() -> None:
    """A batch evicts by score; items scoring under T go with it when they are after its first
    change (they cost no more rewriting) — here the cheapest way to free 150 tokens is the two
    items under T, the oldest first."""
    result = run_plan([0.1, 0.9, 0.2, 0.05], [100, 100, 100, 100], threshold=0.15, budget=300)
    assert sorted((m.id, m.stage) for m in result.moves) == [("i0", 1), ("i3", 1)]
    assert result.pressure


def test_a_batch_that_need_not_reach_back_starts_late() -> None:
    """Items scoring alike: the batch takes the later one — everything after a batch's first
    change is written to the provider's cache again."""
    result = run_plan([0.5, 0.5, 0.5], [100, 100, 100], threshold=0.0, budget=300)
    assert [m.id for m in result.moves] == ["i2"]


def test_a_batch_deep_enough_to_pay_reaches_back_for_low_scores() -> None:
    """To pay for rewriting what follows its first change the batch must free a share of it:
    from an early cut it can take the two lowest scores; a late cut would have to take the
    high-scoring newest item."""
    deep = Depth(fit=360, floor=0, factor=0.4)
    result = plan(
        ["old_low", "old_mid", "new_high"],
        scores=np.array([0.1, 0.2, 0.9]),
        tokens=np.array([100.0, 100.0, 200.0]),
        live=np.array([True] * 3),
        warm=np.array([False] * 3),
        protected=np.array([False] * 3),
        durable_r=np.ones(3),
        idle_ticks=np.zeros(3),
        threshold=0.0,
        budget=380,
        depth=deep,
        cold_retrievability=0.5,
        cold_after_ticks=50,
    )
    assert sorted(m.id for m in result.moves) == ["old_low", "old_mid"]


def test_stage_two_evicts_lowest_scores_down_to_target_fill() -> None:
    result = run_plan([0.9, 0.5, 0.7, 0.6], [400, 400, 400, 400], threshold=0.0)
    assert result.pressure
    assert [m.id for m in result.moves] == ["i1", "i3", "i2"]
    assert all(m.stage == 2 for m in result.moves)
    assert result.live_tokens_after <= 700


def test_protected_items_are_never_moved() -> None:
    result = run_plan([0.0, 0.0], [900, 600], protected=[True, False], threshold=0.5)
    assert [m.id for m in result.moves] == ["i1"]


def test_no_batch_when_no_batch_can_meet_the_budget_unless_the_provider_refused() -> None:
    """The protected item alone is over the budget: evicting the other would rewrite the cache
    and take what the model reads without getting the request under the budget — no batch.
    After the provider refused the request as too long, everything that can go goes."""

    def run(depth: Depth) -> list[str]:
        result = run_plan([0.0, 0.1, 0.2], [1200, 300, 300], protected=[True, False, False],
                          threshold=0.5, budget=1000, depth=depth)  # fmt: skip
        assert result.pressure
        return sorted(m.id for m in result.moves)

    # i0 is what may not leave (the agent's text); i1 and i2 are results
    assert run(Depth(fit=600, floor=0, factor=0.4)) == []
    assert run(Depth.down_to(1000)) == []
    assert run(Depth(fit=600, floor=0, factor=0.4, must_fit=True)) == ["i1", "i2"]
    assert run(Depth.down_to(1000, must_fit=True)) == ["i1", "i2"]


def test_stage_three_needs_both_low_durable_r_and_idleness() -> None:
    result = run_plan(
        [0.5] * 3, [10] * 3, live=[False] * 3, durable_r=[0.2, 0.2, 0.9], idle=[60, 10, 60]
    )
    assert [(m.id, m.to, m.stage) for m in result.moves] == [("i0", "cold", 3)]


# ---- turns ----------------------------------------------------------------------------------


def test_turn_eviction_score_formula() -> None:
    w = TURN_WEIGHTS
    assert eviction_score(11, "exploration", 0.0, weights=w) == 0.0  # last 12 protected
    assert eviction_score(22, "exploration", 0.0, weights=w) == pytest.approx(0.5 * 0.8)
    assert eviction_score(40, "action", 0.0, weights=w) == pytest.approx(0.6)
    assert eviction_score(40, "intent", 0.0, weights=w) == 0.0
    assert eviction_score(40, "correction", 0.0, weights=w) == 0.0
    assert eviction_score(40, "decision", 0.0, weights=w) == pytest.approx(0.1)
    assert eviction_score(40, "status", 0.9, weights=w) == pytest.approx(0.7 * 0.1)
    assert eviction_score(40, "status", 0.6, weights=w) == pytest.approx(0.7)


def test_turn_classification() -> None:
    assert classify_turn("user", "Fix the parser bug", first_user_turn=True) == "intent"
    assert classify_turn("user", "No, don't touch the lexer") == "correction"
    assert classify_turn("assistant", "", ["look", "look"]) == "exploration"
    assert classify_turn("assistant", "", ["act"]) == "action"
    assert classify_turn("assistant", "Let's rewrite the tokenizer first.") == "decision"
    assert classify_turn("assistant", "All tests passed.") == "status"


def test_soft_protection_yields_only_when_nothing_else_fits() -> None:
    ids = ["pinned", "recent_turn", "old"]
    common = {
        "scores": np.array([0.9, 0.8, 0.7]),
        "live": np.array([True] * 3),
        "warm": np.array([False] * 3),
        "durable_r": np.ones(3),
        "idle_ticks": np.zeros(3),
        "threshold": 0.0,
        "target_fill": 0.7,
        "cold_retrievability": 0.5,
        "cold_after_ticks": 50,
        "protected": np.array([True, False, False]),
        "soft_protected": np.array([False, True, False]),
    }
    fits = plan(ids, tokens=np.array([100.0, 100.0, 500.0]), budget=600, **common)
    assert [m.id for m in fits.moves] == ["old"]
    tight = plan(ids, tokens=np.array([300.0, 400.0, 100.0]), budget=500, **common)
    assert [m.id for m in tight.moves] == ["old", "recent_turn"]
    assert "soft protection lifted" in tight.moves[1].reason
    assert all(m.id != "pinned" for m in tight.moves)


def test_stage_two_with_token_exponent_frees_space_in_fewer_moves() -> None:
    """Score per token freed: one large middling item goes before two small lower-scored ones."""
    common = {
        "live": np.array([True] * 4),
        "warm": np.array([False] * 4),
        "protected": np.array([False] * 4),
        "durable_r": np.ones(4),
        "idle_ticks": np.zeros(4),
        "threshold": 0.0,
        "budget": 1000,
        "target_fill": 0.9,
        "cold_retrievability": 0.5,
        "cold_after_ticks": 50,
    }
    ids = ["small_a", "small_b", "large", "keep"]
    scores = np.array([0.30, 0.32, 0.40, 0.90])
    tokens = np.array([150.0, 150.0, 600.0, 300.0])
    by_score = plan(ids, scores=scores, tokens=tokens, token_exponent=0.0, **common)
    assert [m.id for m in by_score.moves] == ["small_a", "small_b"]
    by_density = plan(ids, scores=scores, tokens=tokens, token_exponent=1.0, **common)
    assert [m.id for m in by_density.moves] == ["large"]
    assert by_density.live_tokens_after <= 900


def test_threshold_exempt_items_skip_stage_one_but_not_pressure() -> None:
    common = {
        "scores": np.array([0.05, 0.05]),
        "live": np.array([True, True]),
        "warm": np.array([False, False]),
        "protected": np.array([False, False]),
        "durable_r": np.ones(2),
        "idle_ticks": np.zeros(2),
        "threshold": 0.2,
        "target_fill": 0.9,
        "cold_retrievability": 0.5,
        "cold_after_ticks": 50,
        "threshold_exempt": np.array([True, False]),
    }
    calm = plan(["young_turn", "result"], tokens=np.array([100.0, 100.0]), budget=1000, **common)
    assert [(m.id, m.stage) for m in calm.moves] == [("result", 1)]
    tight = plan(["young_turn", "result"], tokens=np.array([500.0, 100.0]), budget=300, **common)
    assert sorted((m.id, m.stage) for m in tight.moves) == [("result", 1), ("young_turn", 2)]


def test_soft_protection_yields_lowest_score_first_and_only_down_to_the_fit() -> None:
    """Fresh items (soft) go after every other, lowest score first, and only as far as the
    batch's fit (never further to pay for the rewrite)."""
    ids = ["fresh_old", "fresh_mid", "fresh_new"]
    result = plan(
        ids,
        scores=np.array([0.9, 0.5, 0.1]),
        tokens=np.array([300.0, 300.0, 300.0]),
        live=np.array([True] * 3),
        warm=np.array([False] * 3),
        protected=np.array([False] * 3),
        soft_protected=np.array([True] * 3),
        durable_r=np.ones(3),
        idle_ticks=np.zeros(3),
        threshold=0.0,
        budget=700,
        depth=Depth(fit=650, floor=0, factor=1.0),  # break-even would want everything
        cold_retrievability=0.5,
        cold_after_ticks=50,
        token_exponent=1.0,
    )
    assert [m.id for m in result.moves] == ["fresh_new"]
    assert result.live_tokens_after == 600


def test_soft_protection_keeps_the_item_just_expanded() -> None:
    """An item the model just expanded scores highest (its recency is its last access): it
    stays, though captured first; of two alike the later goes (less to rewrite); items whose
    stub costs as much as their content are never moved (nothing freed)."""
    result = plan(
        ["expanded_old_capture", "fresh_a", "fresh_b", "tiny"],
        scores=np.array([0.9, 0.5, 0.5, 0.1]),
        tokens=np.array([400.0, 200.0, 200.0, 5.0]),
        live=np.array([True] * 4),
        warm=np.array([False] * 4),
        protected=np.array([False] * 4),
        soft_protected=np.array([True, True, True, False]),
        durable_r=np.ones(4),
        idle_ticks=np.array([0.0, 3.0, 2.0, 9.0]),
        threshold=0.0,
        budget=650,
        depth=Depth(fit=650, floor=0, factor=1.0),
        cold_retrievability=0.5,
        cold_after_ticks=50,
        stub_tokens=np.array([10.0, 10.0, 10.0, 10.0]),
        token_exponent=0.0,
    )
    assert [m.id for m in result.moves] == ["fresh_b"]
