"""The eviction replay: the need detector's rules on synthetic steps, the baseline policies on a
tiny trajectory, and the whole benchmark end to end in --quick mode."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from benchmarks.replay import host_policies as H
from benchmarks.replay import policies as P
from benchmarks.replay.load import DATA, Step, Trajectory
from benchmarks.replay.needs import (
    Need,
    Region,
    SimpleStep,
    copied_lines,
    detect_needs,
    identifiers,
    misses,
    region_of,
)

from veil.context import ContextConfig
from veil.tokens import estimate_tokens


def nl(lo: int, hi: int) -> str:
    return (
        "<returncode>0</returncode>\n<output>\n"
        + "".join(f"   {i}\tline {i}\n" for i in range(lo, hi + 1))
        + "</output>"
    )


def swe_window(path: str, lo: int, hi: int) -> str:
    return f"[File: {path} (500 lines total)]\n" + "".join(
        f"{i}:code {i}\n" for i in range(lo, hi + 1)
    )


# ---- rule 1: region -------------------------------------------------------------------


def test_sed_region_reread_is_a_need() -> None:
    steps = [
        SimpleStep("sed -n '10,40p' pkg/mod.py", "x = 1\n", "view", paths=("pkg/mod.py",)),
        SimpleStep("ls", "a b", "search"),
        SimpleStep("sed -n '20,30p' pkg/mod.py", "x = 1\n", "view", paths=("pkg/mod.py",)),
    ]
    needs = detect_needs(steps)
    assert [(n.step, n.rule, n.evidence, n.sources) for n in needs] == [
        (2, "region", "pkg/mod.py:20-30", (0,))
    ]


def test_nl_and_cat_regions_come_from_printed_line_numbers() -> None:
    a = SimpleStep(
        "nl -ba /testbed/pkg/mod.py | sed -n '100,120p'",
        nl(100, 120),
        "view",
        paths=("/testbed/pkg/mod.py",),
    )
    assert region_of(a) == Region("pkg/mod.py", 100, 120)
    whole = SimpleStep("cat pkg/mod.py", "print(1)\n", "view", paths=("pkg/mod.py",))
    assert region_of(whole) == Region("pkg/mod.py", 1, math.inf)
    needs = detect_needs([whole, a])
    assert [(n.step, n.rule, n.sources) for n in needs] == [(1, "region", (0,))]


def test_region_needs_overlap_of_half_the_smaller_view() -> None:
    steps = [
        SimpleStep("sed -n '1,100p' m.py", "", "view", paths=("m.py",)),
        SimpleStep("sed -n '99,198p' m.py", "", "view", paths=("m.py",)),  # 2 shared lines
        SimpleStep("sed -n '150,160p' m.py", "", "view", paths=("m.py",)),
    ]
    needs = detect_needs(steps)
    assert [(n.step, n.sources) for n in needs] == [(2, (1,))]


def test_swe_agent_open_goto_and_scroll_regions() -> None:
    steps = [
        SimpleStep(
            "open /repo__repo/pkg/mod.py",
            swe_window("/repo__repo/pkg/mod.py", 1, 100),
            "view",
            tool="open",
        ),
        SimpleStep(
            "scroll_down",
            swe_window("/repo__repo/pkg/mod.py", 99, 198),
            "view",
            tool="scroll_down",
            open_file="/repo__repo/pkg/mod.py",
        ),
        SimpleStep(
            "goto 50",
            swe_window("/repo__repo/pkg/mod.py", 1, 100),
            "view",
            tool="goto",
            open_file="/repo__repo/pkg/mod.py",
        ),
    ]
    needs = detect_needs(steps)
    # scrolling on is not a re-read; going back to lines 1-100 is
    assert [(n.step, n.rule, n.evidence, n.sources) for n in needs] == [
        (2, "region", "pkg/mod.py:1-100", (0,))
    ]


def test_an_edit_to_the_file_in_between_cancels_the_region_need() -> None:
    steps = [
        SimpleStep("sed -n '1,50p' m.py", "", "view", paths=("m.py",)),
        SimpleStep("sed -i 's/a/b/' m.py", "", "edit", paths=("m.py",)),
        SimpleStep("sed -n '1,50p' m.py", "", "view", paths=("m.py",)),
        SimpleStep("sed -n '10,20p' m.py", "", "view", paths=("m.py",)),
    ]
    needs = detect_needs(steps)
    assert [(n.step, n.sources) for n in needs] == [(3, (2,))]


def test_sparse_numbers_from_a_grep_are_not_a_region() -> None:
    out = "<output>\n  2182\tx = f(a)\n  2832\ty = f(b)\n  3478\tz = f(c)\n</output>"
    step = SimpleStep("nl -ba a.py | grep f(", out, "view", paths=("a.py",))
    assert region_of(step) is None


def test_a_filtered_or_pattern_addressed_view_without_numbers_has_no_region() -> None:
    step = SimpleStep("cat m.py | grep foo", "foo = 1", "view", paths=("m.py",))
    assert region_of(step) is None
    pattern = SimpleStep("sed -n '/class F/,/class/p' m.py", "class F:", "view", paths=("m.py",))
    assert region_of(pattern) is None


# ---- rule 2: command ------------------------------------------------------------------


def test_same_command_rerun_without_an_edit_is_a_need() -> None:
    steps = [
        SimpleStep("pytest tests/test_a.py  -x", "1 failed", "test"),
        SimpleStep("grep -rn foo .", "", "search"),
        SimpleStep("pytest tests/test_a.py -x", "1 failed", "test"),
    ]
    needs = [n for n in detect_needs(steps) if n.rule == "command"]
    assert [(n.step, n.evidence, n.sources) for n in needs] == [
        (2, "pytest tests/test_a.py -x", (0,))
    ]


def test_a_rerun_after_any_edit_is_not_a_need() -> None:
    steps = [
        SimpleStep("python repro.py", "Error", "run"),
        SimpleStep("sed -i 's/a/b/' other.py", "", "edit", paths=("other.py",)),
        SimpleStep("python repro.py", "ok", "run"),
    ]
    assert [n for n in detect_needs(steps) if n.rule == "command"] == []


def test_edits_submits_and_scrolls_are_never_command_needs() -> None:
    steps = [
        SimpleStep("scroll_down", "", "view", tool="scroll_down", open_file="/r__r/a.py"),
        SimpleStep("scroll_down", "", "view", tool="scroll_down", open_file="/r__r/a.py"),
        SimpleStep("submit", "", "submit", tool="submit"),
        SimpleStep("submit", "", "submit", tool="submit"),
    ]
    assert [n for n in detect_needs(steps) if n.rule == "command"] == []


# ---- rule 3: identifier ---------------------------------------------------------------


def test_identifier_printed_earlier_is_a_need_with_every_source() -> None:
    steps = [
        SimpleStep(
            "grep -rn separability .",
            "astropy/modeling/separable.py:66: def _cstack(left)",
            "search",
        ),
        SimpleStep("ls", "setup.py", "search"),
        SimpleStep("grep -n cstack x", "also _cstack here", "search"),
        SimpleStep(
            "sed -n '60,70p' astropy/modeling/separable.py && grep -n _cstack y", "", "view"
        ),
    ]
    got = {(n.evidence, n.sources) for n in detect_needs(steps) if n.rule == "identifier"}
    assert ("astropy/modeling/separable.py", (0,)) in got
    assert ("_cstack", (0, 2)) in got


def test_identifiers_in_the_task_or_earlier_actions_are_not_needs() -> None:
    steps = [
        SimpleStep("cat <<'EOF' > repro.py\nimport foo_bar\nEOF", "", "edit", paths=("repro.py",)),
        SimpleStep("python repro.py", "NameError: foo_bar and TaskThing and make_widget", "run"),
        SimpleStep("grep -rn 'foo_bar\\|TaskThing\\|make_widget' .", "", "search"),
    ]
    got = [
        n.evidence for n in detect_needs(steps, context="fix TaskThing") if n.rule == "identifier"
    ]
    assert got == ["make_widget"]


def test_a_path_spelling_the_tasks_dotted_module_is_not_a_need() -> None:
    steps = [
        SimpleStep("python r.py", "Warning in /r__r/sympy/vector/coordsys.py", "run"),
        SimpleStep('search_dir "pretty" "sympy/vector"', "", "search", tool="search_dir"),
    ]
    context = "from sympy.vector import CoordSys3D"
    assert [n.evidence for n in detect_needs(steps, context)] == []


def test_identifier_matching_is_whole_word() -> None:
    steps = [
        SimpleStep("ls", "my_function_extra", "search"),
        SimpleStep("grep -n my_function src", "", "search"),
    ]
    assert [n for n in detect_needs(steps) if n.rule == "identifier"] == []


def test_identifier_extraction() -> None:
    ids = identifiers(
        'grep -rn "cannot be converted to float" /testbed/pkg/core.py && '
        "python -c 'from pkg.core import CompoundModel, _calc_x; print(len(x))'"
    )
    assert "cannot be converted to float" in ids
    assert "pkg/core.py" in ids
    assert "CompoundModel" in ids and "_calc_x" in ids
    assert "print" not in ids and "len" not in ids and "python" not in ids
    assert identifiers("open /sympy__sympy/sympy/printing/latex.py") == ["sympy/printing/latex.py"]
    assert "author__name" in identifiers("Book.objects.filter(author__name='x')")


# ---- misses ---------------------------------------------------------------------------


def test_the_second_detector_counts_lines_copied_from_an_observation() -> None:
    view = "12:    def resolve_lookup(self, value, *, strict=False):\n13:        return value\n"
    steps = [
        SimpleStep("open pkg/mod.py", view, "view", tool="open"),
        SimpleStep("grep -rn resolve pkg", "pkg/mod.py:12:    def resolve_lookup(self, value):"),
        SimpleStep(
            "edit 12:12\n    def resolve_lookup(self, value, *, strict=False):\nend_of_edit",
            "",
            "edit",
            tool="edit",
        ),
        # the same line again: the agent wrote it itself by now
        SimpleStep("edit 12:12\n    def resolve_lookup(self, value, *, strict=False):", ""),
        # a line from the task is not a need, nor a short one
        SimpleStep("echo 'the task says exactly this long line'\nx = 1", "ok"),
    ]
    needs = copied_lines(steps, "echo 'the task says exactly this long line'")
    assert [(n.step, n.rule, n.sources) for n in needs] == [(2, "copy", (0,))]
    assert misses(needs, [frozenset()] * 2 + [frozenset({0})]) == [False]
    assert misses(needs, [frozenset()] * 2 + [frozenset({1})]) == [True]


def test_a_need_misses_only_when_no_source_is_verbatim() -> None:
    needs = [Need(3, "identifier", "x_y", (0, 2)), Need(3, "command", "ls", (1,))]
    live = [frozenset(), frozenset({0}), frozenset({0, 1}), frozenset({2})]
    assert misses(needs, live) == [False, True]


# ---- policies -------------------------------------------------------------------------


def _traj(n: int = 8, obs_chars: int = 400) -> Trajectory:
    steps = tuple(
        Step(
            i=i,
            thought=f"step {i}",
            action=f"cat f{i}.py",
            tool="bash",
            kind="view",
            paths=(f"f{i}.py",),
            observation="x" * obs_chars,
            assistant=f"THOUGHT: step {i}",
            obs_tokens=estimate_tokens("x" * obs_chars),
            assistant_tokens=estimate_tokens(f"THOUGHT: step {i}"),
        )
        for i in range(n)
    )
    return Trajectory("t/1", "A", "task", "system prompt", "instance task", steps, True)


def test_keep_all_and_masking() -> None:
    t = _traj()
    keep = P.keep_all(t)
    assert keep.tokens[0] == t.fixed_tokens
    assert keep.live[5] == frozenset(range(5))
    masked = P.mask_last_n(t, 2)
    assert masked.live[5] == frozenset({3, 4})
    assert masked.tokens[5] < keep.tokens[5]


def test_budgeted_policies_respect_the_budget() -> None:
    t = _traj()
    budget = t.fixed_tokens + 350
    for run in (P.truncate_oldest(t, budget), P.compaction(t, budget), P.lru(t, budget, [])):
        assert all(x <= budget + 110 for x in run.tokens)  # the newest pair always stays
        assert all((k - 1) in run.live[k] for k in range(1, len(t.steps)))


def test_opencode_prune_clears_only_beyond_protect_and_minimum() -> None:
    t = _traj(n=10, obs_chars=4000)  # 1,000 tokens each
    run = P.opencode_prune(t, protect=2_000, minimum=1_500)
    # at step 9: steps 8, 7 skipped (last 2 turns); 6, 5 protected (2,000); 4..0 prunable
    assert run.live[9] >= {5, 6, 7, 8}
    assert 0 not in run.live[9]
    assert P.opencode_prune(t, protect=2_000, minimum=10_000).live[9] == frozenset(range(9))


def _sized(obs: list[int], assistant: int = 4) -> Trajectory:
    """A trajectory whose steps have exactly these observation and assistant tokens (fixed
    prompt: 8 tokens)."""
    steps = tuple(
        Step(
            i=i,
            thought=f"step {i}",
            action=f"cat f{i}.py",
            tool="bash",
            kind="view",
            paths=(f"f{i}.py",),
            observation="x" * (4 * n),
            assistant="y" * (4 * assistant),
            obs_tokens=n,
            assistant_tokens=assistant,
        )
        for i, n in enumerate(obs)
    )
    return Trajectory("t/2", "A", "task", "system prompt", "instance task", steps, True)


def test_cost_prices_the_cached_prefix_at_a_tenth_and_the_rest_at_a_cache_write() -> None:
    t = _sized([100, 100, 100])  # each step: 4 + 100 tokens; fixed 8
    keep = P.keep_all(t)
    assert keep.tokens == [8, 112, 216] and keep.cached == [0, 8, 112]
    by_hand = 1.25 * 8 + (0.1 * 8 + 1.25 * 104) + (0.1 * 112 + 1.25 * 104)
    assert P.run_cost(keep) == pytest.approx(by_hand)
    assert P.call_cost(1_000, 1_000) == pytest.approx(100.0)
    assert P.call_cost(1_000, 0) == pytest.approx(1_250.0)


def test_claude_context_editing_keeps_exactly_the_three_newest_results_once_over_the_trigger() -> (
    None
):
    t = _sized([1_000] * 10)
    budget = t.fixed_tokens + 3_500  # the full prompt passes it at step 4 (4 x 1,004)
    run = H.claude_context_editing(t, budget)
    assert run.live[3] == frozenset({0, 1, 2})  # under the trigger: nothing cleared
    for k in range(4, 10):
        assert run.live[k] == frozenset({k - 3, k - 2, k - 1})
    stub = H.CLEARED_STUB_TOKENS
    assert run.tokens[9] == t.fixed_tokens + 9 * 4 + 3 * 1_000 + 6 * stub
    assert run.info["cleared"] == 6
    # each step clears the 4th newest result (5 at step 9): the cache breaks there
    assert run.cached[9] == t.fixed_tokens + 6 * 4 + 5 * stub
    # a larger keep, and no clearing under a trigger never reached
    assert H.claude_context_editing(t, budget, keep=5).live[9] == frozenset(range(4, 9))
    assert H.claude_context_editing(t, 10**6).live[9] == frozenset(range(9))


def test_claude_compaction_summarises_everything_but_the_newest_step_at_the_budget() -> None:
    t = _sized([1_000] * 10)
    budget = t.fixed_tokens + 3_500
    run = H.claude_compaction(t, budget)
    summary = P.compaction_params(t, budget)[1]
    assert summary == 350
    assert run.live[3] == frozenset({0, 1, 2})
    assert run.live[4] == frozenset({3})  # 4,016 > 3,500: steps 0-2 become the summary
    assert run.tokens[4] == t.fixed_tokens + summary + 1_004
    assert run.live[6] == frozenset({3, 4, 5})  # 350 + 3 x 1,004 < 3,500
    assert run.live[7] == frozenset({6})
    assert run.info["compactions"] == 2  # at steps 4 and 7
    # the summarising calls read the prompts they replace: priced on top of the prompts
    assert run.extra_cost > 0
    assert P.run_cost(run) > sum(
        P.call_cost(x, c) for x, c in zip(run.tokens, run.cached, strict=True)
    )


def test_codex_cuts_every_output_to_the_scaled_cap_and_compacts_at_90_percent() -> None:
    budget = 8_160  # 10,000 x 8,160 / 272,000 = a 300-token cap
    assert H.scaled(H.CODEX_TOOL_OUTPUT_TOKENS, H.CODEX_WINDOW, budget) == 300
    t = _sized([100, 1_000, 200, 50])
    run = H.codex(t, budget)
    marker = P.estimate_tokens("…700 tokens truncated…\n")
    assert run.tokens[2] == t.fixed_tokens + 2 * 4 + 100 + 300 + marker
    assert run.live[3] == frozenset({0, 2})  # a cut output is never verbatim
    assert run.info["truncated"] == 1 and run.info["compactions"] == 0
    assert H.codex(t, budget, scale_cap=False).live[3] == frozenset({0, 1, 2})
    # compaction at 0.9 x budget: a prompt between 90 % and 100 % of it compacts in Codex only
    t = _sized([1_000] * 6)
    budget = t.fixed_tokens + 4_200  # step 4's prompt: fixed + 4,016 (> 0.9 x budget)
    codex = H.codex(t, budget, scale_cap=False)
    assert codex.live[4] == frozenset({3})
    assert H.claude_compaction(t, budget).live[4] == frozenset({0, 1, 2, 3})


def test_opencode_scaled_is_the_prune_with_40k_and_20k_of_a_200k_window_scaled() -> None:
    t = _sized([1_000] * 10)
    budget = 10_000  # protect 2,000 and minimum 1,000
    run = H.opencode_scaled(t, budget)
    same = P.opencode_prune(t, 2_000, 1_000)
    assert run.live == same.live and run.tokens == same.tokens
    # step 8: 7 and 6 skipped (the 2 newest turns), 5 and 4 protected, 3 and 2 pruned
    # (2,000 > 1,000; 0 and 1 went at step 6); step 9: the walk stops at 3, already pruned,
    # and 4 alone frees only 1,000, not more than the minimum
    assert run.live[8] == frozenset({4, 5, 6, 7})
    assert run.live[9] == frozenset({4, 5, 6, 7, 8})
    assert P.opencode_prune(t, 40_000, 20_000).live[9] == frozenset(range(9))


def test_pi_compacts_at_budget_minus_scaled_reserve_and_keeps_the_scaled_recent_tokens() -> None:
    # 300-token observations and 300-token assistant messages: 600 per step
    t = _sized([300] * 17, assistant=300)
    budget = 10_000  # trigger 10,000 - 819 = 9,181; keep 1,000
    run = H.pi(t, budget)
    assert run.live[15] == frozenset(range(15))  # fixed + 9,000 < 9,181
    # at step 16 (fixed + 9,600): walking back o15, a15, o14, a14 reaches 1,200 >= 1,000 on
    # an assistant message, so pi cuts there and keeps both steps (1,200 tokens)
    assert run.live[16] == frozenset({14, 15})
    assert P.compact_at(t, 9_181, 1_000, 100).live[16] == frozenset({15})  # whole steps <= keep
    # the newest step stays even when its output alone is over keepRecentTokens
    huge = _sized([300] * 15 + [5_000, 10], assistant=300)
    assert P.compact_at(huge, 9_181, 1_000, 100, cut_rule="pi").live[16] == frozenset({15})


def test_every_host_policy_shows_the_newest_result_verbatim() -> None:
    t = _traj(n=14, obs_chars=1600)
    budget = t.fixed_tokens + 1_200
    for run in (
        H.claude_context_editing(t, budget),
        H.claude_compaction(t, budget),
        H.codex(t, budget, scale_cap=False),
        H.opencode_scaled(t, budget),
        H.pi(t, budget),
    ):
        assert all((k - 1) in run.live[k] for k in range(1, len(t.steps)))
        assert min(len(live) for live in run.live[5:]) < 5, "nothing was ever evicted"


def test_the_host_paragraph_says_where_veil_wins_and_loses() -> None:
    from benchmarks import eviction_replay as E

    rows: dict[str, dict[str, float]] = {}
    for f in E.BUDGETS:
        rows[f"veil[defaults]@{f}"] = {
            "miss_rate": 0.02,
            "tokens_vs_keep_all": 0.7,
            "cost_vs_keep_all": 1.3,
        }
        rows[f"pi@{f}"] = {"miss_rate": 0.2, "tokens_vs_keep_all": 0.6, "cost_vs_keep_all": 1.3}
    text = E.host_comparison("A", rows, "defaults")
    assert "Miss rate: Veil is lower at every budget than pi (f=0.5: Veil 2.0%" in text
    assert "Tokens per step: Veil is higher at every budget than pi" in text
    assert "Cost with caching: Veil is equal at every budget to pi" in text


# ---- end to end -----------------------------------------------------------------------


@pytest.mark.skipif(not (DATA / "index.jsonl").exists(), reason="shared trajectories absent")
def test_quick_run_end_to_end(tmp_path: Path) -> None:
    from benchmarks import eviction_replay

    out = tmp_path / "r.json"
    assert eviction_replay.main(["--quick", "--workers", "1", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    for name in ("A", "B"):
        rows = data["sets"][name]["rows"]
        assert rows["keep-all"]["miss_rate"] in (0.0, None)
        assert rows["keep-all"]["tokens_vs_keep_all"] == 1.0
        assert "veil[defaults]@0.5" in rows and "mask N=10" in rows
        assert rows["keep-all"]["cost_vs_keep_all"] == 1.0
        for host in eviction_replay.HOST_POLICIES:
            assert rows[f"{host}@0.5"]["cost_vs_keep_all"] > 0
        # Veil as its proxy runs it, at every budget, with fewer tokens than keeping all
        proxy = [rows[f"{eviction_replay.PROXY}@{f}"] for f in eviction_replay.BUDGETS]
        assert all(0 < r["tokens_vs_keep_all"] <= 1.0 for r in proxy)
        assert data["sets"][name]["needs"] > 0
    section = eviction_replay.render_section(data)
    assert not section.startswith("#") and "keep-all" in section
    assert "against the host policies at the same budget" in section


def test_the_veil_policy_is_deterministic_and_keeps_what_it_has_not_read() -> None:
    """The real harness under a fake clock: the same trajectory twice gives the same prompts,
    step for step; the newest observation is always verbatim (the model has not read it)."""
    from veil.embed import default_embedder

    t = _traj(n=14, obs_chars=1600)
    budget = t.fixed_tokens + 1_200
    first = P.veil(t, budget, default_embedder(), ContextConfig())
    second = P.veil(t, budget, default_embedder(), ContextConfig())
    assert first.tokens == second.tokens and first.live == second.live
    assert first.cached == second.cached
    assert all((k - 1) in first.live[k] for k in range(1, len(t.steps)))
    assert min(len(live) for live in first.live[5:]) < 5, "nothing was ever evicted"
