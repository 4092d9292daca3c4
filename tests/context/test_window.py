"""The one renderer of what the model sees (veil.context.window): its rules one by one, and a
property over random transcripts — whatever was evicted, collapsed, expanded or interrupted,
every call has exactly one result right after it, no result is without its call, an item is
in full at most once, and the count is the sum of what is sent."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from veil.context.items import ContextItem
from veil.context.render import shown_elsewhere, stub, turn_stub
from veil.context.window import MISSING_RESULT, Entry, Part, Rendered, Renderer, render
from veil.tokens import estimate_tokens


def item(item_id: str, content: str, *, tier: str = "live", kind: str = "tool_output",
         excerpt: int = 0, call: str | None = None) -> ContextItem:  # fmt: skip
    return ContextItem(
        id=item_id,
        kind=kind,  # type: ignore[arg-type]
        content=content,
        tokens=estimate_tokens(content),
        tier=tier,  # type: ignore[arg-type]
        excerpt=excerpt,
        tool_call_id=call,
        tool_name="read" if kind != "turn" else None,
        target=f"{item_id}.py" if kind != "turn" else None,
        turn_kind="action" if kind == "turn" else None,
    )


def rendered(entries: list[Entry], items: list[ContextItem], **options: object) -> Rendered:
    return render(entries, {i.id: i for i in items}, count=estimate_tokens, **options)  # type: ignore[arg-type]


def say(turn: str) -> str:
    return f"text of {turn}: " + "I will look at the next file and compare it with the last. " * 3


def step(turn: str, calls: list[str], results: dict[str, str | None]) -> list[Entry]:
    """An assistant entry with ``calls`` and a result entry per call (``results`` maps each
    call id to the item of its result)."""
    out = [Entry("assistant", say(turn), item=turn, calls=tuple(calls), extra_tokens=3)]
    out += [Entry("tool", output(c), item=results[c], call_id=c) for c in calls]
    return out


def output(call: str) -> str:
    """A result longer than its stub (a stub is never longer than what it replaces)."""
    return f"output of {call}: " + "the next line of the file. " * 12


def test_live_entries_are_shown_as_recorded_and_evicted_ones_as_stubs() -> None:
    items = [item("t1", "turn one", kind="turn"), item("r1", "the file", tier="warm", call="c1")]
    out = rendered([Entry("user", "do it"), *step("t1", ["c1"], {"c1": "r1"})], items)
    kinds = [(p.kind, p.role, p.text) for p in out.parts]
    assert kinds[0] == ("shown", "user", "do it")
    assert kinds[1] == ("shown", "assistant", say("t1"))
    assert kinds[2] == ("stub", "tool", stub(items[1]))
    # the entry's own text is shown while live, not the stored (perhaps redacted) content
    assert "the file" not in kinds[2][2] and "veil://warm/r1" in kinds[2][2]
    assert out.tokens == sum(p.tokens for p in out.parts)
    assert out.parts[1].tokens == estimate_tokens(say("t1")) + 3


def test_an_evicted_turn_keeps_its_calls_and_a_run_of_whole_steps_collapses() -> None:
    items = [
        item("t1", "turn one", kind="turn", tier="warm"),
        item("r1", "out one", tier="warm", call="c1"),
        item("t2", "turn two", kind="turn", tier="warm"),
        item("r2", "out two", tier="cold", call="c2"),
        item("t3", "turn three", kind="turn", tier="warm"),
        item("r3", "out three", call="c3"),
    ]
    entries = [
        Entry("user", "task"),
        *step("t1", ["c1"], {"c1": "r1"}),
        *step("t2", ["c2"], {"c2": "r2"}),
        *step("t3", ["c3"], {"c3": "r3"}),
    ]
    out = rendered(entries, items)
    assert [p.kind for p in out.parts] == ["shown", "collapsed", "stub", "shown"]
    note = out.parts[1].text
    # a cold item's pointer stays the one its stub was sent with
    assert "2 earlier steps" in note and "veil://warm/r1" in note and "veil://warm/r2" in note
    assert out.parts[2].text == turn_stub(items[4]) and out.parts[2].entry == 5
    assert out.dropped(len(entries)) == {1, 2, 3, 4}
    flat = rendered(entries, items, collapse=False)
    assert [p.kind for p in flat.parts] == [
        "shown",
        "stub",
        "stub",
        "stub",
        "stub",
        "stub",
        "shown",
    ]


def test_an_item_is_in_full_once_where_it_was_last_brought_back() -> None:
    live = item("r1", "the whole file", call="c1")
    entries = [
        *step("t1", ["c1"], {"c1": "r1"}),
        *step("t2", ["x1"], {"x1": "r1"}),  # veil_expand brought it back
        *step("t3", ["x2"], {"x2": "r1"}),  # expanded again while it was in the prompt
    ]
    entries[3] = replace(entries[3], restores=True)
    out = rendered(entries, [live])
    results = [p for p in out.parts if p.role == "tool"]
    assert [p.kind for p in results] == ["stub", "shown", "elsewhere"]
    # above the carrier: the stub it showed while the item was out (the prefix is stable)
    assert results[0].text == stub(replace(live, tier="warm"))
    assert "shown in full above" in results[2].text
    # out of the prompt again: every place is a stub
    gone = rendered(entries, [replace(live, tier="warm")])
    assert [p.kind for p in gone.parts if p.role == "tool"] == ["stub", "stub", "stub"]


def test_a_result_too_large_for_the_window_shows_head_and_tail_where_it_is_carried() -> None:
    text = "\n".join(f"line {n}" for n in range(400))
    big = item("r1", text, tier="warm", call="c1", excerpt=400)
    out = rendered(step("t1", ["c1"], {"c1": "r1"}), [big])
    result = out.parts[1]
    assert result.kind == "excerpt" and "left out here" in result.text
    assert result.text.startswith("line 0") and result.text.rstrip().endswith("line 399")


def test_every_call_gets_one_result_and_a_stray_result_becomes_a_note() -> None:
    entries = [
        Entry("assistant", "", calls=("c1", "c2")),
        Entry("tool", "one", call_id="c1"),
        Entry("tool", "one again", call_id="c1"),  # a second result for the same call
        Entry("user", "stop"),  # interrupted: c2 never answered
        Entry("tool", "late", call_id="c2"),  # a result after its turn ended
    ]
    out = rendered(entries, [])
    shape = [(p.kind, p.role, p.call_id) for p in out.parts]
    assert shape == [
        ("shown", "assistant", None),
        ("shown", "tool", "c1"),
        ("missing", "tool", "c2"),
        ("orphan", "system", None),
        ("shown", "user", None),
        ("orphan", "system", None),
    ]
    assert out.parts[2].text == MISSING_RESULT
    assert out.parts[3].text.endswith("one again") and out.parts[5].text.endswith("late")


def test_a_result_sent_twice_word_for_word_is_a_short_note_the_second_time() -> None:
    """Gemini CLI 0.61 on ``--resume`` sends each earlier result twice (same id, same text):
    the copy is a note without the text, which the first result shows (or its stub restores);
    a second result that differs keeps its text (the test above)."""
    live = item("r1", "the whole file " * 50, call="c1")
    entries = [*step("t1", ["c1"], {"c1": "r1"})]
    entries.append(replace(entries[-1]))  # the same result again, right after
    out = rendered(entries, [live])
    assert [p.kind for p in out.parts][-2:] == ["shown", "orphan"]
    note = out.parts[-1].text
    assert note.endswith("the same as its result above") and "next line" not in note
    gone = rendered(entries, [replace(live, tier="warm")])
    assert [p.kind for p in gone.parts][-2:] == ["stub", "orphan"]
    assert gone.parts[-1].text == note


def test_the_tail_goes_last_and_is_counted() -> None:
    out = rendered([Entry("user", "task")], [], tail="<veil-manifest>…</veil-manifest>")
    assert out.parts[-1].kind == "tail" and out.tail_tokens == out.parts[-1].tokens > 0
    assert out.tokens == out.parts[0].tokens + out.tail_tokens


# ---- the property ---------------------------------------------------------------------------

TIERS = st.sampled_from(["live", "live", "warm", "cold"])


@st.composite
def transcripts(draw: st.DrawFn) -> tuple[list[Entry], list[ContextItem]]:
    """Random conversations: user messages, assistant steps with 0-3 calls whose results are
    there, missing, repeated or late; expansions of earlier results; random tiers."""
    entries: list[Entry] = []
    items: dict[str, ContextItem] = {}
    results: list[str] = []
    for n in range(draw(st.integers(1, 14))):
        if draw(st.booleans()):
            turn = f"u{n}"
            items[turn] = item(turn, f"user {n}", kind="turn", tier=draw(TIERS))
            entries.append(Entry("user", f"user {n}", item=turn))
            continue
        turn = f"t{n}"
        items[turn] = item(turn, f"turn {n}", kind="turn", tier=draw(TIERS))
        calls = [f"c{n}_{k}" for k in range(draw(st.integers(0, 3)))]
        entries.append(Entry("assistant", f"turn {n}", item=turn, calls=tuple(calls)))
        for call in calls:
            fate = draw(
                st.sampled_from(["result", "result", "result", "missing", "twice", "expand"])
            )
            if fate == "missing":
                continue
            if fate == "expand" and results:
                target = draw(st.sampled_from(results))
                restores = draw(st.booleans())
                entries.append(
                    Entry("tool", "expanded", item=target, call_id=call, restores=restores)
                )
                continue
            result = f"r{call}"
            excerpt = draw(st.sampled_from([0, 0, 0, 40]))
            items[result] = item(result, f"output {call} " * 20, tier=draw(TIERS), call=call,
                                 excerpt=excerpt)  # fmt: skip
            results.append(result)
            entries.append(Entry("tool", f"output {call} " * 20, item=result, call_id=call))
            if fate == "twice":
                entries.append(Entry("tool", "again", item=result, call_id=call))
        if draw(st.integers(0, 5)) == 0 and calls:  # a result arriving after another message
            entries.append(Entry("user", "meanwhile"))
            entries.append(Entry("tool", "late", call_id=calls[0]))
    return entries, list(items.values())


def check_pairing(entries: list[Entry], parts: tuple[Part, ...]) -> None:
    waiting: list[str] = []
    for part in parts:
        if part.role == "tool":
            assert part.call_id in waiting, f"a result without its call: {part}"
            waiting.remove(part.call_id)
            continue
        assert not waiting, f"calls without results before {part}: {waiting}"
        if part.role == "assistant" and part.entry is not None:
            waiting = list(dict.fromkeys(entries[part.entry].calls))
    assert not waiting


@settings(max_examples=300, deadline=None)
@given(transcripts(), st.booleans())
def test_every_rendering_is_a_valid_conversation(
    drawn: tuple[list[Entry], list[ContextItem]], collapse: bool
) -> None:
    entries, items = drawn
    out = rendered(entries, items, collapse=collapse, tail="manifest")
    check_pairing(entries, out.parts)
    assert out.tokens == sum(p.tokens for p in out.parts)
    for part in out.parts:
        extra = entries[part.entry].extra_tokens if part.entry is not None else 0
        assert part.tokens == estimate_tokens(part.text) + extra
    # an item is in full at most once; a result out of the prompt is shown as it is only
    # where its stub would not be shorter
    by_id = {i.id: i for i in items}
    shown = [
        entries[p.entry]
        for p in out.parts
        if p.kind == "shown" and p.entry is not None and entries[p.entry].role == "tool"
        and entries[p.entry].item is not None
    ]  # fmt: skip

    def replaceable(e: Entry) -> bool:  # a stub or a note would be shorter than its text
        held = by_id[e.item or ""]
        return min(len(stub(replace(held, excerpt=0))), len(shown_elsewhere(held))) < len(e.text)

    full = [e.item for e in shown if by_id[e.item or ""].tier == "live" and replaceable(e)]
    assert len(full) == len(set(full))
    for e in shown:
        held = by_id[e.item or ""]
        assert held.tier == "live" or len(stub(replace(held, excerpt=0))) >= len(e.text)
    for part in out.parts:  # and no stub is longer than what it stands for
        if part.kind == "stub" and part.entry is not None and entries[part.entry].role == "tool":
            assert len(part.text) < len(entries[part.entry].text)
    if not collapse:  # every entry is somewhere, in order
        placed = [p.entry for p in out.parts if p.entry is not None]
        assert placed == sorted(placed) and set(placed) == set(range(len(entries)))


@settings(max_examples=150, deadline=None)
@given(transcripts(), st.booleans(), st.randoms(use_true_random=False))
def test_rendering_again_after_changes_equals_rendering_from_scratch(
    drawn: tuple[list[Entry], list[ContextItem]], collapse: bool, rng: Any
) -> None:
    """The engine renders every request with a :class:`Renderer` that re-renders only what
    changed; whatever grows, moves or is rewritten between requests, its output is the same
    as rendering everything from scratch."""
    entries, items = drawn
    state = {i.id: i for i in items}
    renderer = Renderer(estimate_tokens, collapse=collapse)
    shown: list[Entry] = []
    for entry in entries:
        shown.append(entry)
        changed: set[str] = set()
        for _ in range(rng.randint(0, 3)):  # some items move between requests
            moved = rng.choice(items)
            tier = rng.choice(["live", "warm", "cold"])
            state[moved.id] = replace(
                moved, tier=tier, excerpt=moved.excerpt if tier != "live" else 0
            )
            changed.add(moved.id)
        if rng.randint(0, 9) == 0 and len(shown) > 2:  # a framework rewrote an earlier entry
            k = rng.randrange(len(shown) - 1)
            shown[k] = replace(shown[k], text=shown[k].text + " (edited)")
        again = renderer.render(shown, state, changed=changed, tail="t")
        fresh = render(shown, state, count=estimate_tokens, collapse=collapse, tail="t")
        assert again == fresh
