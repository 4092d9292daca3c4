"""Named migrations, recorded in a table and applied in a transaction (as simonw/llm does).

A migration is a named function over a cursor. The runner applies, in order, every migration
whose name is not yet in ``tape_migrations`` and records it in the same transaction, so a
crash leaves either the old schema or the new one. Names are never reused or reordered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Migration:
    name: str
    apply: Callable[[Any], None]


def pending(applied: set[str], migrations: Sequence[Migration]) -> list[Migration]:
    names = [m.name for m in migrations]
    if len(set(names)) != len(names):
        raise ValueError("duplicate migration names")
    return [m for m in migrations if m.name not in applied]
