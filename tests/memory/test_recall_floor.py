"""Recall's relevance floor for facts (issue 28, K): a nearest neighbour always exists, so an
unrelated query used to get every fact of a small memory. A fact is now recalled only when the
query names it, asks its relation, matches its words or is close to it by embedding."""

from __future__ import annotations

from pathlib import Path

from tests.memory.conftest import MakeMemory, fact
from veil.embed import embedder_from_spec
from veil.memory import Memory, MemoryConfig
from veil.testing import ScriptedModel

EXTRACTION = {
    "facts": [
        fact("user", "prefers", "vim", "The user prefers vim."),
        fact("user", "located_at", "Lisbon", "The user lives in Lisbon."),
        fact("user", "has_allergy", "peanuts", "The user is allergic to peanuts."),
    ],
    "episodes": [],
}
EVIDENCE = "I prefer vim, I live in Lisbon and I am allergic to peanuts."
UNRELATED = "zebra giraffe savanna"


def objects(memory: Memory, query: str) -> set[str]:
    return {f.object for f in memory.recall(query, user_id="u1", token_budget=1000).facts}


def test_an_unrelated_query_gets_no_facts_and_related_ones_get_theirs(
    make_memory: MakeMemory,
) -> None:
    memory = make_memory([EXTRACTION])
    memory.remember(EVIDENCE, user_id="u1")
    memory.maintain("u1")  # the user's wiki section exists: it must not come back either
    assert memory.recall("", user_id="u1", token_budget=1000).wiki  # the briefing has it

    unrelated = memory.recall(UNRELATED, user_id="u1", token_budget=1000)
    assert unrelated.facts == () and unrelated.wiki == ()
    assert "vim" not in unrelated.text and "Lisbon" not in unrelated.text
    assert objects(memory, "which editor") == {"vim"}  # the relation asked, of the user
    assert objects(memory, "Lisbon") == {"Lisbon"}  # its words
    assert "peanuts" in objects(memory, "where do I live and what am I allergic to")  # the user
    # the same query again: the same answer
    assert memory.recall("which editor", user_id="u1", token_budget=1000).text == (
        memory.recall("which editor", user_id="u1", token_budget=1000).text
    )
    # the floor is what keeps them out: without it the nearest neighbours come back
    floorless = make_memory(fact_min_similarity=-1.0)
    assert objects(floorless, UNRELATED) == {"vim", "Lisbon", "peanuts"}


def test_a_fact_close_by_meaning_alone_passes_the_floor(tmp_path: Path) -> None:
    """With the default embedder: "any allergies" shares no word, entity or relation with
    "The user is allergic to peanuts." (the stems differ), only meaning."""
    with Memory(
        tmp_path / "m.db",
        complete=ScriptedModel([EXTRACTION]),
        embedder=embedder_from_spec("static"),
        config=MemoryConfig(),
    ) as memory:
        memory.remember(EVIDENCE, user_id="u1")
        assert objects(memory, "any allergies") == {"peanuts"}
        assert objects(memory, UNRELATED) == set()
        assert objects(memory, "weather on mars") == set()
