"""One codec per stored value: a frozen dataclass's field types drive its payload (the JSON an
event carries), its projection columns, its decoding from a payload or a row, and the check a
payload passes before it is appended.

A value written out by hand in four places (the dataclass, the payload dict, the table's
columns, the row decoder) drifts: a field added to one is forgotten in another. A
:class:`Codec` reads the dataclass once. Supported field types: ``str``, ``int``, ``float``,
``bool``, a ``Literal`` of strings or of integers, :data:`~veil.tape.events.JSONValue` (any
JSON) and :data:`~veil.tape.events.JSONObject`, a nested dataclass, ``tuple[X, ...]`` (a JSON
list) and ``dict[str, X]`` (a JSON object) of any of them, and any of them ``| None``.

Metadata on a field's type (``Annotated``) says more than Python's types can:
:data:`TimeText` is ISO-8601 text with an offset (a ``time`` column), :data:`DateText` an ISO
date, :data:`Ident` a non-empty string; a field annotated with :data:`SPARSE` is left out of
the payload while it equals its default (a key older payloads never had). A field may be stored
under another name (``renames``, e.g. ``id`` → ``item_id``) and a ``str`` field may be made a
``time`` column by name (``times``).

Two readings of the same payload:

- :meth:`Codec.decode` is lenient, the way a projection row or an event already on the tape
  needs it to be: a key missing from an older payload, or a ``None`` where the field is not
  optional, takes the field's default; keys the dataclass does not know are ignored.
- :meth:`Codec.problem` is strict, for what is about to be written: every field without a
  default is present and not null, every value has its field's type (integers within 64 bits,
  times and dates that parse, literals from their set), and — unless the codec keeps them
  (``extra="keep"``) — no key the dataclass does not declare.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Annotated, Any, Generic, Literal, TypeAlias, TypeVar, cast, get_args, get_origin

from veil.clock import parse_time
from veil.tape.events import JSONObject, JSONValue
from veil.tape.projection import Column, ColumnType

T = TypeVar("T")


class Marker:
    """Metadata on a field's type: ``Annotated[str, TIME]`` (each marker is one object)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name.upper()


TIME = Marker("time")
"""ISO-8601 text with an offset (``format_time`` writes it); stored in a ``time`` column."""
DATE = Marker("date")
"""An ISO date (``2026-01-05``)."""
ID = Marker("id")
"""A string that is not empty (nor only spaces)."""
SPARSE = Marker("sparse")
"""Left out of the payload while the field equals its default."""

TimeText: TypeAlias = Annotated[str, TIME]
DateText: TypeAlias = Annotated[str, DATE]
Ident: TypeAlias = Annotated[str, ID]

Extra = Literal["forbid", "keep"]
"""What a payload's keys that no field declares are: refused by :meth:`Codec.problem`, or
kept (stored as they are and ignored when decoding)."""

Kind = Literal["str", "int", "float", "bool", "json", "object", "map", "record", "seq"]
_SCALARS: dict[object, Kind] = {str: "str", int: "int", float: "float", bool: "bool"}
_COLUMN: dict[Kind, ColumnType] = {"str": "text", "int": "int", "float": "real", "bool": "bool"}
_INT64 = 2**63
_NONE = type(None)
_MISSING: Any = dataclasses.MISSING
_EMPTY: dict[Kind, object] = {"seq": (), "map": {}}
"""What a field without a default decodes to when an older payload lacks it (else None)."""


class _JsonShapes:
    value: JSONValue
    obj: JSONObject


_JSON_NAMES: dict[str, Any] = {"JSONValue": JSONValue, "JSONObject": JSONObject}
"""The JSON aliases are text until evaluated: a field's type may name them without its
module importing both."""
_HINTS = typing.get_type_hints(_JsonShapes, localns=_JSON_NAMES)
_JSON_VALUE, _JSON_OBJECT = _HINTS["value"], _HINTS["obj"]


class UnsupportedField(TypeError):
    """A dataclass field whose type the codec cannot store."""


@dataclass(frozen=True)
class ValueType:
    """How one JSON value of a field is encoded, decoded and checked."""

    kind: Kind
    optional: bool = False
    choices: tuple[object, ...] = ()
    """A ``Literal``'s values (empty: any value of the kind)."""
    check: Literal["", "time", "date", "id"] = ""
    item: ValueType | None = None
    """The element type of a ``seq``, the value type of a ``map``."""
    codec: Codec[Any] | None = None
    """The nested dataclass of a ``record``."""

    def encode(self, value: object) -> JSONValue:
        if value is None:
            return None
        match self.kind:
            case "seq":
                item = cast(ValueType, self.item)
                return [item.encode(v) for v in cast(Sequence[object], value)]
            case "map":
                item = cast(ValueType, self.item)
                return {
                    str(k): item.encode(v) for k, v in cast(Mapping[object, object], value).items()
                }
            case "record":
                return cast(Codec[Any], self.codec).payload(value)
            case _:
                return cast(JSONValue, value)

    def decode(self, value: object, default: object = None) -> object:
        if value is None:
            return None if self.optional else default
        match self.kind:
            case "str":
                return str(value)
            case "int":
                return int(cast(int, value))
            case "float":
                return float(cast(float, value))
            case "bool":
                return bool(value)
            case "seq":
                if not isinstance(value, (list, tuple)):
                    return default
                item = cast(ValueType, self.item)
                return tuple(item.decode(v) for v in cast(Sequence[object], value))
            case "map":
                if not isinstance(value, Mapping):
                    return default
                item = cast(ValueType, self.item)
                return {
                    str(k): item.decode(v) for k, v in cast(Mapping[object, object], value).items()
                }
            case "record":
                if not isinstance(value, Mapping):
                    return default
                return cast(Codec[Any], self.codec).decode(cast(Mapping[str, object], value))
            case _:
                return value

    def problem(self, value: object, where: str) -> str | None:
        """Why ``value`` (not ``None``) is not one of this type, or ``None``."""
        found = self.check_value(value)
        return None if found is None else f"{where}{found[0]}: {found[1]}"

    def check_value(self, value: object) -> Problem | None:
        """:meth:`problem` without the path built unless something is wrong: ``(path below
        this value, what is wrong)``."""
        return self.checker()(value)

    def checker(self) -> Callable[[object], Problem | None]:
        """The check of one value, compiled on first use."""
        checker = self.__dict__.get("_checker")
        if checker is None:
            checker = _checker(self)
            object.__setattr__(self, "_checker", checker)
        return checker

    def column(self) -> ColumnType:
        if self.kind == "str" and self.check == "time":
            return "time"
        return _COLUMN.get(self.kind, "json")


Problem: TypeAlias = tuple[str, str]
"""Where below a value (``.key``, ``[0]``) and what is wrong there."""


def _expected(what: str, value: object) -> Problem:
    text = repr(value)
    return ("", f"expected {what}, got {text if len(text) <= 80 else text[:80] + '…'}")


def _checker(t: ValueType) -> Callable[[object], Problem | None]:
    """The strict check of one value of type ``t`` (not ``None``), compiled once."""
    choices = frozenset(t.choices) if t.choices else None
    one_of = f"one of {', '.join(map(repr, t.choices))}"
    match t.kind:
        case "str":
            text = t.check
            if choices is None and not text:
                return lambda v: None if isinstance(v, str) else _expected("a string", v)

            def check_str(v: object) -> Problem | None:
                if not isinstance(v, str):
                    return _expected("a string", v)
                if choices is not None and v not in choices:
                    return _expected(one_of, v)
                return _text_problem(text, v) if text else None

            return check_str
        case "int":

            def check_int(v: object) -> Problem | None:
                if not isinstance(v, int) or isinstance(v, bool):
                    return _expected("an integer", v)
                if not -_INT64 <= v < _INT64:
                    return _expected("a 64-bit integer", v)
                if choices is not None and v not in choices:
                    return _expected(one_of, v)
                return None

            return check_int
        case "float":

            def check_float(v: object) -> Problem | None:
                if not isinstance(v, (int, float)) or isinstance(v, bool):
                    return _expected("a number", v)
                return None if math.isfinite(v) else _expected("a finite number", v)

            return check_float
        case "bool":
            return lambda v: None if isinstance(v, bool) else _expected("true or false", v)
        case "object":
            return lambda v: None if isinstance(v, Mapping) else _expected("an object", v)
        case "seq" | "map":
            item = cast(ValueType, t.item)
            is_map = t.kind == "map"
            each_check = item.checker()

            def check_items(v: object) -> Problem | None:
                if is_map:
                    if not isinstance(v, Mapping):
                        return _expected("an object", v)
                    pairs = cast(Mapping[object, object], v).items()
                elif not isinstance(v, (list, tuple)):
                    return _expected("a list", v)
                else:
                    pairs = enumerate(cast(Sequence[object], v))
                for key, each in pairs:
                    found = (
                        (None if item.optional else ("", "must not be null"))
                        if each is None
                        else each_check(each)
                    )
                    if found is not None:
                        return (f"[{key!r}]" if is_map else f"[{key}]") + found[0], found[1]
                return None

            return check_items
        case "record":
            return cast(Codec[Any], t.codec).check_payload
        case _:
            return lambda v: None


def _text_problem(check: str, value: str) -> Problem | None:
    if check == "id" and not value.strip():
        return ("", "must not be empty")
    if check == "time":
        try:
            parse_time(value)
        except (ValueError, OverflowError):
            return _expected("an ISO-8601 time with an offset", value)
    if check == "date":
        try:
            date.fromisoformat(value)
        except ValueError:
            return _expected("an ISO date", value)
    return None


@dataclass(frozen=True)
class FieldCodec:
    name: str
    """The dataclass field."""
    stored: str
    """Its name in payloads and rows."""
    type: ValueType
    default: object
    """The field's default; for a field without one (see :attr:`required`) an empty tuple or
    mapping for a list or map, else ``None``: what decoding a payload that lacks it gives."""
    required: bool
    """No default and not optional: present and not null in every payload written."""
    sparse: bool = False

    @property
    def optional(self) -> bool:
        return self.type.optional

    @property
    def time(self) -> bool:
        return self.type.check == "time"

    def encode(self, value: object) -> JSONValue:
        return self.type.encode(value)

    def decode(self, value: object) -> object:
        return self.type.decode(value, self.default)


class Codec(Generic[T]):
    """Payload ↔ row ↔ dataclass for one frozen dataclass ``cls``."""

    def __init__(
        self,
        cls: type[T],
        *,
        renames: Mapping[str, str] | None = None,
        times: frozenset[str] = frozenset(),
        keys: tuple[str, ...] = (),
        extra: Extra = "forbid",
        nested: Mapping[type, Codec[Any]] | None = None,
    ) -> None:
        """``keys``: stored names of the columns that are never null (a table's key).
        ``nested``: the codec of a nested dataclass, when it is not the default one (a nested
        dataclass without one gets a codec of its own, with this one's ``extra``)."""
        hints = typing.get_type_hints(cls, localns=_JSON_NAMES, include_extras=True)
        renames = renames or {}
        nested = dict(nested or {})
        fields: list[FieldCodec] = []
        for f in dataclasses.fields(cast(Any, cls)):
            markers: set[Marker] = set()
            type_ = _type_of(f.name, hints[f.name], markers, nested, extra)
            if f.name in times:
                type_ = dataclasses.replace(type_, check="time")
            default: object = f.default
            factory: Any = f.default_factory
            if factory is not _MISSING:
                default = factory()
            has_default = default is not _MISSING
            fields.append(
                FieldCodec(
                    f.name,
                    renames.get(f.name, f.name),
                    type_,
                    default if has_default else _EMPTY.get(type_.kind),
                    required=not has_default and not type_.optional,
                    sparse=SPARSE in markers and has_default,
                )
            )
        self.cls = cls
        self.fields: tuple[FieldCodec, ...] = tuple(fields)
        self.keys = keys
        self.extra: Extra = extra
        self._stored = frozenset(f.stored for f in fields)
        self._plan: tuple[tuple[str, bool, Callable[[object], Problem | None]], ...] | None = None

    def payload(self, value: T) -> JSONObject:
        """The JSON an event carries for ``value``."""
        out: JSONObject = {}
        for f in self.fields:
            item = getattr(value, f.name)
            if f.sparse and item == f.default:
                continue
            out[f.stored] = f.encode(item)
        return out

    def decode(self, data: Mapping[str, object]) -> T:
        """The value from a payload or a projection row (extra keys are ignored)."""
        return self.cls(**{f.name: f.decode(data.get(f.stored)) for f in self.fields})

    def decode_values(self, values: Sequence[object], offset: int = 0) -> T:
        """The value from a row read by position: field ``i`` at ``values[offset + i]`` (a
        table whose columns are :meth:`columns`, after ``scope`` at 0: ``offset=1``)."""
        return self.cls(**{f.name: f.decode(values[offset + i]) for i, f in enumerate(self.fields)})

    def positions(self, offset: int = 0) -> dict[str, int]:
        """Stored name → position in a row read by position (see :meth:`decode_values`)."""
        return {f.stored: offset + i for i, f in enumerate(self.fields)}

    def columns(self) -> tuple[Column, ...]:
        """The projection columns holding the value, in field order."""
        return tuple(
            Column(f.stored, f.type.column(), nullable=f.stored not in self.keys)
            for f in self.fields
        )

    def problem(self, data: object, where: str = "payload") -> str | None:
        """Why ``data`` is not a payload this codec's dataclass could have written (the first
        reason found, naming the key), or ``None``. See the module docstring."""
        found = self.check_payload(data)
        return None if found is None else f"{where}{found[0]}: {found[1]}"

    def check_payload(self, data: object) -> Problem | None:
        """:meth:`problem` as ``(path below the payload, what is wrong)``."""
        if not isinstance(data, dict) and not isinstance(data, Mapping):
            return _expected("an object", data)
        payload = cast(Mapping[str, object], data)
        get = payload.get
        plan = self._plan
        if plan is None:
            plan = self._plan = tuple((f.stored, f.required, f.type.checker()) for f in self.fields)
        for stored, required, checker in plan:
            value = get(stored)
            if value is None:
                if required:
                    return "." + stored, "missing" if stored not in payload else "null"
                continue
            found = checker(value)
            if found is not None:
                return "." + stored + found[0], found[1]
        if self.extra == "forbid" and not payload.keys() <= self._stored:
            unknown = ", ".join(sorted(map(repr, payload.keys() - self._stored)))
            return "", f"unknown keys {unknown} (declared: {', '.join(sorted(self._stored))})"
        return None


def _type_of(
    name: str,
    hint: object,
    markers: set[Marker],
    nested: dict[type, Codec[Any]],
    extra: Extra,
) -> ValueType:
    """The value type of a field's type hint; ``Annotated`` metadata is added to ``markers``."""
    if get_origin(hint) is Annotated:
        base, *meta = get_args(hint)
        markers.update(m for m in meta if isinstance(m, Marker))
        inner = _type_of(name, base, markers, nested, extra)
        check = next((m.name for m in meta if m in (TIME, DATE, ID)), "")
        return dataclasses.replace(inner, check=check) if check else inner
    args = get_args(hint)
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType) and _NONE in args and hint != _JSON_VALUE:
        rest = [a for a in args if a is not _NONE]
        if len(rest) == 1:
            return dataclasses.replace(
                _type_of(name, rest[0], markers, nested, extra), optional=True
            )
    if hint == _JSON_VALUE:
        return ValueType("json", optional=True)
    if hint == _JSON_OBJECT:
        return ValueType("object")
    if hint in _SCALARS:
        return ValueType(_SCALARS[hint])
    if origin is Literal:
        if all(isinstance(a, str) for a in args):
            return ValueType("str", choices=args)
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return ValueType("int", choices=args)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return ValueType("seq", item=_type_of(name, args[0], set(), nested, extra))
    if origin is dict and len(args) == 2 and args[0] is str:
        return ValueType("map", item=_type_of(name, args[1], set(), nested, extra))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        codec = nested.get(hint)
        if codec is None:
            codec = nested[hint] = Codec(hint, extra=extra, nested=nested)
        return ValueType("record", codec=codec)
    raise UnsupportedField(f"field {name!r}: cannot store a {hint!r}")


@dataclass(frozen=True)
class NoPayload:
    """The payload of an event that carries nothing but its envelope (``{}``)."""


__all__ = [
    "DATE",
    "ID",
    "SPARSE",
    "TIME",
    "Codec",
    "DateText",
    "Extra",
    "FieldCodec",
    "Ident",
    "Marker",
    "NoPayload",
    "TimeText",
    "UnsupportedField",
    "ValueType",
]
