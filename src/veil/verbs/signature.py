"""A verb's parameters read from its Python signature and docstring, and the one codec of its
arguments: JSON schema out, checked Python values in.

Contract: :func:`parameters_of` reads the keyword-only parameters of a verb function (the ones
after ``*``; the leading positional ones are what a surface binds, never arguments). Each
annotation is one of a small set — ``str``, ``int``, ``bool``, ``datetime`` (aware), ``list[str]``,
a ``Literal`` of strings — optionally ``| None`` and optionally ``Annotated`` with :class:`Range`
or :data:`NON_EMPTY`; anything else is a ``TypeError`` when the verb is defined, not when it is
called. Each parameter's description is its line in the docstring's ``Args:`` section; a
parameter without one is a ``TypeError`` too (every argument a model sees is described).

:meth:`Param.parse` turns one JSON-ish value into the Python value (an ISO-8601 string with an
offset into an aware ``datetime``, ``"5"`` is *not* an int) or raises :class:`ArgumentError`
naming the parameter and what was given. Annotations are evaluated one parameter at a time in
the verb module's globals, so the services and result types may stay under ``TYPE_CHECKING``
(building the CLI's parser imports no memory layer).
"""

from __future__ import annotations

import re
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

ParamKind = Literal["text", "integer", "flag", "time", "texts", "choice"]


class ArgumentError(ValueError):
    """An argument a caller gave a verb is missing, unknown or of the wrong kind; the message
    names the parameter (``query must be a string, got int 5``)."""


@dataclass(frozen=True)
class Range:
    """``Annotated[int, Range(0, 100)]``: the integer must lie in ``[low, high]``."""

    low: int | None = None
    high: int | None = None


@dataclass(frozen=True)
class NonEmpty:
    """``Annotated[str, NON_EMPTY]``: the text must hold something besides whitespace."""


NON_EMPTY = NonEmpty()


@dataclass(frozen=True)
class Param:
    """One argument of a verb, as every surface offers it."""

    name: str
    kind: ParamKind
    description: str
    required: bool
    default: Any = None
    optional: bool = False
    """``None`` is a valid value (``X | None``)."""
    choices: tuple[str, ...] = ()
    low: int | None = None
    high: int | None = None
    non_empty: bool = False

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema of this argument (with its description, default and bounds)."""
        schema: dict[str, Any]
        if self.kind == "text":
            schema = {"type": "string"}  # non-empty is checked by parse, not told in every request
        elif self.kind == "integer":
            schema = {"type": "integer"}
            if self.low is not None:
                schema["minimum"] = self.low
            if self.high is not None:
                schema["maximum"] = self.high
        elif self.kind == "flag":
            schema = {"type": "boolean"}
        elif self.kind == "time":
            schema = {"type": "string", "format": "date-time"}
        elif self.kind == "texts":
            schema = {"type": "array", "items": {"type": "string"}}
        else:
            schema = {"type": "string", "enum": list(self.choices)}
        schema["description"] = self.description
        if not self.required and self.default is not None:
            schema["default"] = self.default
        return schema

    def parse(self, value: object) -> object:
        """The Python value of ``value`` for this parameter, or :class:`ArgumentError`."""
        if value is None:
            if self.optional or not self.required:
                return None if self.optional else self.default
            raise ArgumentError(f"{self.name} is required")
        kind = self.kind
        if kind in ("text", "choice"):
            if not isinstance(value, str):
                raise ArgumentError(f"{self.name} must be a string, got {_given(value)}")
            if self.non_empty and not value.strip():
                raise ArgumentError(f"{self.name} must not be empty")
            if kind == "choice" and value not in self.choices:
                raise ArgumentError(
                    f"{self.name} must be one of {', '.join(self.choices)}, got {value!r}"
                )
            return value
        if kind == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ArgumentError(f"{self.name} must be a whole number, got {_given(value)}")
            if self.low is not None and value < self.low:
                raise ArgumentError(f"{self.name} must be at least {self.low}, got {value}")
            if self.high is not None and value > self.high:
                raise ArgumentError(f"{self.name} must be at most {self.high}, got {value}")
            return value
        if kind == "flag":
            if not isinstance(value, bool):
                raise ArgumentError(f"{self.name} must be true or false, got {_given(value)}")
            return value
        if kind == "texts":
            items = cast(list[object], value) if isinstance(value, list) else None
            if items is None or not all(isinstance(v, str) for v in items):
                shown = _given(cast(object, value))
                raise ArgumentError(f"{self.name} must be a list of strings, got {shown}")
            return list(cast(list[str], items))
        return _time(self.name, value)


def _time(name: str, value: object) -> datetime:
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        text = value.strip()
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ArgumentError(f"{name}: not an ISO-8601 time: {text!r}") from None
    else:
        raise ArgumentError(f"{name} must be an ISO-8601 time string, got {_given(value)}")
    if parsed.tzinfo is None:
        raise ArgumentError(f"{name}: time {value!s} needs a timezone offset (e.g. +00:00)")
    return parsed


def _given(value: object) -> str:
    shown = repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return f"{type(value).__name__} {shown}"


def parameters_of(fn: Callable[..., Any]) -> tuple[str, tuple[Param, ...]]:
    """``(description, params)`` of a verb function (see the module docstring). Read from the
    function's code object, not :mod:`inspect`, whose import alone would slow ``veil``'s
    start."""
    description, documented = _docstring(fn)
    namespace = vars(sys.modules[fn.__module__])
    code = fn.__code__
    names = code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
    defaults: dict[str, Any] = fn.__kwdefaults__ or {}
    params: list[Param] = []
    for name in names:
        if name not in documented:
            raise TypeError(f"{fn.__name__}: parameter {name} has no line under Args:")
        annotation: object = fn.__annotations__[name]
        if isinstance(annotation, str):
            annotation = eval(annotation, dict(namespace))  # the verb module's own annotation
        required = name not in defaults
        params.append(
            _param(
                fn.__name__,
                name,
                annotation,
                documented[name],
                required,
                defaults.get(name),
            )
        )
    return description, tuple(params)


def _param(
    verb: str, name: str, annotation: object, description: str, required: bool, default: object
) -> Param:
    low = high = None
    non_empty = False
    if typing.get_origin(annotation) is typing.Annotated:
        annotation, *marks = typing.get_args(annotation)
        for mark in marks:
            if isinstance(mark, Range):
                low, high = mark.low, mark.high
            elif isinstance(mark, NonEmpty):
                non_empty = True
    optional = False
    origin = typing.get_origin(annotation)
    if origin in (types.UnionType, typing.Union):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) != 1:
            raise TypeError(f"{verb}: parameter {name}: unions other than X | None are not offered")
        annotation, optional = members[0], True
        origin = typing.get_origin(annotation)
    kind: ParamKind
    choices: tuple[str, ...] = ()
    if annotation is str:
        kind = "text"
    elif annotation is bool:
        kind = "flag"
    elif annotation is int:
        kind = "integer"
    elif annotation is datetime:
        kind = "time"
    elif origin is list and typing.get_args(annotation) == (str,):
        kind = "texts"
    elif origin is Literal:
        kind, choices = "choice", tuple(str(a) for a in typing.get_args(annotation))
    else:
        raise TypeError(f"{verb}: parameter {name}: {annotation!r} is not an offered type")
    return Param(
        name, kind, description, required, default, optional, choices, low, high, non_empty
    )


_ARG_LINE = re.compile(r"^(\s+)(\w+):\s*(.*)$")


def _docstring(fn: Callable[..., Any]) -> tuple[str, Mapping[str, str]]:
    """The text before ``Args:`` (its paragraphs kept, each joined into one line) and each
    argument's description (continuation lines, indented deeper, joined)."""
    doc = textwrap.dedent(_after_first_line(fn.__doc__ or "")).strip()
    head, _, args = doc.partition("\nArgs:\n")
    paragraphs = [" ".join(p.split()) for p in head.strip().split("\n\n") if p.strip()]
    described: dict[str, str] = {}
    current: str | None = None
    indent: int | None = None
    for line in args.splitlines():
        if not line.strip():
            continue
        match = _ARG_LINE.match(line)
        if match and (indent is None or len(match.group(1)) == indent):
            indent = len(match.group(1))
            name = str(match.group(2))
            described[name] = match.group(3).strip()
            current = name
        elif current is not None:
            described[current] += " " + line.strip()
    return "\n\n".join(paragraphs), described


def _after_first_line(doc: str) -> str:
    """A docstring with its first line (which carries no indentation) moved out of the way of
    :func:`textwrap.dedent`, then put back."""
    first, _, rest = doc.partition("\n")
    return first.strip() + "\n" + textwrap.dedent(rest)


def object_schema(params: tuple[Param, ...]) -> dict[str, Any]:
    """The JSON schema of a whole call: an object with these properties, no others."""
    return {
        "type": "object",
        "properties": {p.name: p.json_schema() for p in params},
        "required": [p.name for p in params if p.required],
        "additionalProperties": False,
    }


def parse_arguments(params: tuple[Param, ...], arguments: Mapping[str, object]) -> dict[str, Any]:
    """Every parameter's Python value from ``arguments`` (defaults for those left out);
    :class:`ArgumentError` for an unknown name or a bad value."""
    known = {p.name for p in params}
    unknown = sorted(set(arguments) - known)
    if unknown:
        offered = ", ".join(sorted(known)) or "none"
        raise ArgumentError(f"unknown argument {unknown[0]!r} (the arguments are: {offered})")
    return {p.name: p.parse(arguments.get(p.name)) for p in params}


__all__ = [
    "NON_EMPTY",
    "ArgumentError",
    "NonEmpty",
    "Param",
    "ParamKind",
    "Range",
    "object_schema",
    "parameters_of",
    "parse_arguments",
]
