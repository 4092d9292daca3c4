"""Checks of the arguments of :class:`veil.memory.Memory`'s public methods (SPEC 10).

Contract: a wrong type raises :class:`TypeError`, a bad value :class:`ValueError`, and every
message names the parameter and says what was given. Each function checks one kind of
parameter and returns the value in the form the memory uses; the ``*_args`` functions check a
whole call and are shared by a method and its async twin, so every parameter is checked once,
before a lock is taken or anything is written. No I/O and no store; the one call made on an
argument is a clock's ``now()``, once, to see that it returns an aware datetime.

Times are :class:`~datetime.datetime` objects with a timezone, never strings: a string such
as ``"2024-01-01"`` has no offset and no single reading, so it is a ``TypeError`` that says how
to build the datetime (``datetime.fromisoformat(...)``) instead of a guess.
"""

from __future__ import annotations

import inspect
import operator
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, cast

from veil.clock import Clock, ensure_utc
from veil.embed.protocol import Embedder
from veil.memory.config import MemoryConfig
from veil.memory.model import AUTHORS, EPISODE_KINDS, Author, EpisodeKind
from veil.memory.model_call import Complete
from veil.memory.writing import ROLE_AUTHORS
from veil.tape.events import MAX_SCOPE_LENGTH
from veil.tape.store import Store

Evidence = str | tuple[Mapping[str, Any], ...]
"""What ``remember`` records: one text, or chat messages ``{"role", "content"}``."""


def given(value: object) -> str:
    """How a message shows a refused value: its type, and a short repr for plain values."""
    if value is None:
        return "None"
    if isinstance(value, str | bytes | int | float | date):
        shown = repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return f"{type(value).__name__} {shown}"
    return type(value).__name__


def text(value: object, name: str) -> str:
    """A required ``str`` (may be empty: callers that need text check that themselves)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {given(value)}")
    return value


def optional_text(value: object, name: str) -> str | None:
    return None if value is None else text(value, name)


def scope(value: object, name: str = "user_id") -> str:
    """A scope (tenant key such as ``user:alice``): a non-empty str without control characters."""
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be a str naming whose memory this is (e.g. 'user:alice'), "
            f"got {given(value)}"
        )
    if not value.strip():
        raise ValueError(f"{name} must not be empty or blank")
    if len(value) > MAX_SCOPE_LENGTH:
        raise ValueError(f"{name} is longer than {MAX_SCOPE_LENGTH} characters")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValueError(f"{name} contains control characters")
    return value


def optional_scope(value: object, name: str = "user_id") -> str | None:
    return None if value is None else scope(value, name)


def flag(value: object, name: str) -> bool:
    """A ``bool`` — not ``0``/``1`` or ``"yes"``, which are usually a positional slip."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {given(value)}")
    return value


def count(value: object, name: str) -> int:
    """A non-negative integer (``bool`` and ``float`` are refused; numpy integers pass)."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{name} must be an int, got {given(value)}")
    number = operator.index(cast(Any, value))
    if number < 0:
        raise ValueError(f"{name} must be >= 0, got {number}")
    return number


def moment(value: object, name: str) -> datetime | None:
    """``None`` or a timezone-aware datetime, returned in UTC (see the module docstring)."""
    if value is None:
        return None
    if isinstance(value, str):
        raise TypeError(
            f"{name} must be a timezone-aware datetime, got {given(value)}; parse it first, "
            "e.g. datetime.fromisoformat('2024-01-01T00:00:00+00:00')"
        )
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a timezone-aware datetime, got {given(value)}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"{name} is a naive datetime ({value.isoformat()}); give it a timezone, "
            "e.g. .replace(tzinfo=datetime.timezone.utc)"
        )
    return ensure_utc(value)


def authored_by(value: object, name: str = "author") -> Author:
    """An author of evidence (or the ``actor`` of a confirm/dispute): one of :data:`AUTHORS`."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {', '.join(AUTHORS)}, got {given(value)}")
    if value not in AUTHORS:
        raise ValueError(f"{name} must be one of {', '.join(AUTHORS)}, got {value!r}")
    return value


def episode_kind(value: object, name: str = "kind") -> EpisodeKind | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {', '.join(EPISODE_KINDS)}, got {given(value)}")
    if value not in EPISODE_KINDS:
        raise ValueError(f"{name} must be one of {', '.join(EPISODE_KINDS)}, got {value!r}")
    return value


def event_ids(value: object, name: str = "derived_from") -> tuple[str, ...]:
    """``None`` or a collection of event ids (a lone ``str`` is refused, not split into letters)."""
    if value is None:
        return ()
    if isinstance(value, str | bytes | bytearray):
        raise TypeError(
            f"{name} must be a list of evidence ids, got {given(value)}; wrap a single id in a list"
        )
    if isinstance(value, Mapping) or not isinstance(value, Collection):
        kind: str = type(cast(object, value)).__name__
        raise TypeError(f"{name} must be a list of evidence ids, got {kind}")
    ids: list[str] = []
    for i, item in enumerate(cast(Collection[object], value)):
        if not isinstance(item, str):
            raise TypeError(f"{name}[{i}] must be an evidence id (str), got {given(item)}")
        if not item.strip():
            raise ValueError(f"{name}[{i}] is an empty id")
        ids.append(item)
    return tuple(ids)


def evidence(value: object, name: str = "text_or_messages") -> Evidence:
    """A text, or a non-empty sequence of ``{"role", "content"}`` messages whose roles are
    ``user``/``assistant``/``system``/``tool`` and whose contents are str."""
    if isinstance(value, str):
        return value
    what = "a str, or a list of {'role', 'content'} messages"
    if isinstance(value, bytes | bytearray):
        raise TypeError(f"{name} must be {what}, got {given(value)}; decode the bytes first")
    if isinstance(value, Mapping):
        raise TypeError(f"{name} must be {what}, got one mapping; wrap the message in a list")
    if not isinstance(value, Sequence):
        raise TypeError(f"{name} must be {what}, got {given(value)}")
    messages: list[Mapping[str, Any]] = []
    for i, item in enumerate(cast(Sequence[object], value)):
        if not isinstance(item, Mapping):
            raise TypeError(f"{name}[{i}] must be a mapping (role, content), got {given(item)}")
        message = cast(Mapping[str, Any], item)
        role, content = message.get("role"), message.get("content")
        if role not in ROLE_AUTHORS:
            raise ValueError(
                f"{name}[{i}]['role'] must be one of {', '.join(ROLE_AUTHORS)}, got {role!r}"
            )
        if not isinstance(content, str):
            raise TypeError(f"{name}[{i}]['content'] must be a str, got {given(content)}")
        messages.append(message)
    if not messages:
        raise ValueError(f"{name} is an empty list of messages: nothing to remember")
    return tuple(messages)


def path(value: object, name: str = "path") -> Path:
    if isinstance(value, Path):
        return value
    if isinstance(value, str):
        if not value.strip():
            raise ValueError(f"{name} must not be empty")
        return Path(value)
    if isinstance(value, os.PathLike):
        return Path(cast(os.PathLike[str], value))
    raise TypeError(f"{name} must be a str or pathlib.Path, got {given(value)}")


def _has(value: object, *names: str) -> bool:
    """Whether ``value`` has every attribute, looked up statically: a property such as an
    embedder's ``name`` may load model weights, which a type check must not do."""
    missing = object()
    return all(inspect.getattr_static(value, n, missing) is not missing for n in names)


def _check_clock(clock: object) -> None:
    """A clock is whatever has a ``now()`` returning an aware datetime; ``now()`` is called
    once to see that (``datetime`` itself has a ``now`` that returns naive times)."""
    now = getattr(clock, "now", None) if _has(clock, "now") else None
    if not callable(now):
        raise TypeError(f"clock must be a Clock (an object with now()) or None, got {given(clock)}")
    value: object = now()
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise TypeError(
            f"clock must be a Clock whose now() returns a timezone-aware datetime; "
            f"{type(clock).__name__}.now() returned {given(value)}"
        )


# ---- whole calls -----------------------------------------------------------------------


@dataclass(frozen=True)
class Construction:
    """The checked arguments of ``Memory(...)``."""

    target: str | Path | Store
    complete: Complete | None
    embedder: Embedder | None
    config: MemoryConfig
    clock: Clock | None
    actor: str


def construction(
    target: object, complete: object, embedder: object, config: object, clock: object, actor: object
) -> Construction:
    """Checked before anything is opened, so a refused ``Memory(...)`` creates no file."""
    if isinstance(target, str | Path):
        if isinstance(target, str) and not target.strip():
            raise ValueError("target must be a path, sqlite:///… or postgresql://…, got ''")
        store_target: str | Path | Store = target
    elif _has(target, "register", "append", "fetch", "read"):
        store_target = cast(Store, target)
    else:
        raise TypeError(
            f"target must be a path, a sqlite:///… or postgresql://… URL, or a Store, "
            f"got {given(target)}"
        )
    if complete is not None and not callable(complete):
        raise TypeError(
            "complete must be a callable complete(messages, *, json_schema=None) -> str, or "
            f"None for a memory that only reads; got {given(complete)}. For a provider:model "
            "spec use veil.llm.registry.extraction_complete_from_spec(spec)"
        )
    if embedder is not None and not _has(embedder, "name", "dim", "embed"):
        raise TypeError(
            "embedder must be an Embedder (name, dim, embed(texts)) or None for the default, "
            f"got {given(embedder)}; for a spec such as 'hash' use "
            "veil.embed.embedder_from_spec(spec)"
        )
    if config is not None and not isinstance(config, MemoryConfig):
        raise TypeError(f"config must be a MemoryConfig or None, got {given(config)}")
    if clock is not None:
        _check_clock(clock)
    name = text(actor, "actor")
    if not name.strip():
        raise ValueError("actor must not be empty")
    return Construction(
        target=store_target,
        complete=cast(Complete | None, complete),
        embedder=cast(Embedder | None, embedder),
        config=config or MemoryConfig(),
        clock=cast(Clock | None, clock),
        actor=name,
    )


@dataclass(frozen=True)
class RememberArgs:
    """The checked arguments of ``remember`` / ``aremember``."""

    evidence: Evidence
    user_id: str
    author: Author
    at: datetime | None
    derived_from: tuple[str, ...]
    source: str | None
    session_id: str | None
    tool_call_id: str | None


def remember_args(
    text_or_messages: object,
    *,
    user_id: object,
    author: object,
    at: object,
    derived_from: object,
    source: object,
    session_id: object,
    tool_call_id: object,
) -> RememberArgs:
    return RememberArgs(
        evidence=evidence(text_or_messages),
        user_id=scope(user_id),
        author=authored_by(author),
        at=moment(at, "at"),
        derived_from=event_ids(derived_from),
        source=optional_text(source, "source"),
        session_id=optional_text(session_id, "session_id"),
        tool_call_id=optional_text(tool_call_id, "tool_call_id"),
    )


@dataclass(frozen=True)
class RecallArgs:
    """The checked arguments of ``recall`` / ``arecall``."""

    query: str
    user_id: str
    token_budget: int
    as_of: datetime | None
    include_claims: bool


def recall_args(
    query: object, *, user_id: object, token_budget: object, as_of: object, include_claims: object
) -> RecallArgs:
    return RecallArgs(
        query=text(query, "query"),
        user_id=scope(user_id),
        token_budget=count(token_budget, "token_budget"),
        as_of=moment(as_of, "as_of"),
        include_claims=flag(include_claims, "include_claims"),
    )
