"""What the proxy's in-process tests share: a conversation driven through
:meth:`veil.proxy.session.Conversations.prepare`, a request per step, on a real SQLite store and
a fake clock (``make``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from veil.clock import FakeClock
from veil.dialects import Api
from veil.proxy.reading import Reader, parse
from veil.proxy.session import Conversations, Prepared
from veil.tape.sqlite import SQLiteStore
from veil.testing import HashEmbedder


def raw(data: dict[str, Any]) -> bytes:
    """A body as the agents write it: compact JSON."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


class Run:
    """One conversation driven through :meth:`Conversations.prepare`, a request per step (the
    clock moves 20 s after each)."""

    def __init__(self, conversations: Conversations, clock: FakeClock, api: Api) -> None:
        self.conversations = conversations
        self.clock = clock
        self.api: Api = api
        self.reader = Reader()
        self.prepared: list[Prepared] = []
        self.sent: list[bytes] = []

    def send(self, data: dict[str, Any], *, overflow: bool = False) -> Prepared:
        payload = raw(data)
        request = parse(self.api, payload, {}, self.reader)
        prepared = self.conversations.prepare(request, payload, overflow=overflow)
        self.prepared.append(prepared)
        self.sent.append(prepared.body)
        self.clock.advance(seconds=20)
        return prepared


Make = Callable[..., Run]
"""``make(budget, *, api="anthropic", name=None)``: a conversation on a store of its own, or
on the store file ``name`` (a second process's conversations on the same store)."""


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make(tmp_path: Path, clock: FakeClock) -> Iterator[Make]:
    made: list[tuple[Conversations, SQLiteStore]] = []

    def factory(budget: int, *, api: Api = "anthropic", name: str | None = None) -> Run:
        path = tmp_path / (name or f"c{len(made)}.db")
        store = SQLiteStore(path, embedder=HashEmbedder(), clock=clock)
        conversations = Conversations(
            store, scope="project:t", root=None, window=None, clock=clock,
            embedder=HashEmbedder(), budget=budget,
        )  # fmt: skip
        made.append((conversations, store))
        return Run(conversations, clock, api)

    yield factory
    for conversations, store in made:
        conversations.close()
        store.close()
