"""The tape's registry of event kinds: generic (no layer's names), checked on append."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import pytest

from veil.tape.codec import Ident
from veil.tape.events import Event, InvalidEvent
from veil.tape.kinds import (
    EventKind,
    KindConflict,
    catalogue,
    check,
    check_payload,
    register,
    registered,
    registry,
    unregister,
)
from veil.testing import FakeClock


@dataclass(frozen=True)
class Ping:
    target: Ident
    count: int = 1


@dataclass(frozen=True)
class Pong:
    target: Ident


PingKind = Literal["test.ping", "test.pong"]


@pytest.fixture
def kinds() -> Iterator[tuple[EventKind[Ping], EventKind[Pong]]]:
    ping, pong = EventKind("test.ping", Ping), EventKind("test.pong", Pong)
    catalogue(PingKind, ping, pong)
    yield ping, pong
    unregister("test.ping", "test.pong")


def test_a_catalogue_registers_exactly_its_literal(
    kinds: tuple[EventKind[Ping], EventKind[Pong]],
) -> None:
    ping, pong = kinds
    assert registered("test.ping") is ping and registry()["test.pong"] is pong
    with pytest.raises(ValueError, match=r"without a kind \['test.pong'\]"):
        catalogue(PingKind, ping)
    with pytest.raises(ValueError, match=r"not in the Literal \['test.other'\]"):
        catalogue(PingKind, ping, pong, EventKind("test.other", Pong))


def test_registering_again_is_a_no_op_another_payload_a_conflict(
    kinds: tuple[EventKind[Ping], EventKind[Pong]],
) -> None:
    register(EventKind("test.ping", Ping))  # the same declaration (a module imported again)
    with pytest.raises(KindConflict, match=r"already registered with payload .*Ping"):
        register(EventKind("test.ping", Pong))
    known = registered("test.ping")
    assert known is not None and known.payload_type is Ping


def test_check_names_the_event_the_kind_and_the_key(
    kinds: tuple[EventKind[Ping], EventKind[Pong]],
) -> None:
    now = FakeClock().now()
    check(Event("e1", "u1", "test.ping", now, "a", {"target": "x"}))
    with pytest.raises(InvalidEvent, match=r"event e2: unknown event kind 'test.nothing'"):
        check(Event("e2", "u1", "test.nothing", now, "a", {}))
    with pytest.raises(
        InvalidEvent, match=r"event e3: a test.ping payload does not decode: payload.count"
    ):
        check(Event("e3", "u1", "test.ping", now, "a", {"target": "x", "count": "2"}))
    with pytest.raises(InvalidEvent, match="unknown keys 'extra'"):
        check_payload("test.pong", {"target": "x", "extra": 1})


def test_a_kind_name_is_a_dotted_lower_snake_name() -> None:
    with pytest.raises(InvalidEvent, match="bad event kind"):
        EventKind("Not A Kind", Ping)


def test_decoding_what_is_stored_is_lenient(kinds: tuple[EventKind[Ping], EventKind[Pong]]) -> None:
    ping, _ = kinds
    assert ping.decode({"target": "x", "dropped_since": True}) == Ping("x")
    assert ping.decode({}) == Ping(None)  # type: ignore[arg-type]
