"""Recall through the public API, on SQLite and PostgreSQL. Recall never calls the model."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.memory.conftest import MakeMemory, extraction, fact
from veil.memory import Memory
from veil.memory.render import estimate_tokens
from veil.memory.rows import FACT_VALUES
from veil.testing import FakeClock, ScriptedModel


def calls(memory: Memory) -> int:
    assert isinstance(memory.complete, ScriptedModel)
    return len(memory.complete.calls)


def test_entity_alias_recall_and_one_hop(make_memory: MakeMemory) -> None:
    memory = make_memory(
        [
            extraction(fact("user", "works_on", "Apollo", "The user works on Apollo.")),
            extraction(fact("Apollo", "uses_tool", "PostgreSQL", "Apollo uses PostgreSQL.")),
            extraction(fact("ACME Corp", "located_at", "Boston", "ACME is based in Boston.")),
            extraction(fact("user", "prefers", "tea", "The user prefers tea.")),
        ],
        aliases={"Project Apollo": "Apollo"},
    )
    for text in (
        "I work on Apollo.",
        "Apollo uses PostgreSQL.",
        "ACME Corp is in Boston.",
        "I like tea.",
    ):
        memory.remember(text, user_id="u1")
    before = calls(memory)
    result = memory.recall("where is acme?", user_id="u1")
    assert "ACME is based in Boston." in result.text
    assert "acme" in result.entities
    hop = memory.recall("What does Project Apollo run on?", user_id="u1")
    assert "Apollo uses PostgreSQL." in hop.text
    mine = memory.recall("what am I working on", user_id="u1")
    assert "The user works on Apollo." in mine.text
    assert "Apollo uses PostgreSQL." in mine.text  # one hop from user -> Apollo
    assert calls(memory) == before  # recall never calls the model


def test_no_stale_value_beside_the_current_one_and_as_of(
    make_memory: MakeMemory, clock: FakeClock
) -> None:
    memory = make_memory(
        [
            extraction(fact("user", "prefers", "vim", "The user prefers vim.")),
            extraction(fact("user", "prefers", "emacs", "The user prefers emacs.")),
        ]
    )
    memory.remember("I use vim.", user_id="u1")
    before_switch = clock.advance(days=10)
    clock.advance(days=1)
    memory.remember("I switched to emacs.", user_id="u1")
    now = memory.recall("which editor do I prefer", user_id="u1")
    assert "emacs" in now.text and "vim" not in now.text
    then = memory.recall("which editor do I prefer", user_id="u1", as_of=before_switch)
    assert "vim" in then.text and "emacs" not in then.text
    after = memory.recall("which editor do I prefer", user_id="u1", as_of=clock.now())
    assert "emacs" in after.text and "vim" not in after.text


def test_stale_facts_are_marked(make_memory: MakeMemory, clock: FakeClock) -> None:
    memory = make_memory(
        [extraction(fact("user", "works_as", "nurse", "The user is a nurse.", volatility="slow"))]
    )
    memory.remember("I am a nurse.", user_id="u1")
    clock.advance(days=200)
    text = memory.recall("what is my job", user_id="u1").text
    assert "The user is a nurse. (possibly stale — last confirmed 2026-01-05)" in text


def test_lapsed_transient_facts_are_not_recalled(make_memory: MakeMemory, clock: FakeClock) -> None:
    memory = make_memory(
        [
            extraction(
                fact(
                    "user", "health_state", "a cold", "The user has a cold.", volatility="transient"
                )
            )
        ]
    )
    memory.remember("I have a cold.", user_id="u1")
    assert "cold" in memory.recall("how am I feeling, cold?", user_id="u1").text
    clock.advance(days=8)
    assert "cold" not in memory.recall("how am I feeling, cold?", user_id="u1").text


def test_quarantined_claims_only_in_their_section(make_memory: MakeMemory) -> None:
    memory = make_memory(
        [
            extraction(fact("user", "located_at", "Berlin", "The user lives in Berlin.")),
            extraction(
                fact(
                    "user",
                    "owes",
                    "500 dollars",
                    "The user owes 500 dollars to the landlord.",
                    claimant="landlord",
                )
            ),
        ]
    )
    memory.remember("I live in Berlin.", user_id="u1")
    memory.remember("My landlord says I owe him 500 dollars.", user_id="u1")
    result = memory.recall("do I owe money to the landlord?", user_id="u1")
    facts_part, _, claims_part = result.text.partition(
        "## Unverified third-party claims (never assert as fact)"
    )
    assert "500 dollars" in claims_part and "landlord claims" in claims_part
    assert "500 dollars" not in facts_part
    assert [c.object for c in result.claims] == ["500 dollars"]
    assert all(f.status != "quarantined" for f in result.facts)
    without = memory.recall("do I owe money to the landlord?", user_id="u1", include_claims=False)
    assert "500 dollars" not in without.text and without.claims == ()


def test_contested_facts_show_both_sides(make_memory: MakeMemory) -> None:
    memory = make_memory(
        [
            extraction(fact("user", "works_as", "nurse", "The user is a nurse.")),
            extraction(fact("user", "works_as", "doctor", "The user is a doctor.")),
        ]
    )
    memory.remember("I am a nurse.", user_id="u1")
    memory.remember("The user is a doctor.", user_id="u1", author="assistant")
    text = memory.recall("what is my job?", user_id="u1").text
    assert text.startswith("## Contested")
    contested_line = text.splitlines()[1]
    assert "nurse" in contested_line and "doctor" in contested_line
    assert "user (" in contested_line and "assistant (" in contested_line


@pytest.mark.parametrize("budget", [0, 5, 20, 40, 80, 150, 400])
def test_budget_is_respected_to_the_token(make_memory: MakeMemory, budget: int) -> None:
    facts = [
        fact(
            "user",
            f"likes_{i}",
            f"thing number {i}",
            f"The user likes thing number {i} very much, more than most other things.",
        )
        for i in range(30)
    ]
    memory = make_memory(
        [
            extraction(
                *facts,
                episodes=[
                    {
                        "kind": "interaction",
                        "text": f"Talked about thing {i} at length",
                        "due": None,
                    }
                    for i in range(10)
                ],
            )
        ]
    )
    memory.remember(" ".join(f"I like thing number {i}." for i in range(30)), user_id="u1")
    result = memory.recall("which things do I like?", user_id="u1", token_budget=budget)
    assert result.tokens == estimate_tokens(result.text) <= budget
    if budget >= 40:
        assert result.truncated and "[truncated to fit the token budget: left out" in result.text
        assert result.facts  # the highest-priority section got space first
    big = memory.recall("which things do I like?", user_id="u1", token_budget=100_000)
    assert not big.truncated and len(big.facts) == 30


def test_exact_token_counter_is_pluggable(make_memory: MakeMemory) -> None:
    def words(text: str) -> int:
        return len(text.split())

    memory = make_memory(
        [extraction(*[fact("user", f"r{i}", f"v{i}", f"Fact {i} is here.") for i in range(20)])],
        token_counter=words,
    )
    memory.remember("lots of facts v1 v2", user_id="u1")
    result = memory.recall("facts", user_id="u1", token_budget=30)
    assert words(result.text) <= 30 and result.tokens == words(result.text)


def test_empty_query_gives_a_briefing(make_memory: MakeMemory, clock: FakeClock) -> None:
    memory = make_memory(
        [
            extraction(
                fact("user", "prefers", "tea", "The user prefers tea."),
                fact("user", "works_as", "nurse", "The user is a nurse.", volatility="slow"),
                episodes=[
                    {"kind": "commitment", "text": "Send the report to Ana", "due": "2026-01-09"},
                    {"kind": "commitment", "text": "Renew passport", "due": "2026-03-01"},
                    {"kind": "failure", "text": "The deploy failed", "due": None},
                ],
            ),
            extraction(fact("user", "located_at", "Lisbon", "The user lives in Lisbon.")),
        ]
    )
    memory.remember(
        "I prefer tea, I'm a nurse. Report to Ana by Friday; passport in March. The deploy failed.",
        user_id="u1",
    )
    clock.advance(days=130)
    memory.remember("I live in Lisbon.", user_id="u1")
    clock.set(clock.now())  # no-op, explicit: the briefing reads the clock once
    before = calls(memory)
    briefing = memory.recall("", user_id="u1")
    assert calls(memory) == before
    assert "The user lives in Lisbon." in briefing.text
    assert "## Possibly stale — confirm with the user" in briefing.text
    assert "The user is a nurse. (possibly stale" in briefing.text
    assert "The deploy failed" in briefing.text
    # Commitments due within 7 days of now (Send the report was due months ago).
    assert "## Due soon" not in briefing.text


def test_commitments_due_soon(make_memory: MakeMemory) -> None:
    memory = make_memory(
        [
            extraction(
                episodes=[
                    {"kind": "commitment", "text": "Send the report to Ana", "due": "2026-01-09"},
                    {"kind": "commitment", "text": "Renew passport", "due": "2026-03-01"},
                ]
            )
        ]
    )
    memory.remember("Report to Ana by Friday; passport in March.", user_id="u1")
    text = memory.recall("", user_id="u1").text
    assert "- due 2026-01-09: Send the report to Ana" in text
    assert "due 2026-03-01" not in text.split("## Episodes")[0]


def test_vector_fallback_for_queries_without_entities(make_memory: MakeMemory) -> None:
    memory = make_memory(
        [
            extraction(
                fact("user", "has_pet", "two puppies", "The user has two puppies."),
                fact("user", "deadline", "tax return", "The tax return is due."),
            )
        ]
    )
    memory.remember("I have two puppies; my tax return is due.", user_id="u1")
    result = memory.recall("puppies", user_id="u1", token_budget=40)
    assert result.entities == () and "puppies" in result.text


def test_isolation_between_users(make_memory: MakeMemory) -> None:
    memory = make_memory(
        [
            extraction(fact("user", "prefers", "CANARY-alice-tea")),
            extraction(fact("user", "prefers", "coffee")),
        ]
    )
    memory.remember("I prefer CANARY-alice-tea.", user_id="alice")
    memory.remember("I prefer coffee.", user_id="bob")
    for query in ("CANARY-alice-tea", "what do I prefer", "", "tea"):
        assert "CANARY" not in memory.recall(query, user_id="bob").text


@pytest.mark.parametrize("share", [0.0, 0.5])
def test_subgraph_coverage_share(make_memory: MakeMemory, clock: FakeClock, share: float) -> None:
    responses = [
        extraction(
            *[
                fact(
                    "user",
                    f"hiked_{d}_{i}",
                    f"trail {d}-{i}",
                    f"The user hiked trail {d}-{i} in the mountains.",
                )
                for i in range(8 if d == 0 else 1)
            ]
        )
        for d in range(6)
    ]
    memory = make_memory(responses, subgraph_coverage_share=share)
    for d in range(6):
        memory.remember(f"hiking day {d}: trails in the mountains", user_id="u1")
        clock.advance(days=1)
    result = memory.recall("hiked trail in the mountains", user_id="u1", token_budget=160)
    days = {f.valid_from.date() for f in result.facts}
    if share == 0.0:
        assert len(days) <= 2  # relevance alone collapses onto the dominant day
    else:
        assert len(days) >= 3


def test_procedural_outcomes_rank_facts(make_memory: MakeMemory) -> None:
    memory = make_memory(
        [
            extraction(
                fact("user", "uses_tool", "ripgrep", "The user uses ripgrep to search code."),
                fact("user", "uses_tool", "grep", "The user uses grep to search code."),
            )
        ]
    )
    report = memory.remember("I search code with ripgrep or grep.", user_id="u1")
    rg, grep = report.facts
    for _ in range(3):
        memory.record_outcome(grep, user_id="u1", ok=True)
    memory.record_outcome(rg, user_id="u1", ok=False)
    ranked = memory.recall("which tool to search code", user_id="u1").facts
    assert [f.object for f in ranked][:2] == ["grep", "ripgrep"]
    used = memory.fact(grep, user_id="u1")
    assert used.times_used == 3 and used.last_outcome is True


def test_recall_rejects_bad_arguments(make_memory: MakeMemory) -> None:
    memory = make_memory([])
    with pytest.raises(ValueError):
        memory.recall("x", user_id="")
    with pytest.raises(ValueError):
        memory.recall("x", user_id="u1", token_budget=-1)
    assert memory.recall("anything", user_id="nobody").text == ""


def test_as_of_before_anything_is_empty(make_memory: MakeMemory, clock: FakeClock) -> None:
    memory = make_memory([extraction(fact("user", "prefers", "tea"))])
    memory.remember("I prefer tea.", user_id="u1")
    assert memory.recall("tea", user_id="u1", as_of=clock.now() - timedelta(days=1)).facts == ()


def test_recall_values_match_the_rendered_text() -> None:
    from veil.memory.render import Section, render

    out = render(
        [Section("episodes", "Episodes", ["- A " + "x" * 400, "- B short", "- C short"])], 40
    )
    assert out.included["episodes"] == [1, 2]
    assert "- B short" in out.text and "- A" not in out.text
    assert out.omitted == {"episodes": 1}


def test_facts_below_user_trust_are_marked_with_their_origin(make_memory: MakeMemory) -> None:
    memory = make_memory(
        [
            extraction(
                fact(
                    "user",
                    "authorised",
                    "payments to 99-1234",
                    "The user authorised payments to 99-1234.",
                )
            )
        ]
    )
    memory.remember("The user authorised payments to 99-1234.", user_id="u1", author="assistant")
    text = memory.recall("payments", user_id="u1").text
    assert "(per assistant; not confirmed by the user)" in text


def test_a_passing_mention_of_the_user_does_not_pull_in_their_facts(
    make_memory: MakeMemory,
) -> None:
    user_facts = [
        fact("user", f"likes_{i}", f"hobby {i}", f"The user likes hobby {i}.") for i in range(40)
    ]
    memory = make_memory(
        [
            extraction(*user_facts),
            extraction(
                fact("Ada", "located_at", "Lisbon", "Ada lives in Lisbon."),
                fact("user", "located_at", "Porto", "The user lives in Porto."),
            ),
        ]
    )
    memory.remember(" ".join(f"I like hobby {i}." for i in range(40)), user_id="u1")
    memory.remember("Ada lives in Lisbon; I live in Porto.", user_id="u1")
    about_ada = memory.recall("tell me about Ada", user_id="u1")
    assert about_ada.facts[0].statement == "Ada lives in Lisbon."
    # The user's facts may still come from the vector search, but not from the graph.
    recaller = memory._recaller  # pyright: ignore[reportPrivateUsage]
    graph = recaller._graph_facts("u1", ["ada", "user"], (), None, 100)  # pyright: ignore[reportPrivateUsage]
    key = FACT_VALUES.index("subject_key")
    assert graph and all(row[key] != "user" for row in graph)
    # Asking a relation of the user's ("where do I live") reads that relation of the user.
    mine = memory.recall("where do I live?", user_id="u1")
    assert "The user lives in Porto." in mine.text
    # The user alone: their most recent facts, capped by what the budget can render.
    small = memory.recall("what about me?", user_id="u1", token_budget=100)
    assert 0 < len(small.facts) <= 10
