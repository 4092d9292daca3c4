"""Opt-in: the real extraction against a live model (VEIL_TEST_MODEL=provider:model)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from veil.llm.registry import extraction_complete_from_spec
from veil.memory import Memory
from veil.testing import FakeClock, HashEmbedder

pytestmark = pytest.mark.skipif(
    not os.environ.get("VEIL_TEST_MODEL"), reason="set VEIL_TEST_MODEL=provider:model to run"
)


def test_live_supersession_and_quarantine(tmp_path: Path) -> None:
    memory = Memory(
        tmp_path / "m.db",
        complete=extraction_complete_from_spec(os.environ["VEIL_TEST_MODEL"]),
        embedder=HashEmbedder(),
        clock=FakeClock(),
    )
    first = memory.remember("I use vim as my editor.", user_id="u1")
    assert first.ok and first.llm_calls <= 2
    memory.remember("I switched from vim to emacs.", user_id="u1")
    prefs = memory.history("u1", "user", "prefers") or memory.facts("u1", include_history=True)
    assert any("emacs" in f.object.casefold() for f in prefs)
    claim = memory.remember("My landlord says I owe him 500 dollars.", user_id="u1")
    assert claim.quarantined and not any("500" in f.object for f in memory.facts("u1"))
