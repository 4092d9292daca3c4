"""One codec per stored value: a frozen dataclass's field types drive its payload (the JSON an
event carries), its projection columns and its decoding from a payload or a row.

A value written out by hand in four places (the dataclass, the payload dict, the table's
columns, the row decoder) drifts: a field added to one is forgotten in another. A
:class:`Codec` reads the dataclass once. Supported field types: ``str``, ``int``, ``float``,
``bool``, a ``Literal`` of strings, ``tuple[str, ...]`` (a JSON list), and any of them
``| None``. A field may be stored under another name (``renames``, e.g. ``id`` → ``item_id``)
and a ``str`` field may be a ``time`` column (``times``).

Decoding is lenient the way a projection row needs it to be: a key missing from an older
payload, or a ``None`` where the field is not optional, takes the field's default.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, cast, get_args, get_origin

from veil.tape.events import JSONValue
from veil.tape.projection import Column, ColumnType

T = TypeVar("T")

Kind = Literal["str", "int", "float", "bool", "strs"]
_SCALARS: dict[object, Kind] = {str: "str", int: "int", float: "float", bool: "bool"}
_COLUMN: dict[Kind, ColumnType] = {
    "str": "text",
    "int": "int",
    "float": "real",
    "bool": "bool",
    "strs": "json",
}


class UnsupportedField(TypeError):
    """A dataclass field whose type the codec cannot store."""


@dataclass(frozen=True)
class FieldCodec:
    name: str
    """The dataclass field."""
    stored: str
    """Its name in payloads and rows."""
    kind: Kind
    optional: bool
    default: object
    time: bool = False

    def encode(self, value: object) -> JSONValue:
        if value is None:
            return None
        if self.kind == "strs":
            return [str(v) for v in cast(tuple[object, ...], value)]
        return cast(JSONValue, value)

    def decode(self, value: object) -> object:
        if value is None:
            return None if self.optional else self.default
        match self.kind:
            case "str":
                return str(value)
            case "int":
                return int(cast(int, value))
            case "float":
                return float(cast(float, value))
            case "bool":
                return bool(value)
            case "strs":
                return tuple(str(v) for v in cast(list[object], value))


def _kind_of(name: str, hint: object) -> tuple[Kind, bool]:
    args = get_args(hint)
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _kind_of(name, rest[0])[0], True
    if hint in _SCALARS:
        return _SCALARS[hint], False
    if origin is Literal and all(isinstance(a, str) for a in args):
        return "str", False
    if origin is tuple and args in ((str, ...),):
        return "strs", False
    raise UnsupportedField(f"field {name!r}: cannot store a {hint!r}")


class Codec(Generic[T]):
    """Payload ↔ row ↔ dataclass for one frozen dataclass ``cls``."""

    def __init__(
        self,
        cls: type[T],
        *,
        renames: Mapping[str, str] | None = None,
        times: frozenset[str] = frozenset(),
        keys: tuple[str, ...] = (),
    ) -> None:
        """``keys``: stored names of the columns that are never null (a table's key)."""
        hints = typing.get_type_hints(cls)
        renames = renames or {}
        fields: list[FieldCodec] = []
        for f in dataclasses.fields(cast(Any, cls)):
            kind, optional = _kind_of(f.name, hints[f.name])
            default: object = f.default
            if f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            if default is dataclasses.MISSING:
                default = None
            fields.append(
                FieldCodec(
                    f.name, renames.get(f.name, f.name), kind, optional, default, f.name in times
                )
            )
        self.cls = cls
        self.fields: tuple[FieldCodec, ...] = tuple(fields)
        self.keys = keys

    def payload(self, value: T) -> dict[str, JSONValue]:
        """The JSON an event carries for ``value``."""
        return {f.stored: f.encode(getattr(value, f.name)) for f in self.fields}

    def decode(self, data: Mapping[str, object]) -> T:
        """The value from a payload or a projection row (extra keys are ignored)."""
        return self.cls(**{f.name: f.decode(data.get(f.stored)) for f in self.fields})

    def columns(self) -> tuple[Column, ...]:
        """The projection columns holding the value, in field order."""
        return tuple(
            Column(
                f.stored, "time" if f.time else _COLUMN[f.kind], nullable=f.stored not in self.keys
            )
            for f in self.fields
        )
