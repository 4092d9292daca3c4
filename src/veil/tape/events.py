"""Events: the only truth Veil stores.

An :class:`Event` is an immutable record ``(seq, id, scope, kind, at, recorded_at, actor,
payload, provenance)``. ``seq`` and ``recorded_at`` are assigned by the store when the event is
appended; everything else is decided by the writer. Events are never updated: a correction is
a new event. ``id`` makes appends idempotent — appending an event whose id is already on the
tape with the same content is a no-op, with different content an :class:`EventConflict`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeAlias

from veil.clock import ensure_utc, format_time

JSONValue: TypeAlias = "bool | int | float | str | list[JSONValue] | dict[str, JSONValue] | None"
JSONObject: TypeAlias = "dict[str, JSONValue]"

MAX_SCOPE_LENGTH = 256
MAX_KIND_LENGTH = 64
_KIND_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")
_CONTROL_OR_SPACE = re.compile(r"[\x00-\x20]")
"""What an event id may not contain (a character below 33)."""


class TapeError(Exception):
    """Base class for tape errors."""


class EventConflict(TapeError):
    """An event id already on the tape was appended again with different content."""


class InvalidEvent(TapeError, ValueError):
    """An event violates the tape's invariants (bad scope, kind, payload or time)."""


@dataclass(frozen=True)
class Event:
    """One immutable fact about what happened.

    ``at`` is when it happened in the world (the evidence time); ``recorded_at`` is when the
    tape learned about it. ``seq`` is ``None`` until the event is on the tape.
    """

    id: str
    scope: str
    kind: str
    at: datetime
    actor: str
    payload: JSONObject = field(default_factory=lambda: {})
    provenance: JSONObject = field(default_factory=lambda: {})
    seq: int | None = None
    recorded_at: datetime | None = None

    def digest(self) -> str:
        """Content hash over everything the writer decides (not ``seq``/``recorded_at``)."""
        return seal(self).digest


def canonical_json(value: JSONValue) -> str:
    """Deterministic JSON text: sorted keys, no whitespace, UTF-8 kept, NaN rejected."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def new_id(prefix: str = "ev") -> str:
    """A time-ordered, collision-resistant id: 48-bit milliseconds then 80 random bits."""
    millis = int(time.time() * 1000) & ((1 << 48) - 1)
    return f"{prefix}_{millis:012x}{os.urandom(10).hex()}"


def validate_kind(kind: str) -> str:
    """Kinds are dotted lower_snake names (``memory.fact``) of at most 64 characters."""
    if len(kind) > MAX_KIND_LENGTH or not _KIND_RE.match(kind):
        raise InvalidEvent(f"bad event kind {kind!r}: use dotted lower_snake names")
    return kind


def validate_scope(scope: str) -> str:
    """Scopes are opaque tenant keys (``user:alice``, ``team:backend``); never empty."""
    if not isinstance(scope, str) or not scope.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InvalidEvent("scope must be a non-empty string")
    if len(scope) > MAX_SCOPE_LENGTH:
        raise InvalidEvent(f"scope longer than {MAX_SCOPE_LENGTH} characters")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in scope):
        raise InvalidEvent("scope contains control characters")
    return scope


@dataclass(frozen=True)
class Sealed:
    """A validated event with its canonical JSON and digest, computed once per append."""

    event: Event
    payload_json: str
    provenance_json: str
    digest: str


def seal(event: Event) -> Sealed:
    """Validate ``event`` and serialise it once: its JSON and its content digest."""
    event = validate(event)
    try:
        payload_json = canonical_json(event.payload)
        provenance_json = canonical_json(event.provenance)
    except (TypeError, ValueError) as exc:
        raise InvalidEvent(f"payload/provenance must be JSON: {exc}") from exc
    body = "\x1f".join(
        (
            event.id,
            event.scope,
            event.kind,
            format_time(event.at),
            event.actor,
            payload_json,
            provenance_json,
        )
    )
    return Sealed(event, payload_json, provenance_json, hashlib.sha256(body.encode()).hexdigest())


def validate(event: Event) -> Event:
    """Check an event's envelope before it is appended; returns it with ``at`` normalised to
    UTC. (Payload serialisability is checked by :func:`seal`, the payload against its kind's
    declaration by :func:`veil.tape.kinds.check`.)"""
    validate_scope(event.scope)
    if not event.id or len(event.id) > 128 or _CONTROL_OR_SPACE.search(event.id):
        raise InvalidEvent(f"bad event id {event.id!r}")
    validate_kind(event.kind)
    if not event.actor:
        raise InvalidEvent("actor must be non-empty")
    try:
        at = ensure_utc(event.at)
    except ValueError as exc:
        raise InvalidEvent(str(exc)) from exc
    if at is event.at:
        return event
    return Event(
        id=event.id,
        scope=event.scope,
        kind=event.kind,
        at=at,
        actor=event.actor,
        payload=event.payload,
        provenance=event.provenance,
        seq=event.seq,
        recorded_at=event.recorded_at,
    )
