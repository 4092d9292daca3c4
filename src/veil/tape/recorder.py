"""One place that builds a writer's events: scope, actor, provenance, ids and times.

A :class:`Recorder` stands for one writer (the context engine of a session, say): every event
it builds carries the same scope, actor and provenance, an id with the writer's prefix and the
time of its clock. Its kind is a declared :class:`~veil.tape.kinds.EventKind` and its payload a
value of that kind's dataclass, encoded by the kind's codec (the tape checks the result again
on append). ``record`` builds and appends in one call; ``event`` only builds, for
writers that buffer and append in batches. A writer that differs per call (another user, another
author) is another recorder: ``dataclasses.replace(recorder, actor=…)``.

Two things a writer may decide per event: the ``id``, when it was chosen before the event (to
name the event inside its own payload, or so that appending it again is a no-op), and ``at``,
when the event did not happen now (the time of the evidence it follows from, or one time shared
by a batch). Events copied from another tape (an import) are not built here: their id, time,
actor and provenance are the original writer's (see :mod:`veil.memory.portability`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypedDict, TypeVar, Unpack

from veil.clock import Clock
from veil.tape.events import Event, JSONValue, new_id
from veil.tape.kinds import EventKind
from veil.tape.store import Store

P = TypeVar("P")


class Stamp(TypedDict, total=False):
    """What a writer may decide per event (see the module docstring); the rest is its own."""

    id: str
    at: datetime


@dataclass(frozen=True)
class Recorder:
    store: Store
    scope: str
    actor: str
    clock: Clock
    id_prefix: str = "ev"
    provenance: Mapping[str, JSONValue] = field(default_factory=lambda: {})

    def event(self, kind: EventKind[P], payload: P, **stamp: Unpack[Stamp]) -> Event:
        """Build one event of ``kind`` carrying ``payload`` (reads neither the store nor, with
        ``at``, the clock)."""
        return Event(
            id=stamp.get("id") or new_id(self.id_prefix),
            scope=self.scope,
            kind=kind.name,
            at=stamp.get("at") or self.clock.now(),
            actor=self.actor,
            payload=kind.encode(payload),
            provenance=dict(self.provenance),
        )

    def record(self, kind: EventKind[P], payload: P, **stamp: Unpack[Stamp]) -> Event:
        """Build one event and append it (its own transaction); returns it as built."""
        event = self.event(kind, payload, **stamp)
        self.store.append([event])
        return event
