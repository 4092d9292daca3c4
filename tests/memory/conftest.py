from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import fresh_pg_database
from veil.memory import Memory, MemoryConfig
from veil.testing import FakeClock, HashEmbedder, ScriptedModel

MakeMemory = Callable[..., Memory]


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_memory(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, clock: FakeClock
) -> Iterator[MakeMemory]:
    """``make_memory(responses, **config)``: a Memory on the parametrised backend driven by a
    ScriptedModel; the model is reachable as ``memory.complete``."""
    opened: list[Memory] = []
    cleanups: list[Iterator[str]] = []
    target: str | None = None

    def make(responses: list[Any] | None = None, **config: Any) -> Memory:
        nonlocal target
        if target is None:
            if backend == "sqlite":
                target = str(tmp_path / "memory.db")
            else:
                gen = fresh_pg_database(request.getfixturevalue("pg_server_dsn"))
                target = next(gen)
                cleanups.append(gen)
        memory = Memory(
            target,
            complete=ScriptedModel(responses or []),
            embedder=HashEmbedder(),
            config=MemoryConfig(**config),
            clock=clock,
        )
        opened.append(memory)
        return memory

    yield make
    for memory in opened:
        memory.close()
    for gen in cleanups:
        for _ in gen:
            pass


def fact(
    subject: str,
    relation: str,
    obj: str,
    statement: str | None = None,
    *,
    claimant: str = "user",
    volatility: str | None = "durable",
    supersedes: str | None = None,
) -> dict[str, Any]:
    return {
        "subject": subject,
        "relation": relation,
        "object": obj,
        "statement": statement or f"{subject} {relation} {obj}.",
        "volatility": volatility,
        "claimant": claimant,
        "supersedes": supersedes,
    }


def extraction(
    *facts: dict[str, Any], episodes: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {"facts": list(facts), "episodes": episodes or []}
