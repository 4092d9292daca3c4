"""Wrong arguments to the public Memory API (SPEC 10): a wrong type is a TypeError, a bad value
a ValueError, the message names the parameter, and a refused call writes nothing to the tape.

Every case goes through the public API of a real Memory on a SQLite file (HashEmbedder, a
ScriptedModel at the LLM boundary) with the audit log on, so that even a refused read would
show up on the tape if it got as far as doing anything.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.memory.conftest import extraction, fact
from veil.memory import Memory, MemoryConfig, NoModel, UnknownFact
from veil.testing import FakeClock, HashEmbedder, ScriptedModel


@dataclass(frozen=True)
class Seeded:
    memory: Memory
    fact_id: str
    export: Path


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[Seeded]:
    memory = Memory(
        tmp_path / "memory.db",
        complete=ScriptedModel(
            [extraction(fact("user", "prefers", "vim")), extraction(), extraction()]
        ),
        embedder=HashEmbedder(),
        config=MemoryConfig(audit=True),
        clock=FakeClock(),
    )
    report = memory.remember("I prefer vim.", user_id="u1")
    export = memory.export("u1", tmp_path / "u1.jsonl")
    try:
        yield Seeded(memory, report.facts[0], export)
    finally:
        memory.close()


Call = Callable[[Any], object]
"""A call on a :class:`Seeded` (typed ``Any``: the calls are wrong on purpose)."""
NAIVE = datetime(2024, 1, 1, 12, 0)  # naive on purpose


def _remember(**kwargs: Any) -> Call:
    def call(s: Seeded) -> object:
        args: dict[str, Any] = {"user_id": "u1", **kwargs}
        text = args.pop("text", "I like tea.")
        return s.memory.remember(text, **args)

    return call


def _recall(**kwargs: Any) -> Call:
    def call(s: Seeded) -> object:
        args: dict[str, Any] = {"user_id": "u1", **kwargs}
        query = args.pop("query", "editor")
        return s.memory.recall(query, **args)

    return call


CASES: list[tuple[str, Call, type[Exception], str]] = [
    # remember
    ("remember-None", _remember(text=None), TypeError, "text_or_messages"),
    ("remember-bytes", _remember(text=b"I like tea"), TypeError, "text_or_messages"),
    ("remember-int", _remember(text=42), TypeError, "text_or_messages"),
    (
        "remember-one-message",
        _remember(text={"role": "user", "content": "hi"}),
        TypeError,
        "text_or_messages",
    ),
    (
        "remember-message-not-mapping",
        _remember(text=["hello"]),
        TypeError,
        "text_or_messages[0]",
    ),
    (
        "remember-message-content",
        _remember(text=[{"role": "user", "content": 3}]),
        TypeError,
        "text_or_messages[0]['content']",
    ),
    (
        "remember-message-role",
        _remember(text=[{"role": "boss", "content": "hi"}]),
        ValueError,
        "text_or_messages[0]['role']",
    ),
    ("remember-no-messages", _remember(text=[]), ValueError, "text_or_messages"),
    ("remember-blank", _remember(text="   "), ValueError, "text_or_messages"),
    ("remember-at-str", _remember(at="2024-01-01"), TypeError, "at"),
    ("remember-at-date", _remember(at=date(2024, 1, 1)), TypeError, "at"),
    ("remember-at-naive", _remember(at=NAIVE), ValueError, "at"),
    ("remember-at-epoch", _remember(at=1_700_000_000), TypeError, "at"),
    ("remember-user-int", _remember(user_id=7), TypeError, "user_id"),
    ("remember-user-None", _remember(user_id=None), TypeError, "user_id"),
    ("remember-user-empty", _remember(user_id=""), ValueError, "user_id"),
    ("remember-user-control", _remember(user_id="u\x001"), ValueError, "user_id"),
    ("remember-author-bogus", _remember(author="bogus"), ValueError, "author"),
    ("remember-author-int", _remember(author=3), TypeError, "author"),
    ("remember-derived-str", _remember(derived_from="abc"), TypeError, "derived_from"),
    ("remember-derived-int", _remember(derived_from=[3]), TypeError, "derived_from[0]"),
    ("remember-derived-empty-id", _remember(derived_from=[""]), ValueError, "derived_from[0]"),
    ("remember-derived-dict", _remember(derived_from={"a": 1}), TypeError, "derived_from"),
    ("remember-derived-unknown", _remember(derived_from=["ev_nope"]), ValueError, "derived_from"),
    ("remember-source", _remember(source=3), TypeError, "source"),
    ("remember-session", _remember(session_id=1), TypeError, "session_id"),
    ("remember-tool-call", _remember(tool_call_id=object()), TypeError, "tool_call_id"),
    # recall
    ("recall-None", _recall(query=None), TypeError, "query"),
    ("recall-list", _recall(query=["vim"]), TypeError, "query"),
    ("recall-as-of-str", _recall(as_of="2024-01-01"), TypeError, "as_of"),
    ("recall-as-of-naive", _recall(as_of=NAIVE), ValueError, "as_of"),
    ("recall-budget-str", _recall(token_budget="10"), TypeError, "token_budget"),
    ("recall-budget-negative", _recall(token_budget=-1), ValueError, "token_budget"),
    ("recall-budget-bool", _recall(token_budget=True), TypeError, "token_budget"),
    ("recall-budget-float", _recall(token_budget=10.0), TypeError, "token_budget"),
    ("recall-user-int", _recall(user_id=7), TypeError, "user_id"),
    ("recall-claims", _recall(include_claims="yes"), TypeError, "include_claims"),
    # facts / claims / history / episodes
    ("facts-user", lambda s: s.memory.facts(7), TypeError, "user_id"),
    ("facts-subject", lambda s: s.memory.facts("u1", subject=3), TypeError, "subject"),
    ("facts-relation", lambda s: s.memory.facts("u1", relation=[]), TypeError, "relation"),
    (
        "facts-history-flag",
        lambda s: s.memory.facts("u1", include_history="yes"),
        TypeError,
        "include_history",
    ),
    ("claims-user", lambda s: s.memory.claims(""), ValueError, "user_id"),
    ("history-user", lambda s: s.memory.history(None, "user", "prefers"), TypeError, "user_id"),
    ("history-subject", lambda s: s.memory.history("u1", 3, "prefers"), TypeError, "subject"),
    ("history-relation", lambda s: s.memory.history("u1", "user", None), TypeError, "relation"),
    ("episodes-kind", lambda s: s.memory.episodes("u1", kind="bogus"), ValueError, "kind"),
    # single facts
    ("fact-id", lambda s: s.memory.fact(3, user_id="u1"), TypeError, "fact_id"),
    ("confirm-id", lambda s: s.memory.confirm(3, user_id="u1"), TypeError, "fact_id"),
    ("confirm-id-None", lambda s: s.memory.confirm(None, user_id="u1"), TypeError, "fact_id"),
    (
        "confirm-user",
        lambda s: s.memory.confirm(s.fact_id, user_id=7),
        TypeError,
        "user_id",
    ),
    (
        "confirm-actor",
        lambda s: s.memory.confirm(s.fact_id, user_id="u1", actor="bogus"),
        ValueError,
        "actor",
    ),
    (
        "dispute-id",
        lambda s: s.memory.dispute(["x"], user_id="u1", reason="wrong"),
        TypeError,
        "fact_id",
    ),
    (
        "dispute-reason-type",
        lambda s: s.memory.dispute(s.fact_id, user_id="u1", reason=3),
        TypeError,
        "reason",
    ),
    (
        "dispute-reason-blank",
        lambda s: s.memory.dispute(s.fact_id, user_id="u1", reason="  "),
        ValueError,
        "reason",
    ),
    (
        "outcome-ok",
        lambda s: s.memory.record_outcome(s.fact_id, user_id="u1", ok="yes"),
        TypeError,
        "ok",
    ),
    # whole-memory operations
    ("maintain-user", lambda s: s.memory.maintain(None), TypeError, "user_id"),
    ("forget-user", lambda s: s.memory.forget(7), TypeError, "user_id"),
    ("export-path", lambda s: s.memory.export("u1", 3), TypeError, "path"),
    ("import-path-int", lambda s: s.memory.import_(3), TypeError, "path"),
    ("import-path-None", lambda s: s.memory.import_(None), TypeError, "path"),
    ("import-path-empty", lambda s: s.memory.import_(""), ValueError, "path"),
    (
        "import-restore",
        lambda s: s.memory.import_(s.export, restore="yes"),
        TypeError,
        "restore",
    ),
    (
        "import-user",
        lambda s: s.memory.import_(s.export, user_id=5),
        TypeError,
        "user_id",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "param"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_wrong_argument_is_refused_naming_it_and_writes_nothing(
    seeded: Seeded, call: Call, error: type[Exception], param: str
) -> None:
    store = seeded.memory.store
    head, events = store.head(), len(store.scan())
    with pytest.raises(error) as raised:
        call(seeded)
    if error is ValueError:
        assert not isinstance(raised.value, TypeError)
    message = str(raised.value)
    assert param in message, message
    assert "\n" not in message
    assert store.head() == head and len(store.scan()) == events, "a refused call wrote"


def test_the_async_twins_check_the_same_way(seeded: Seeded) -> None:
    store = seeded.memory.store
    head = store.head()
    with pytest.raises(TypeError, match="text_or_messages"):
        asyncio.run(seeded.memory.aremember(None, user_id="u1"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="at"):
        asyncio.run(seeded.memory.aremember("hi", user_id="u1", at="2024-01-01"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="token_budget"):
        asyncio.run(seeded.memory.arecall("vim", user_id="u1", token_budget="10"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="user_id"):
        asyncio.run(seeded.memory.arecall("vim", user_id=7))  # type: ignore[arg-type]
    assert store.head() == head


def test_right_arguments_in_other_spellings_still_work(seeded: Seeded, tmp_path: Path) -> None:
    """What the checks accept: numpy integers, tuples of ids, aware datetimes in any zone, str
    paths, message lists."""
    memory = seeded.memory
    (evidence,) = memory.store.read("u1", kinds=["memory.evidence"])
    at = datetime(2026, 1, 5, 12, 0, tzinfo=timezone(timedelta(hours=2)))  # 10:00 UTC
    report = memory.remember(
        [{"role": "user", "content": "I like tea."}],
        user_id="u1",
        at=at,
        derived_from=(evidence.id,),
        source="chat",
    )
    assert report.error is None
    budget: Any = np.int64(200)
    recall = memory.recall("vim", user_id="u1", token_budget=budget, as_of=at)
    assert "vim" in recall.text
    assert memory.export("u1", str(tmp_path / "again.jsonl")).exists()


CONSTRUCTION: list[tuple[str, dict[str, Any], str]] = [
    ("complete-spec", {"complete": "openai:gpt-4"}, "complete"),
    ("complete-int", {"complete": 3}, "complete"),
    ("embedder-spec", {"embedder": "hash"}, "embedder"),
    ("config-dict", {"config": {"audit": True}}, "config"),
    ("clock-function", {"clock": datetime.now}, "clock"),
    ("clock-datetime", {"clock": datetime(2026, 1, 1, tzinfo=UTC)}, "clock"),
    ("actor-int", {"actor": 3}, "actor"),
]


@pytest.mark.parametrize(
    ("kwargs", "param"), [c[1:] for c in CONSTRUCTION], ids=[c[0] for c in CONSTRUCTION]
)
def test_a_wrong_constructor_argument_is_a_type_error_and_opens_nothing(
    tmp_path: Path, kwargs: dict[str, Any], param: str
) -> None:
    target = tmp_path / "never.db"
    arguments: dict[str, Any] = {"embedder": HashEmbedder(), **kwargs}
    with pytest.raises(TypeError) as raised:
        Memory(target, **arguments)
    assert param in str(raised.value), str(raised.value)
    assert not target.exists()


def test_a_wrong_target_is_a_type_error(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="target"):
        Memory(3, embedder=HashEmbedder())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="target"):
        Memory("", embedder=HashEmbedder())


def test_the_complete_spec_message_says_how_to_get_a_callable(tmp_path: Path) -> None:
    with pytest.raises(TypeError) as raised:
        Memory(tmp_path / "m.db", complete="openai:gpt-4", embedder=HashEmbedder())  # type: ignore[arg-type]
    assert "extraction_complete_from_spec" in str(raised.value)


def test_complete_none_is_a_memory_that_only_reads(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", complete=None, embedder=HashEmbedder()) as memory:
        assert memory.recall("anything", user_id="u1").facts == ()
        head = memory.store.head()
        with pytest.raises(NoModel, match="complete"):
            memory.remember("I prefer vim.", user_id="u1")
        assert memory.store.head() == head


def test_unknown_fact_reads_plainly(seeded: Seeded) -> None:
    """A lookup error printed as written (a KeyError would quote its message)."""
    assert str(UnknownFact("no fact x")) == "no fact x"
    with pytest.raises(UnknownFact) as raised:
        seeded.memory.confirm("fa_missing", user_id="u1")
    assert isinstance(raised.value, LookupError) and not isinstance(raised.value, KeyError)
    assert str(raised.value) == "no fact 'fa_missing' in the memory of 'u1'"
    assert f"{raised.value}" == str(raised.value) and not str(raised.value).startswith("'")


def test_user_id_is_accepted_by_keyword_on_every_method() -> None:
    """SPEC shows some methods with ``user_id`` first and positional (``facts("u1")``), others
    with ``user_id=``; every method that takes one accepts the keyword form too."""
    import inspect

    from veil.memory import Memory

    takes = [
        name
        for name, method in inspect.getmembers(Memory, inspect.isfunction)
        if not name.startswith("_") and "user_id" in inspect.signature(method).parameters
    ]
    assert {"remember", "recall", "facts", "history", "export", "forget", "confirm"} <= set(takes)
    for name in takes:
        parameter = inspect.signature(getattr(Memory, name)).parameters["user_id"]
        assert parameter.kind in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        ), name


def test_user_id_by_keyword_works(seeded: Seeded) -> None:
    memory = seeded.memory
    by_position = memory.facts("u1")
    assert memory.facts(user_id="u1") == by_position
    assert memory.history(user_id="u1", subject="user", relation="prefers") == memory.history(
        "u1", "user", "prefers"
    )
