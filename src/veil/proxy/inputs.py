"""Old tool inputs elided: what the proxy may take out of a request when its tool results alone
cannot meet the conversation's budget. Pure.

A call's input costs its tokens in every later request: a ``Write``'s whole file, an ``Edit``'s
two strings, Codex's ``apply_patch`` text. Once the conversation is over its budget with every
result it may evict as its stub (the agent's text and its calls alone exceed it), the proxy
elides the long strings of old calls' inputs, as the Anthropic API's ``clear_tool_inputs``
does — in batches, each one rewrite of the provider's cache from its first elided input on —
and from then on sends them as the same bytes in every later request:

- Only calls the model has moved on from: never those of its last :data:`RECENT` assistant
  messages, nor the newest earlier call that wrote a file those calls write — the model edits
  that file against what it wrote, and must match it exactly (:func:`kept_whole`).
- A batch of elisions runs only when it gets the request within its budget (with room for the
  next requests' growth; :mod:`veil.proxy.elision` decides) and pays for the cache it rewrites
  (the batch rule of :mod:`veil.context.batching`: from its first change on, every token is
  written again), the latest start that does (:func:`first_elided`); after the provider
  refused a request as too long, every candidate goes.
- An elided input keeps its shape and its keys: each string of at least :data:`MIN_CHARS`
  characters becomes one marker naming the expand tool and the pointer of a Veil item holding
  the whole input (:func:`marker`); numbers, booleans and short strings stay. A JSON text (the
  OpenAI APIs' ``arguments``) is read, elided and written again compactly; a custom tool's own
  text (``apply_patch``) becomes the marker.
- Each input is found in the raw body as the client wrote it (compact JSON, next to its call's
  id — a Gemini call without one, next to its tool's name, in order —
  :class:`~veil.dialects.base.InputAt`) and replaced there; an input not found that way is
  sent as it came (:func:`apply`). The agent's text and thinking are never changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from veil.context.transcript import Addressed, Call, Found
from veil.dialects.base import InputAt, dumps
from veil.proxy.wire import value_span

MIN_CHARS = 2_000
"""A string of a call's input shorter than this stays: its marker would save little."""


Place = tuple[int, int]
"""Where a call is in a conversation: its message's index, and its index among that message's
calls (parallel calls share a message)."""


def places(found: Sequence[Found]) -> dict[str, Place]:
    """Every call's :data:`Place`, by call id."""
    return {c.id: (i, j) for i, m in enumerate(found) for j, c in enumerate(m.calls)}


@dataclass(frozen=True)
class Elision:
    """One call's input as the proxy sends it from now on."""

    call_id: str
    anchor: bytes
    """``"<id_key>":"<call id>"`` as the client writes it (``"name":"<tool>"`` for a Gemini
    call without an id of its own: :attr:`~veil.dialects.base.InputAt.named_by`)."""
    key: bytes
    """``"<key>":`` (the key holding the input)."""
    before: bytes
    """The input as the client writes it (compact JSON)."""
    after: bytes
    """The input as Veil sends it."""
    pointer: str
    chars: int
    """Characters elided (the long strings' lengths)."""
    order: Place
    """Where the call is in the conversation: the order of the bytes."""


def marker(chars: int, pointer: str, expand: str | None) -> str:
    """What an elided string of ``chars`` characters becomes: the same text for a given call
    in every request."""
    how = f"call {expand} with {pointer}" if expand else f"its pointer is {pointer}"
    return f"[veil: {chars:,} characters of this tool call's input elided; {how} for all of it]"


def elided(value: object, mark: Callable[[int], str], min_chars: int = MIN_CHARS) -> object | None:
    """``value`` (a call's input as the body holds it) with each string of at least
    ``min_chars`` characters as ``mark(its length)``; a JSON text holding an object or an array
    is read, elided and written again compactly. None when nothing changes."""
    if isinstance(value, str):
        if value[:1] in ("{", "["):
            try:
                parsed: object = json.loads(value)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict | list):  # its keys stay, even when it is long itself
                inner = _walk(cast(object, parsed), mark, min_chars)
                return None if inner is None else dumps(inner).decode("utf-8", "surrogatepass")
        return mark(len(value)) if len(value) >= min_chars else None
    return _walk(value, mark, min_chars)


def _walk(value: object, mark: Callable[[int], str], min_chars: int) -> object | None:
    """The JSON value with its long strings marked (keys kept); None when none is long."""
    if isinstance(value, str):
        return mark(len(value)) if len(value) >= min_chars else None
    if isinstance(value, dict):
        d = cast(dict[str, Any], value)
        changed = {k: _walk(v, mark, min_chars) for k, v in d.items()}
        if all(v is None for v in changed.values()):
            return None
        return {k: (d[k] if changed[k] is None else changed[k]) for k in d}
    if isinstance(value, list):
        items = cast(list[Any], value)
        out = [_walk(v, mark, min_chars) for v in items]
        if all(v is None for v in out):
            return None
        return [a if b is None else b for a, b in zip(items, out, strict=True)]
    return None


def long_chars(value: object, min_chars: int = MIN_CHARS) -> int:
    """The characters :func:`elided` would take out of ``value`` (0: it changes nothing)."""
    total = 0

    def count(length: int) -> str:
        nonlocal total
        total += length
        return ""

    return total if elided(value, count, min_chars) is not None else 0


RECENT = 3
"""The last assistant messages whose calls' inputs stay whole: the model is working with them."""


def kept_whole(
    found: Sequence[Found], describe: Callable[[Call], Addressed], recent: int = RECENT
) -> set[str]:
    """The calls whose inputs stay whole: those of the last ``recent`` assistant messages, and
    for each file one of them writes, the newest call before them that wrote it (the model
    edits that file against what it wrote, and must match it exactly)."""
    assistants = [i for i, m in enumerate(found) if m.role == "assistant"]
    cut = assistants[-recent] if len(assistants) >= recent else 0
    whole = {c.id for m in found[cut:] for c in m.calls}
    editing = {w for m in found[cut:] for c in m.calls if (w := describe(c).writes)}
    newest: dict[str, str] = {}
    for message in found[:cut]:
        for call in message.calls:
            writes = describe(call).writes
            if writes in editing:
                newest[writes] = call.id
    return whole | set(newest.values())


def candidates(
    found: Sequence[Found],
    inputs: Mapping[str, InputAt],
    done: Mapping[str, Elision],
    describe: Callable[[Call], Addressed],
    elidable: Callable[[InputAt], bool] = lambda at: long_chars(at.value) > 0,
) -> list[tuple[Place, InputAt]]:
    """The calls whose inputs may be elided now, with their :data:`Place`: not
    :func:`kept_whole` (so made before the conversation's last assistant message), not elided
    yet, with a string of at least :data:`MIN_CHARS` characters (``elidable``: that test, which
    a caller may remember per call)."""
    whole = kept_whole(found, describe)
    out: list[tuple[Place, InputAt]] = []
    for index, message in enumerate(found):
        for position, call in enumerate(message.calls):
            at = inputs.get(call.id)
            if at is None or not call.id or call.id in done or call.id in whole:
                continue
            if elidable(at):
                out.append(((index, position), at))
    return out


def first_elided(
    savings: Sequence[float], suffixes: Sequence[float], *, need: float, factor: float
) -> int | None:
    """Where a batch of elisions starts: it elides the candidate at that index and every later
    one (candidates in the conversation's order, each ``savings[i]`` tokens, ``suffixes[i]``
    the tokens from the candidate on, all of them rewritten in the provider's cache). The
    latest start whose batch frees ``need`` tokens and pays for its rewrite (frees at least
    ``factor`` times the suffix: :meth:`veil.context.eviction.Depth.need`); None when no start
    does."""
    freed = 0.0
    for index in range(len(savings) - 1, -1, -1):
        freed += savings[index]
        if freed >= need and freed >= factor * suffixes[index]:
            return index
    return None


def elision(at: InputAt, order: Place, pointer: str, expand: str | None) -> Elision | None:
    """``at``'s input elided, each long string marked with ``pointer`` (None: nothing to
    elide)."""
    after = elided(at.value, lambda n: marker(n, pointer, expand))
    if after is None:
        return None
    named = at.named_by if at.named_by is not None else at.call_id
    return Elision(
        at.call_id,
        b'"' + at.id_key.encode() + b'":' + dumps(named),
        b'"' + at.key.encode() + b'":',
        dumps(at.value),
        dumps(after),
        pointer,
        long_chars(at.value),
        order,
    )


def whole_text(at: InputAt) -> str:
    """The input as its item keeps it (what an expansion returns): a text as it is, an object
    as its compact JSON."""
    if isinstance(at.value, str):
        return at.value
    return dumps(at.value).decode("utf-8", "surrogatepass")


def apply(raw: bytes, elisions: Sequence[Elision]) -> tuple[bytes, int]:
    """``raw`` with each elided input in place of the whole one, in document order, and how
    many were found (an input not found as the client wrote it, next to its call's id, is left
    as it is)."""
    if not elisions:
        return raw, 0
    pieces: list[bytes] = []
    at = 0
    done = 0
    for e in sorted(elisions, key=lambda e: e.order):
        span = _span(raw, e, at)
        if span is None:
            continue
        start, end = span
        pieces += [raw[at:start], e.after]
        at = end
        done += 1
    pieces.append(raw[at:])
    return b"".join(pieces), done


def positions(raw: bytes, elisions: Sequence[Elision]) -> list[int | None]:
    """Where each of ``elisions`` (in document order) starts in ``raw``; None where its whole
    input is not found as the client wrote it."""
    out: list[int | None] = []
    at = 0
    for e in elisions:
        span = _span(raw, e, at)
        out.append(None if span is None else span[0])
        if span is not None:
            at = span[1]
    return out


def _span(raw: bytes, e: Elision, after: int) -> tuple[int, int] | None:
    """Where ``e``'s whole input is in ``raw`` (at or after ``after``), next to its call's id."""
    return value_span(raw, e.anchor, e.key, e.before, after)


__all__ = [
    "MIN_CHARS",
    "RECENT",
    "Elision",
    "Place",
    "apply",
    "candidates",
    "elided",
    "elision",
    "first_elided",
    "kept_whole",
    "long_chars",
    "marker",
    "places",
    "positions",
    "whole_text",
]
