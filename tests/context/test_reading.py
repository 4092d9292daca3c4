"""What the model has not read yet stays in the prompt: a tool result captured since the last
step is never stubbed nor clipped, however large — only after the provider refused a request
as too long is one too large for the window even alone clipped to its head and tail (the whole
text warm, its pointer in the excerpt, its note saying why), and it becomes a one-line stub at
the next batch once the model has read it. A turn leaves the prompt with its results. The
manifest stays within its share of the window."""

from __future__ import annotations

from tests.context.conftest import MakeEngine
from veil.context import ContextEngine
from veil.context.items import ContextItem
from veil.context.manifest import EvictedRow, ManifestRow, render_manifest
from veil.context.render import excerpt, range_note
from veil.tokens import estimate_tokens


def numbered(n: int, tag: str) -> str:
    return "".join(f"{tag} line {i}: value_{tag}_{i} = {i * 7}\n" for i in range(n))


def step(engine: ContextEngine, n: int, output: str, *, parent_text: str | None = None) -> str:
    turn = engine.capture_turn("assistant", parent_text or f"Reading part {n}.", calls=["act"])
    item = engine.capture_tool_result(
        tool_call_id=f"call-{n}",
        tool_name="read",
        arguments={"path": f"part{n}.txt"},
        output=output,
        parent=turn.id,
    )
    return item.id


def test_a_result_the_model_has_not_read_is_never_stubbed(make_engine: MakeEngine) -> None:
    engine = make_engine(window_tokens=3_000, reserve_tokens=500)
    engine.capture_turn("user", "Summarise the parts.")
    older = [step(engine, n, numbered(60, f"p{n}")) for n in range(4)]  # ~1,800 tokens
    engine.step()
    newest = step(engine, 9, numbered(120, "new"))  # ~900 more: older items must make room
    report = engine.step()
    assert engine.item(newest).tier == "live" and not engine.item(newest).excerpt
    assert any(m.id in older and m.to != "live" for m in report.moves)
    assert engine.live_tokens <= engine.budget


def test_a_result_larger_than_the_window_is_sent_whole_until_the_provider_refuses_it(
    make_engine: MakeEngine,
) -> None:
    engine = make_engine(window_tokens=2_000, reserve_tokens=400)
    engine.capture_turn("user", "Look at the log.")
    text = numbered(800, "log")  # ~6,500 tokens, far over the 1,600-token budget
    big = step(engine, 1, text)
    report = engine.step()
    # The model asked for it and has not read it: whole, over the budget.
    assert engine.item(big).tier == "live" and not engine.item(big).excerpt
    assert report.pressure and not report.batch and engine.live_tokens > engine.budget
    # The provider refused the request as too long: now, and only now, head and tail.
    engine.step(overflow=True)
    item = engine.item(big)
    assert item.tier == "warm" and item.excerpt > 0
    shown = engine.stub(big)
    # The head and the tail are there, verbatim, around a line saying what is left out and why.
    assert shown.startswith("log line 0: value_log_0 = 0\n")
    assert shown.rstrip().endswith("log line 799: value_log_799 = 5593")
    assert item.stub_pointer in shown and "left out" in shown and "refused" in shown
    assert "larger than the context window" not in shown
    assert engine.live_tokens <= engine.budget
    # Nothing is lost: the pointer restores all of it.
    assert engine.expand(item.stub_pointer).content == text


def test_a_result_a_later_call_repeated_leaves_first(make_engine: MakeEngine) -> None:
    """The same command run again (or the same file read again) holds what the model would
    look for in the earlier output: under pressure the repeated one goes first, before older
    results that nothing repeated."""
    engine = make_engine(window_tokens=4_000, reserve_tokens=500, protected_turns=2)
    engine.capture_turn("user", "Make the tests pass.")
    step(engine, 0, numbered(40, "setup"))  # older than the repeated one, repeated by nothing
    engine.step()

    def run_tests(n: int) -> str:
        turn = engine.capture_turn("assistant", f"Run the tests ({n}).", calls=["act"])
        return engine.capture_tool_result(
            tool_call_id=f"t{n}",
            tool_name="bash",
            arguments={"command": "pytest -q"},
            output=numbered(40, f"run{n}"),
            parent=turn.id,
        ).id

    first = run_tests(1)
    engine.step()
    for n in range(2, 5):
        step(engine, n, numbered(40, f"p{n}"))
        engine.step()
    second = run_tests(2)
    report = engine.step()
    while not report.pressure:
        step(engine, 10 + len(engine.items()), numbered(40, "more"))
        report = engine.step()
    order = [m.id for m in report.moves if m.stage == 2]
    assert first in order and order.index(first) == 0, report.moves
    assert second not in order or order.index(second) > 0


def test_a_clipped_result_becomes_a_stub_at_the_next_batch_once_read(
    make_engine: MakeEngine,
) -> None:
    engine = make_engine(window_tokens=2_000, reserve_tokens=400)
    engine.capture_turn("user", "Look at the logs.")
    big = step(engine, 1, numbered(800, "log"))
    engine.step(overflow=True)
    assert engine.item(big).excerpt > 0
    # The model read the excerpt; the next result needs the room.
    fresh = step(engine, 2, numbered(40, "next"))
    report = engine.step()
    assert report.batch and engine.item(fresh).tier == "live"
    assert engine.item(big).excerpt == 0  # now its one-line stub
    assert "left out" not in engine.stub(big)
    assert engine.live_tokens <= engine.budget


def test_a_turn_leaves_the_prompt_with_its_results(make_engine: MakeEngine) -> None:
    """At every batch, a turn whose results are all out of the prompt leaves with them —
    unless it is one of the newest turns (protected); then it leaves at a later batch."""
    engine = make_engine(window_tokens=3_000, reserve_tokens=500, protected_turns=2)
    engine.capture_turn("user", "Read everything.")
    ids: list[str] = []
    batches = 0
    for n in range(12):
        ids.append(step(engine, n, numbered(60, f"p{n}")))
        report = engine.step()
        if not report.batch:
            continue
        batches += 1
        turns = [i for i in engine.items() if i.kind == "turn" and i.turn_kind != "intent"]
        newest = {t.id for t in turns[-2:]}
        for item_id in ids:
            turn = engine.item(item_id).parent
            assert turn is not None
            results = [engine.item(k) for k in ids if engine.item(k).parent == turn]
            if turn not in newest and all(r.tier != "live" for r in results):
                assert engine.item(turn).tier != "live", "a turn stayed without any of its results"
    assert batches >= 2 and any(engine.item(i).tier != "live" for i in ids)


def test_live_tokens_count_a_run_of_whole_steps_as_one_note(make_engine: MakeEngine) -> None:
    engine = make_engine(window_tokens=3_000, reserve_tokens=500, protected_turns=2)
    engine.capture_turn("user", "Read everything.")
    for n in range(10):
        step(engine, n, numbered(60, f"p{n}"))
        engine.step()
    items = engine.items()
    out_steps = [
        t
        for t in items
        if t.kind == "turn"
        and t.tier != "live"
        and (kids := [i for i in items if i.parent == t.id])
        and all(k.tier != "live" for k in kids)
    ]
    assert len(out_steps) >= 2, "the scenario should evict several whole steps"
    # Recompute what the prompt costs: the note replaces the steps' stubs.
    collapsed = {t.id for t in out_steps} | {
        i.id for i in items if i.parent in {t.id for t in out_steps}
    }
    stubs = sum(
        engine.count_tokens(engine.stub(i.id))
        for i in items
        if i.tier != "live" and i.id not in collapsed and i.tool_call_id
    )
    live = sum(i.tokens for i in items if i.tier == "live")
    turn_stubs = engine.live_tokens - live - stubs
    assert turn_stubs >= 0
    # One run (the steps are consecutive): its note costs far less than the steps' stubs would.
    per_step_stubs = sum(
        engine.count_tokens(engine.stub(i.id))
        for i in items
        if i.id in collapsed and i.tool_call_id
    )
    assert engine.live_tokens < live + stubs + per_step_stubs + 40 * len(out_steps)


def test_range_note_names_pointers_and_size() -> None:
    items = [
        ContextItem(
            f"ci_{n:032x}",
            "tool_output",
            "x",
            1,
            tool_name="read",
            target=f"src/part{n}.py",
            tier="warm",
        )
        for n in range(8)
    ]
    note = range_note(items, 12_345, 8)
    assert "8 earlier steps (12,345 tokens)" in note
    assert items[-1].pointer in note and items[0].pointer not in note  # the newest five
    assert "3 more (veil_recall finds them)" in note


def test_excerpt_keeps_whole_lines() -> None:
    text = numbered(100, "x")
    item = ContextItem("ci_1", "tool_output", text, estimate_tokens(text), excerpt=600)
    shown = excerpt(item)
    head, _, rest = shown.partition("[veil:")
    tail = rest.split("]\n", 1)[1]
    assert head.endswith("\n") and text.startswith(head)
    assert tail and text.endswith(tail) and tail.startswith("x line")
    assert len(head) + len(tail) <= 600


def test_the_manifest_stays_within_its_share() -> None:
    rows = [
        ManifestRow(f"ci_{n}", "tool_output", 500, 1.0 - n / 100, n == 0, f"read src/m{n}.py")
        for n in range(80)
    ]
    evicted = [EvictedRow(f"read src/old{n}.py", f"veil://warm/ci_{n:08x}") for n in range(10)]
    text = render_manifest(
        rows,
        threshold=0.3,
        live_tokens=40_000,
        budget=100_000,
        warm=10,
        cold=0,
        conflicts=["a contradicts b"],
        notes=["CONVERGENCE: you are repeating the same failing test run."],
        evicted=evicted,
        max_tokens=300,
        count_tokens=estimate_tokens,
    )
    assert estimate_tokens(text) <= 300
    # The contradictions and the convergence note always come; the pinned row first.
    assert "a contradicts b" in text and "CONVERGENCE" in text
    assert "read src/m0.py" in text
    assert "read src/m79.py" not in text
