"""A real model's raw extraction outputs, replayed through Veil's real parsing, validation,
guardrails and write path — on every run, without the model.

The recording (``tests/data/recorded/extraction-*.json``) is Qwen2.5-Coder-1.5B-Instruct
(Q4_K_M GGUF, llama.cpp's server) answering ``Memory.remember`` for the labelled statements of
``benchmarks/real_model_data/``, written by ``python -m benchmarks.real_model --save-fixtures``.
Each test names what the model really wrote and what Veil must make of it."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from benchmarks.real_model import SETS, replay, scenarios, score

from veil.cli.local_model import MODEL_SHA256
from veil.memory.extraction import parse_output, validate_items

RECORDED = Path(__file__).resolve().parents[1] / "data" / "recorded"


def fixture(which: str) -> dict[str, Any]:
    path = RECORDED / f"extraction-{which}.json"
    if not path.exists():
        pytest.fail(f"{path} is missing: record it with python -m benchmarks.real_model")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@cache
def replayed(which: str, guardrails: bool) -> list[dict[str, Any]]:
    return replay(fixture(which)["recording"], guardrails=guardrails, which=which)


def step(which: str, guardrails: bool, text: str) -> dict[str, Any]:
    for run, scenario in zip(replayed(which, guardrails), scenarios(which), strict=True):
        for label, state in zip(scenario["steps"], run["steps"], strict=True):
            if label["text"] == text:
                return state
    raise AssertionError(f"no step {text!r}")


def new_facts(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in state["facts"] if f["id"] in state["report"]["facts"]]


@pytest.mark.parametrize("which", list(SETS))
def test_the_recording_says_what_made_it_and_every_output_parses(which: str) -> None:
    data = fixture(which)
    info = data["recorded_with"]
    assert info["quantisation"] == "Q4_K_M" and info["gguf_sha256"] == MODEL_SHA256
    outputs = [o for r in data["recording"] for o in r["outputs"]]
    assert len(outputs) == sum(len(s["steps"]) for s in scenarios(which))
    for output in outputs:  # JSON was enforced by the server's grammar: all parse
        validate_items(parse_output(output))


def test_the_guardrails_catch_what_the_model_got_wrong() -> None:
    raw, guarded = score(replayed("tuning", False)), score(replayed("tuning", True))
    assert guarded["precision"] > raw["precision"] + 0.15
    assert guarded["wrong"] < raw["wrong"] and guarded["recall"] >= raw["recall"]
    assert raw["supersessions_wrong"] > 0 and guarded["supersessions_wrong"] == 0
    assert raw["due_spurious"] >= 30 and guarded["due_spurious"] <= 2
    assert guarded["due_correct"] > raw["due_correct"]
    assert guarded["claims_kept_out"] == guarded["claims_expected"]


def test_a_current_fact_copied_back_is_not_a_reinforcement() -> None:
    """For "The weather is lovely today." the model answered ``prefers vim`` (a fact it had
    been shown) with the statement "The user lives in Porto."."""
    text = "The weather is lovely today."
    assert step("tuning", False, text)["report"]["reinforced"]
    guarded = step("tuning", True, text)["report"]
    assert guarded["reinforced"] == [] and guarded["facts"] == [] and guarded["invalid"] >= 1


def test_an_appointment_is_not_a_job_and_its_due_date_is_the_evidences() -> None:
    """The model answered ``works_as dentist`` and an ``outcome`` due 2024-05-06 (a Monday)."""
    text = "I have a dentist appointment on Friday at 3pm."
    assert [f["relation"] for f in new_facts(step("tuning", False, text))] == ["works_as"]
    guarded = step("tuning", True, text)
    assert new_facts(guarded) == []
    ids = set(guarded["report"]["episodes"])
    (episode,) = [e for e in guarded["episodes"] if e["id"] in ids]
    assert (episode["kind"], episode["due"]) == ("commitment", "2024-05-10")


def test_tools_are_not_jobs_and_avoiding_is_not_using() -> None:
    python_sql = "I use Python and SQL every day at work."
    assert {f["relation"] for f in new_facts(step("tuning", False, python_sql))} == {"works_as"}
    assert {f["relation"] for f in new_facts(step("tuning", True, python_sql))} == {"uses_tool"}
    docker = "I avoid Docker on my laptop because it drains the battery."
    assert [f["relation"] for f in new_facts(step("tuning", False, docker))] == ["uses_tool"]
    assert [f["relation"] for f in new_facts(step("tuning", True, docker))] == ["avoids_tool"]


def test_statements_are_stored_in_the_third_person() -> None:
    text = "I went back to vim, emacs was too slow on my laptop."
    (raw,) = new_facts(step("tuning", False, text))
    (guarded,) = new_facts(step("tuning", True, text))
    assert raw["statement"].startswith("I went back")
    assert (
        guarded["statement"]
        == "The user went back to vim, emacs was too slow on the user's laptop."
    )


def test_reported_claims_stay_quarantined() -> None:
    text = "My mom claims I was allergic to shellfish as a kid."
    for guardrails in (False, True):
        state = step("tuning", guardrails, text)
        assert all(f["status"] == "quarantined" for f in new_facts(state))
