"""The extraction guardrails, rule by rule, on what real models wrote.

The cases are outputs of a real model: the ones issue 15 reports from Qwen2.5-Coder-1.5B
(Q4_K_M, llama.cpp) driven through Veil, and the recordings in tests/data/recorded/
(``test_recorded_extraction.py`` replays all of those end to end)."""

from __future__ import annotations

from datetime import date

import pytest

from veil.memory.extraction import EpisodeItem, FactItem, PromptFact
from veil.memory.guardrails import (
    checked_episode,
    object_grounded,
    reported_by,
    sane_relation,
    third_person,
    vet,
)


def fact(
    relation: str,
    obj: str,
    statement: str = "",
    *,
    subject: str = "user",
    claimant: str = "user",
    supersedes: str | None = None,
) -> FactItem:
    return FactItem(subject, relation, obj, statement, None, claimant, supersedes)


# ---- grounding --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "evidence", "grounded"),
    [
        ("london", "I live in Lisbon too.", False),  # the 1.5B model's answer
        ("Lisbon", "I live in Lisbon too.", True),
        ("nurse", "I quit nursing and now I work as a data analyst.", True),
        ("data analyst", "now I work as a data analyst", True),
        ("vegan diet", "I have been vegan since January.", True),
        ("$500", "My landlord says I owe him $500.", True),
        ("$700", "My landlord says I owe him $500.", False),
        ("2", "Ana has two kids.", True),
        ("emacs", "I switched from vim to emacs last month.", True),
        ("the", "anything", True),  # nothing to judge
    ],
)
def test_a_value_must_come_from_the_evidence(value: str, evidence: str, grounded: bool) -> None:
    assert object_grounded(value, evidence) is grounded


def test_the_superseded_fact_lends_its_words() -> None:
    evidence = "Ana got the promotion she wanted."
    assert not object_grounded("team lead", evidence)
    assert object_grounded("team lead", evidence, ["Ana hopes to become team lead."])


def test_an_ungrounded_value_is_flagged_with_what_is_missing() -> None:
    vetted = vet(
        [fact("located_at", "london", "The user lives in London.")],
        [],
        evidence="I live in Lisbon too.",
    )
    (item,) = vetted.facts
    assert not item.grounded and "london" in item.missing
    assert any("not in the evidence" in n for n in vetted.notes)


def test_a_dated_value_is_grounded_by_the_calendar() -> None:
    vetted = vet(
        [fact("deadline", "dentist on 2024-05-10", "The user sees the dentist on 2024-05-10.")],
        [],
        evidence="I have a dentist appointment on Friday at 3pm.",
        calendar=frozenset({date(2024, 5, 10)}),
    )
    assert vetted.facts[0].grounded


# ---- reported speech --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("evidence", "value", "reporter"),
    [
        ("My landlord says I owe him $500.", "$500", "landlord"),
        ("My manager Priya says I will be promoted to team lead.", "team lead", "manager priya"),
        ("Tiago says I never call him, which isn't true.", "never call", "tiago"),
        ("The vet says Biscuit is overweight.", "overweight", "vet"),
        ("I live in Lisbon.", "Lisbon", None),
        ("My landlord says the rent is due; I live in Porto.", "Porto", "landlord"),
    ],
)
def test_reported_speech_names_its_reporter(
    evidence: str, value: str, reporter: str | None
) -> None:
    assert reported_by(evidence, value) == reporter


def test_a_first_hand_label_on_reported_speech_becomes_a_claim() -> None:
    """The 1.5B model labelled "My landlord says I owe him $500" as the user's own fact."""
    vetted = vet(
        [fact("owes", "$500", "I owe my landlord $500.")],
        [],
        evidence="My landlord says I owe him $500.",
    )
    assert vetted.facts[0].claimant == "landlord"


# ---- relations --------------------------------------------------------------------------------


def test_a_tool_is_not_a_job() -> None:
    """ "I switched from vim to emacs." came back as ``works_as emacs``."""
    assert sane_relation("works_as", "emacs")[0] == "uses_tool"
    assert sane_relation("works_as", "data analyst") == ("works_as", None)
    assert sane_relation("works_as", "Python developer at a bank")[0] == "works_as"
    assert sane_relation("prefers", "emacs") == ("prefers", None)


# ---- episodes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "due", "evidence", "want_kind", "want_due"),
    [
        # "Every episode got a due date and odd kinds" (the 1.5B model):
        ("commitment", "2024-03-11", "I switched from vim to emacs.", "interaction", None),
        ("failure", None, "I'm at the airport waiting for my flight.", "interaction", None),
        ("interaction", "2024-03-11", "I moved to Porto last week.", "interaction", None),
        # What is right stays:
        (
            "commitment",
            "2024-05-10",
            "Dentist appointment on Friday at 3pm.",
            "commitment",
            "2024-05-10",
        ),
        (
            "commitment",
            "2024-05-07",
            "I promised to send the report by tomorrow.",
            "commitment",
            "2024-05-07",
        ),
        ("failure", None, "The build failed again with a timeout.", "failure", None),
        ("fix", None, "I fixed the flaky test by adding a retry.", "fix", None),
        ("commitment", "2024-05-07", "I will call Ana.", "commitment", None),  # no time named
    ],
)
def test_episode_kinds_and_due_dates_follow_the_evidence(
    kind: str, due: str | None, evidence: str, want_kind: str, want_due: str | None
) -> None:
    checked, _ = checked_episode(EpisodeItem(kind, "x", due), evidence)  # type: ignore[arg-type]
    assert (checked.kind, checked.due) == (want_kind, want_due)


# ---- third person -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("I moved to Porto last week.", "The user moved to Porto last week."),
        ("I live in Lisbon.", "The user lives in Lisbon."),
        ("I'm vegetarian.", "The user is vegetarian."),
        ("I have a dog named Biscuit.", "The user has a dog named Biscuit."),
        ("My sister Ana lives in Madrid.", "The user's sister Ana lives in Madrid."),
        ("I also use ruff.", "The user also uses ruff."),
        ("I go to the gym.", "The user goes to the gym."),
        ("I will call Ana.", "The user will call Ana."),
        ("I've been vegan since January.", "The user has been vegan since January."),
        ("The user prefers emacs.", "The user prefers emacs."),
        ("Ana moved to Berlin.", "Ana moved to Berlin."),
    ],
)
def test_statements_are_about_the_subject(text: str, want: str) -> None:
    assert third_person(text) == want


def test_vet_writes_statements_and_episodes_in_the_third_person() -> None:
    vetted = vet(
        [fact("located_at", "Porto", "I moved to Porto last week.")],
        [EpisodeItem("interaction", "I moved to Porto last week.", None)],
        evidence="I moved to Porto last week.",
    )
    assert vetted.facts[0].statement == "The user moved to Porto last week."
    assert vetted.episodes[0].text == "The user moved to Porto last week."


def test_a_supersedes_target_is_looked_up_in_the_facts_shown() -> None:
    shown = [PromptFact("f_1", "Ana", "works_as", "data analyst", "Ana is a data analyst.")]
    vetted = vet(
        [fact("works_as", "senior data analyst", subject="Ana", supersedes="f_1")],
        [],
        evidence="Ana got promoted to senior.",
        shown=shown,
    )
    assert vetted.facts[0].grounded
