"""One place that builds a writer's events: scope, actor, provenance, ids and times.

A :class:`Recorder` stands for one writer (the context engine of a session, say): every event
it builds carries the same scope, actor and provenance, an id with the writer's prefix and the
time of its clock. ``record`` builds and appends in one call; ``event`` only builds, for
writers that buffer and append in batches.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from veil.clock import Clock
from veil.tape.events import Event, JSONValue, new_id
from veil.tape.store import Store


@dataclass(frozen=True)
class Recorder:
    store: Store
    scope: str
    actor: str
    clock: Clock
    id_prefix: str = "ev"
    provenance: Mapping[str, JSONValue] = field(default_factory=lambda: {})

    def event(self, kind: str, payload: Mapping[str, JSONValue]) -> Event:
        return Event(
            id=new_id(self.id_prefix),
            scope=self.scope,
            kind=kind,
            at=self.clock.now(),
            actor=self.actor,
            payload=dict(payload),
            provenance=dict(self.provenance),
        )

    def record(self, kind: str, payload: Mapping[str, JSONValue]) -> Event:
        """Build one event and append it (its own transaction); returns it as built."""
        event = self.event(kind, payload)
        self.store.append([event])
        return event
