"""Reading a request's conversation, incrementally.

An agent sends its whole conversation again with every request, and the conversation only
grows: between two requests of one conversation the bytes are the same up to the last few
messages (where the client moves its ``cache_control`` marker) and then new messages follow.
Decoding a 200k-token body as JSON takes longer than everything else the proxy does, so the
:class:`Reader` keeps, per conversation, the last body's bytes, its decoded messages and where
each message ends, and for the next request decodes only what follows the longest byte prefix
the two share: the messages inside that prefix are the same values, read once (their
:class:`~veil.context.transcript.Found` objects are the same ones, which lets the transcript
and the renderer skip them too).

Where each message ends is known by encoding it again and finding those exact bytes where it
should be (clients write compact JSON, as :func:`~veil.proxy.wire.dumps` does); a message
written otherwise is simply not tracked, and what follows it is decoded every time. A body
whose conversation cannot be located in its bytes is decoded whole. Every path gives the same
messages: only the work differs.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from veil.context.transcript import Call, Found
from veil.dialects import DIALECTS, Piece, ResultAt, ToolCall
from veil.proxy.wire import (
    Api,
    Request,
    Result,
    WireError,
    common_prefix,
    conversation_key,
    dumps,
    loads,
    loads_any,
    readable,
    span_of,
)

TAIL_KEY = "\u0000veil-tail"
"""The key under which the part after the shared prefix is decoded (no client sends it)."""


def parse(
    api: Api,
    raw: bytes,
    headers: Mapping[str, str],
    reader: Reader | None = None,
    *,
    path: str = "",
) -> Request:
    """The request's conversation as found (with :class:`Reader`, the process-wide one by
    default); its model from the body, or the ``path`` where the API names it there (Gemini).
    Raises :class:`~veil.proxy.wire.WireError` for a body that is not the API's request."""
    body, found, results = (reader or READER).read(api, raw)
    return Request(
        api,
        body,
        tuple(found),
        tuple(results),
        conversation_key(api, body, headers, found),
        DIALECTS[api].model_of(body, path),
        body.get("stream") is True,
        DIALECTS[api].session_of(body, headers),
    )


@dataclass(frozen=True)
class _State:
    """One conversation's last request: its bytes, the body's keys before the conversation's
    array, where that array starts, its items, where each tracked item ends (the first
    ``len(ends)`` items), what each item gave and its results."""

    raw: bytes
    field: str
    before: dict[str, Any]
    start: int
    items: list[Any]
    ends: list[int]
    pieces: list[_Item]
    assembled: _Assembled

    @property
    def found(self) -> list[Found]:
        return self.assembled.found

    @property
    def found_before(self) -> list[int]:
        return self.assembled.found_before

    @property
    def results(self) -> list[Result]:
        return self.assembled.results

    @property
    def results_before(self) -> list[int]:
        return self.assembled.results_before


class Reader:
    """Reads requests (see the module docstring); remembers the newest ``keep``
    conversations. Thread-safe."""

    def __init__(self, keep: int = 16) -> None:
        self.keep = keep
        self._states: list[_State] = []
        self._lock = threading.Lock()

    def read(self, api: Api, raw: bytes) -> tuple[dict[str, Any], list[Found], list[Result]]:
        dialect = DIALECTS[api]
        field = dialect.messages_key
        state = self._known(raw, field)
        decoded = self._after(state, raw) if state is not None else None
        if decoded is None:
            state = None
            body = loads(raw)
            value = body.get(field)
            if dialect.text_input and isinstance(value, str):
                return body, [Found("user", value)], []
            if not isinstance(value, list):
                if dialect.text_input or field not in body:
                    raise WireError(f"no {field} in the request")
                return body, [], []
            items = cast(list[Any], value)
            start = _locate(raw, field, items)
            before = _keys_before(body, field)
            k = 0
        else:
            assert state is not None
            body, k = decoded
            items = cast(list[Any], body[field])
            start, before = state.start, state.before
        piece_in = dialect.piece_in
        if piece_in is not None and k > 0:  # the last item kept is read again: what follows
            k -= 1  # it (its results) may name its calls
        if piece_in is None:
            new = (_item(dialect.piece(i)) for i in items[k:])
        else:
            new = (_item(piece_in(items, n)) for n in range(k, len(items)))
        pieces = [*(state.pieces[:k] if state else ()), *new]
        ends = list(state.ends[:k]) if state else []
        if start >= 0:
            _track(raw, items, ends, start)
        assembled = _assemble(api, raw, items, pieces, ends, start, state, k)
        if start >= 0:
            self._remember(_State(raw, field, before, start, items, ends, pieces, assembled))
        return body, assembled.found, assembled.results

    def _known(self, raw: bytes, field: str) -> _State | None:
        """The newest remembered conversation this request continues: the same bytes up to
        and including its first item."""
        with self._lock:
            states = list(self._states)
        for state in reversed(states):
            if state.field != field or not state.ends:
                continue
            first = state.ends[0]
            if len(raw) >= first and raw[:first] == state.raw[:first]:
                return state
        return None

    def _after(self, state: _State, raw: bytes) -> tuple[dict[str, Any], int] | None:
        """The body, decoding only what follows the prefix shared with ``state``, and how many
        items came from ``state``; None when that cannot be done."""
        shared = common_prefix(raw, state.raw)
        k = bisect.bisect_right(state.ends, shared)
        if k == 0:
            return None
        tail = b'{"\\u0000veil-tail":[null' + raw[state.ends[k - 1] :]
        try:
            rest: object = loads_any(tail)
        except ValueError:
            return None
        if not isinstance(rest, dict):
            return None
        after = cast(dict[str, Any], rest)
        new = after.pop(TAIL_KEY, None)
        if not isinstance(new, list) or not new:
            return None
        items = state.items[:k] + cast(list[Any], new)[1:]
        return {**state.before, state.field: items, **after}, k

    def _remember(self, state: _State) -> None:
        """Keep ``state`` in place of the conversation's previous one."""
        first = state.raw[: state.ends[0]] if state.ends else state.raw
        with self._lock:
            others = [s for s in self._states if not (s.ends and s.raw[: s.ends[0]] == first)]
            self._states = [*others[-(self.keep - 1) :], state]


READER = Reader()
"""The proxy's reader (one per process)."""


def _keys_before(body: Mapping[str, Any], field: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in body.items():
        if key == field:
            break
        out[key] = value
    return out


def _locate(raw: bytes, field: str, items: Sequence[Any]) -> int:
    """Where the first item of the top-level ``field`` array starts in ``raw`` (-1: not
    found as compact JSON)."""
    key = b'"' + field.encode() + b'":['
    first = dumps(items[0]) if items else b"]"
    at = raw.find(key)
    while at >= 0:
        start = at + len(key)
        if raw.startswith(first, start):
            return start
        at = raw.find(key, start)
    return -1


def _track(raw: bytes, items: Sequence[Any], ends: list[int], start: int) -> None:
    """Extend ``ends`` with the items that follow, as long as each is where its compact JSON
    says it is."""
    at = ends[-1] if ends else start
    for index in range(len(ends), len(items)):
        if index:
            if raw[at : at + 1] != b",":
                return
            at += 1
        encoded = dumps(items[index])
        if not raw.startswith(encoded, at):
            return
        at += len(encoded)
        ends.append(at)


@dataclass(frozen=True)
class _Assembled:
    found: list[Found]
    results: list[Result]
    results_before: list[int]
    """``results_before[i]``: how many results the items before item ``i`` hold."""
    found_before: list[int]
    """``found_before[i]``: how many messages the items before item ``i`` gave."""


def _assemble(
    api: Api,
    raw: bytes,
    items: Sequence[Any],
    pieces: Sequence[_Item],
    ends: Sequence[int],
    start: int,
    state: _State | None,
    k: int,
) -> _Assembled:
    """The messages and results of ``items``: those of the first ``k`` from ``state`` (less
    the calls at their end that wait for their assistant message), the rest built (a result
    in a tracked item knows its bytes)."""
    while k > 0 and pieces[k - 1].calls:
        k -= 1
    if state is None:
        k = 0
    found: list[Found] = list(state.found[: state.found_before[k]]) if state else []
    results: list[Result] = list(state.results[: state.results_before[k]]) if state else []
    results_before: list[int] = list(state.results_before[:k]) if state else []
    found_before: list[int] = list(state.found_before[:k]) if state else []
    pending: list[Call] = []
    for index in range(k, len(items)):
        piece = pieces[index]
        results_before.append(len(results))
        found_before.append(len(found))
        if piece.calls:
            pending += piece.calls
            continue
        if pending:
            found.append(Found("assistant", "", tuple(pending)))
            pending = []
        base = len(found)
        found += piece.found
        tools = [i for i, f in enumerate(piece.found) if f.role == "tool"]
        low = (ends[index - 1] + 1 if index else start) if index < len(ends) else -1
        for at, position in zip(piece.results, tools, strict=True):
            result = Result(len(results), at.call_id, at.value, at.key, at.encoded)
            span = span_of(api, raw, result, low, ends[index]) if low >= 0 else None
            if span is not None:
                low = span[1]
            results.append(
                Result(result.index, at.call_id, at.value, at.key, at.encoded, span,
                       base + position)
            )  # fmt: skip
    results_before.append(len(results))
    found_before.append(len(found))
    if pending:
        found.append(Found("assistant", "", tuple(pending)))
    return _Assembled(found, results, results_before, found_before)


@dataclass(frozen=True)
class _Item:
    """What one conversation item gives (its dialect's :class:`~veil.dialects.Piece`) as the
    context layer reads it: the messages found in it, the calls it adds to the next assistant
    message, and where its results are."""

    found: tuple[Found, ...] = ()
    calls: tuple[Call, ...] = ()
    results: tuple[ResultAt, ...] = ()


def _call(c: ToolCall) -> Call:
    return Call(readable(c.id), readable(c.name), readable(c.arguments))


def _item(piece: Piece) -> _Item:
    """``piece`` as the context layer's values, readable: a lone surrogate in a text, a call or
    an id as U+FFFD (:func:`~veil.proxy.wire.readable`); its results' bytes unchanged."""
    found = tuple(
        Found(m.role, readable(m.text), tuple(_call(c) for c in m.calls),
              readable(m.call_id), m.is_error)
        for m in piece.messages
    )  # fmt: skip
    return _Item(found, tuple(_call(c) for c in piece.calls), piece.results)
