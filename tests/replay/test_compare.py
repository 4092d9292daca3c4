"""One session replayed three ways: keep-all (checked against the recorded usage), the host's
rule and Veil's proxy — tokens, cost with caching, misses."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from tests.replay.transcript_lines import cc_assistant, claude_session, codex_session, write_lines
from veil.replay.compare import RELATIVE, USD, Setting, as_json, fit_recorded, replay_session
from veil.replay.transcripts import Transcript, read_transcript

HUGE = 10_000_000


def claude(tmp_path: Path) -> Transcript:
    return read_transcript(write_lines(tmp_path / "s.jsonl", claude_session()))


def rates(tokens: int) -> tuple[float, float, float, float, float]:
    """Sonnet-like prices per token: input, output, 5-minute write, 1-hour write, read."""
    return 3e-6, 15e-6, 3.75e-6, 6e-6, 0.3e-6


def test_without_pressure_every_policy_is_keep_all_and_the_fit_is_measured(
    tmp_path: Path,
) -> None:
    t = claude(tmp_path)
    r = replay_session(t, Setting(budget=HUGE, host_trigger=HUGE))
    keep = r.keep_all
    assert r.veil.per_request == keep.per_request == r.host.per_request
    assert len(keep.per_request) == t.requests == 4
    # the first request is rebuilt exactly (the fixed part comes from it); the rest from the file
    assert keep.per_request[0] == 5_000
    assert r.recorded_tokens == 5_000 + 5_200 + 5_300 + 5_500
    assert r.fit is not None and r.fit_requests == 4
    assert r.fit == sum(keep.per_request) / r.recorded_tokens
    # the need detector: Grep names alpha_7 that the Read printed; the second Read re-reads it
    assert keep.needs == 2 and keep.misses == 0 and keep.miss_rate == 0.0


def test_a_small_budget_makes_veil_evict_and_the_host_compact(tmp_path: Path) -> None:
    t = claude(tmp_path)
    fixed = t.trajectory.fixed_tokens
    r = replay_session(t, Setting(budget=fixed + 150, host_trigger=fixed + 150))
    assert r.veil.tokens < r.keep_all.tokens
    assert r.veil.misses > 0
    assert r.host.info["compactions"] >= 1 and r.host.tokens < r.keep_all.tokens


def test_cost_is_in_dollars_with_prices_and_relative_to_keep_all_without(tmp_path: Path) -> None:
    t = claude(tmp_path)
    priced = as_json([replay_session(t, Setting(budget=HUGE, host_trigger=None, rates=rates))])
    session = priced["sessions"][0]
    assert session["cost_unit"] == USD
    sizes = replay_session(t, Setting(budget=HUGE, host_trigger=None)).keep_all.per_request
    # keep-all only grows: each request reads the previous one from the cache, writes the rest
    expected = sizes[0] * 3.75e-6 + sum(
        before * 0.3e-6 + (now - before) * 3.75e-6 for before, now in pairwise(sizes)
    )
    assert abs(session["keep_all"]["cost"] - expected) < 1e-5
    unpriced = as_json([replay_session(t, Setting(budget=HUGE, host_trigger=None))])
    assert unpriced["sessions"][0]["cost_unit"] == RELATIVE
    assert unpriced["sessions"][0]["keep_all"]["cost"] == 1.0
    assert unpriced["total"]["cost_unit"] == RELATIVE


def test_the_json_has_every_session_and_the_total(tmp_path: Path) -> None:
    c = claude(tmp_path)
    x = read_transcript(write_lines(tmp_path / "rollout-x.jsonl", codex_session()))
    results = [
        replay_session(c, Setting(budget=HUGE, host_trigger=None, rates=rates)),
        replay_session(x, Setting(budget=HUGE, host_trigger=None)),
    ]
    data = as_json(results)
    assert [s["agent"] for s in data["sessions"]] == ["claude", "codex"]
    for entry in [*data["sessions"], data["total"]]:
        assert entry["recorded_tokens"] > 0 and entry["fit"] is not None
        for arm in ("keep_all", "host", "veil"):
            assert {"tokens", "cost", "miss_rate"} <= set(entry[arm])
    total = data["total"]
    assert total["sessions"] == 2 and total["requests"] == 4 + 3
    assert total["keep_all"]["tokens"] == sum(s["keep_all"]["tokens"] for s in data["sessions"])
    # one session has prices, the other not: the total's dollars are the priced session's
    assert total["cost_unit"] == "usd (1 of 2 sessions priced)"
    assert total["keep_all"]["cost"] == data["sessions"][0]["keep_all"]["cost"]


def test_a_request_that_recorded_less_than_the_one_before_ends_the_fit(tmp_path: Path) -> None:
    """Keep-all only grows: a session run through ``veil claude`` records less after a batch.
    The fit covers the requests before, and the budgets are converted by that fit."""
    lines = claude_session()
    lines[-1] = cc_assistant("a6", "u5", "m4", {"type": "text", "text": "Done."}, 2_000)
    t = read_transcript(write_lines(tmp_path / "s.jsonl", lines))
    r = replay_session(t, Setting(budget=HUGE, host_trigger=HUGE))
    assert r.shrank_request == 4 and r.fit_requests == 3
    assert fit_recorded(r) == 5_000 + 5_200 + 5_300
    assert r.fit == sum(r.keep_all.per_request[:3]) / fit_recorded(r)
    assert as_json([r])["sessions"][0]["changed_on_the_way_at_request"] == 4
