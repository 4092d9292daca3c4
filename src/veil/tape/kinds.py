"""Event kinds: the catalogue every append is checked against.

A layer declares the kinds it writes in its events module: a ``Literal`` of their names, one
frozen payload dataclass per kind, and an :class:`EventKind` pairing each name with its
dataclass through a :class:`~veil.tape.codec.Codec` (the one codec between the value and the
JSON payload). :func:`catalogue` registers them when that module is imported, checking that the
kinds are exactly the ``Literal``'s names; every module that appends events of a kind imports
the module that declares it (to build them), so every process that appends has registered what
it appends. The tape itself knows no layer's names: the registry is a plain mapping from a name
to its :class:`EventKind`, filled by whoever declares kinds.

Validation is on append (:func:`check`, called by every store's ``append`` after redaction): an
event of a kind no one registered in this process, or whose payload its kind's codec refuses
(:meth:`~veil.tape.codec.Codec.problem`: a field missing or of another type, a key the
dataclass does not declare unless the kind keeps extra keys), is an
:class:`~veil.tape.events.InvalidEvent` naming the event, the kind and the key at fault, and
nothing of its batch is written. Reading never validates: events already on the tape are
returned as they were stored (older payloads with missing optional keys or keys since dropped
included), and :meth:`EventKind.decode` reads them leniently.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Generic, TypeVar, get_args

from veil.tape.codec import Codec, Extra
from veil.tape.events import Event, InvalidEvent, JSONObject, TapeError, validate_kind

P = TypeVar("P")


class KindConflict(TapeError, ValueError):
    """Another payload was declared under a name already registered."""


class EventKind(Generic[P]):
    """A kind of event: its name and its payload's frozen dataclass, with their codec.

    ``extra="keep"``: payloads may carry keys the dataclass does not declare (they are stored
    as they are); only for kinds whose stored events need it (an import copies events written
    by earlier versions). ``nested``: codecs of nested dataclasses that are not the default
    ones (a renamed key, a time column).

    Builders pass a value of the dataclass to :meth:`~veil.tape.recorder.Recorder.event`;
    readers may :meth:`decode` a stored payload back into one."""

    __slots__ = ("_codec", "_extra", "_nested", "_payload", "name")

    def __init__(
        self,
        name: str,
        payload: type[P],
        *,
        extra: Extra = "forbid",
        nested: Mapping[type, Codec[Any]] | None = None,
        codec: Codec[P] | None = None,
    ) -> None:
        """``codec``: the value's codec when it has one already (its ``extra`` applies).
        Otherwise the codec is read from the dataclass on first use, so declaring kinds costs
        an importing process nothing until it writes or reads one."""
        self.name: str = validate_kind(name)
        if codec is not None and codec.cls is not payload:
            raise TypeError(f"{name}: a codec of {codec.cls.__name__}, not {payload.__name__}")
        self._payload = payload
        self._extra: Extra = codec.extra if codec is not None else extra
        self._nested = nested
        self._codec: Codec[P] | None = codec

    @property
    def payload_type(self) -> type[P]:
        return self._payload

    @property
    def extra(self) -> Extra:
        return self._extra

    @property
    def codec(self) -> Codec[P]:
        """The codec between the payload dataclass and the JSON (built on first use)."""
        codec = self._codec
        if codec is None:
            codec = self._codec = Codec(self._payload, extra=self._extra, nested=self._nested)
        return codec

    def encode(self, value: P) -> JSONObject:
        """The JSON payload of an event of this kind carrying ``value``."""
        if not isinstance(value, self._payload):
            raise TypeError(
                f"a {self.name} event carries a {self._payload.__name__}, "
                f"not a {type(value).__name__}"
            )
        return self.codec.payload(value)

    def decode(self, payload: Mapping[str, object]) -> P:
        """The value an event of this kind carries, read leniently (an older payload's
        missing keys take their defaults; keys not declared are ignored)."""
        return self.codec.decode(payload)

    def problem(self, payload: object) -> str | None:
        """Why ``payload`` could not have been written for this kind, or ``None``."""
        return self.codec.problem(payload)

    def __repr__(self) -> str:
        return f"EventKind({self.name!r}, {self._payload.__qualname__})"


_KINDS: dict[str, EventKind[Any]] = {}
_LOCK = threading.Lock()


def _declaration(kind: EventKind[Any]) -> tuple[str, str, str]:
    cls = kind.payload_type
    return (cls.__module__, cls.__qualname__, kind.extra)


def register(*kinds: EventKind[Any]) -> None:
    """Add ``kinds`` to this process's registry. Registering a kind again (the same payload
    dataclass, as a re-imported module declares it) is a no-op; another payload under a
    registered name is a :class:`KindConflict`, and nothing of this call is registered."""
    with _LOCK:
        for kind in kinds:
            known = _KINDS.get(kind.name)
            if known is not None and _declaration(known) != _declaration(kind):
                raise KindConflict(
                    f"event kind {kind.name!r} is already registered with payload "
                    f"{known.payload_type.__module__}.{known.payload_type.__qualname__}"
                )
        for kind in kinds:
            _KINDS[kind.name] = kind


def catalogue(names: object, *kinds: EventKind[Any]) -> tuple[EventKind[Any], ...]:
    """Register one layer's ``kinds``, which must be exactly the names of the ``Literal``
    ``names`` (each once); returns them. A layer's events module calls it at import."""
    declared = sorted(str(n) for n in get_args(names))
    given = sorted(k.name for k in kinds)
    if not declared or declared != given:
        missing = sorted(set(declared) - set(given))
        undeclared = sorted(set(given) - set(declared))
        raise ValueError(
            f"the kinds do not match their Literal: without a kind {missing}, "
            f"not in the Literal {undeclared}, given {given}"
        )
    register(*kinds)
    return kinds


def unregister(*names: str) -> None:
    """Forget the kinds ``names`` (for tests that declare kinds of their own)."""
    with _LOCK:
        for name in names:
            _KINDS.pop(name, None)


def registered(name: str) -> EventKind[Any] | None:
    """The kind registered under ``name`` in this process, if any."""
    return _KINDS.get(name)


def registry() -> dict[str, EventKind[Any]]:
    """Every kind registered in this process, by name (a copy, sorted by name)."""
    with _LOCK:
        return dict(sorted(_KINDS.items()))


def check_payload(kind: str, payload: object) -> None:
    """Raise :class:`InvalidEvent` unless ``kind`` is registered and ``payload`` is one its
    codec could have written (see the module docstring)."""
    known = _KINDS.get(kind)
    if known is None:
        raise InvalidEvent(
            f"unknown event kind {kind!r}: no kind of that name is registered in this process "
            "(declare it with veil.tape.kinds.EventKind and register it)"
        )
    problem = known.problem(payload)
    if problem is not None:
        raise InvalidEvent(f"a {kind} payload does not decode: {problem}")


def check(event: Event) -> None:
    """:func:`check_payload` for one event about to be appended; the error names it."""
    try:
        check_payload(event.kind, event.payload)
    except InvalidEvent as exc:
        raise InvalidEvent(f"event {event.id}: {exc}") from None


__all__ = [
    "EventKind",
    "KindConflict",
    "catalogue",
    "check",
    "check_payload",
    "register",
    "registered",
    "registry",
    "unregister",
]
