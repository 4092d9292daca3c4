"""A real recorded coding session (SWE-bench, mini-swe-agent + Gemini 3 Pro, set A, MIT) fed
through the engine with a small window: the rendered prompt stays under budget at every step,
pinned/intent/correction items are never demoted, and every evicted item expands back
byte-identical. Data: ../shared/data/trajectories (research data, read in place)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED
from tests.context.conftest import MakeEngine
from veil.context import ContextEngine
from veil.context.items import ContextItem
from veil.context.render import range_note, turn_stub

TRAJECTORIES = SHARED / "data" / "trajectories" / "mini_swe_agent_gemini3pro_verified.jsonl.gz"
WANTED = ("mini-gemini3pro-verified/django__django-11099",)


def load(ids: tuple[str, ...]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    with gzip.open(TRAJECTORIES, "rt") as handle:
        for line in handle:
            record = json.loads(line)
            if record["id"] in ids or (not ids and len(found) < 1):
                found.append(record)
            if len(found) == len(ids):
                break
    return found


def rendered_tokens(engine: ContextEngine) -> int:
    """The transcript as the model would see it, computed independently of the engine's own
    accounting: live items in full, evicted results and turns as their stubs — except runs of
    whole steps out of the prompt (turn and every result of its calls out, none clipped),
    which render as one note per run."""
    items = engine.items()
    kids: dict[str, list[ContextItem]] = {}
    for item in items:
        if item.parent:
            kids.setdefault(item.parent, []).append(item)

    def whole_step_out(turn: ContextItem) -> bool:
        results = kids.get(turn.id, [])
        out = all(r.tier != "live" and not r.excerpt for r in results)
        return bool(results) and turn.tier != "live" and out

    total = 0
    run: list[ContextItem] = []
    run_tokens = steps = 0
    collapsed: set[str] = set()
    for item in items:
        if item.kind != "turn":
            continue
        if whole_step_out(item):
            run.extend(kids[item.id])
            run_tokens += item.tokens + sum(r.tokens for r in kids[item.id])
            steps += 1
            collapsed |= {item.id, *(r.id for r in kids[item.id])}
        elif run:
            total += engine.count_tokens(range_note(run, run_tokens, steps))
            run, run_tokens, steps = [], 0, 0
    if run:
        total += engine.count_tokens(range_note(run, run_tokens, steps))
    for item in items:
        if item.id in collapsed:
            continue
        if item.tier == "live":
            total += item.tokens
        else:
            total += stub_tokens(engine, item)
    return total


def stub_tokens(engine: ContextEngine, item: ContextItem) -> int:
    """What ``item`` costs once evicted: its stub (the harness renders an evicted turn as a
    one-line stub too)."""
    if item.tool_call_id:
        return engine.count_tokens(engine.stub(item.id))
    if item.kind == "turn":
        return engine.count_tokens(turn_stub(item))
    return 0


@pytest.mark.parametrize("window", [3_000, 8_000])
def test_replay_stays_under_budget_and_loses_nothing(make_engine: MakeEngine, window: int) -> None:
    assert TRAJECTORIES.exists(), f"trajectory data missing at {TRAJECTORIES}"
    (trajectory,) = load(WANTED)
    engine = make_engine(window_tokens=window, reserve_tokens=window // 5)
    intent = engine.capture_turn("user", trajectory["task"][:1500])
    protected = {intent.id}
    originals: dict[str, str] = {}
    evictions = 0
    for step in trajectory["steps"]:
        n = step["i"]
        turn = engine.capture_turn(
            "assistant", step["thought"][:1500], calls=["act"] if step["action"] else []
        )
        item = engine.capture_tool_result(
            tool_call_id=f"call-{n}",
            tool_name="bash",
            arguments={"command": step["action"]},
            output=step["observation"],
        )
        originals[item.id] = step["observation"]
        if n == 2:
            engine.pin(item.id)
            protected.add(item.id)
        if n == 5:
            correction = engine.capture_turn(
                "user", "No, do not change the tests; fix the validator regex instead."
            )
            assert correction.turn_kind == "correction"
            protected.add(correction.id)
        report = engine.step()
        evictions += len(report.moves)
        assert rendered_tokens(engine) == engine.live_tokens
        # Over the budget only where the result the model has not read yet (kept whole, never
        # clipped) and what may not leave exceed it with everything else as its stub.
        if engine.live_tokens > engine.budget:
            newest = engine.item(item.id)
            assert newest.tier == "live" and not newest.excerpt, (n, engine.live_tokens)
            others = [
                i for i in engine.items("live")
                if i.id != item.id and i.id not in protected
                and (i.tool_call_id or i.kind == "turn")
            ]  # fmt: skip
            freed = sum(max(0, i.tokens - stub_tokens(engine, i)) for i in others)
            assert engine.live_tokens - freed > engine.budget, (n, engine.live_tokens, freed)
        live = {i.id for i in engine.items("live")}
        assert protected <= live, f"a protected item was demoted at step {n}"
        # the newest result (unread) always stays; its turn, softly protected, may go only
        # in a batch that could not get down to its fit otherwise
        assert item.id in live
        if turn.id not in live:
            assert report.batch
    assert evictions > 0
    evicted = [i for i in engine.items() if i.tier != "live" and i.id in originals]
    assert evicted
    for item in evicted:
        assert engine.expand(item.stub_pointer).content == originals[item.id]


def test_replay_data_is_where_the_tests_expect_it() -> None:
    assert Path(TRAJECTORIES).stat().st_size > 1_000_000
