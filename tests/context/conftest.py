from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from veil.context import ContextConfig, ContextEngine
from veil.tape.sqlite import SQLiteStore
from veil.testing import FakeClock, HashEmbedder

MakeEngine = Callable[..., ContextEngine]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_engine(tmp_path: Path, clock: FakeClock) -> Iterator[MakeEngine]:
    stores: list[SQLiteStore] = []

    def make(session: str = "s1", **config: Any) -> ContextEngine:
        store = SQLiteStore(
            tmp_path / "context.db", embedder=HashEmbedder(), clock=clock, synchronous="normal"
        )
        stores.append(store)
        return ContextEngine(
            store,
            session_id=session,
            scope="project:test",
            config=ContextConfig(**config),
            embedder=HashEmbedder(),
            clock=clock,
            project_root=tmp_path,
        )

    yield make
    for store in stores:
        store.close()
