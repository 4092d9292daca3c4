"""A model request as the proxy reads and rewrites it: the Anthropic Messages API (Claude
Code), the OpenAI Responses API (Codex) and Chat Completions. Pure.

Reading: :func:`parse` finds, in order, the conversation's messages as the context layer's
:class:`~veil.context.transcript.Found` values — tool calls with their ids, names and
arguments, tool results with the text the model is given — plus which conversation the request
continues (:func:`conversation_key`).

Rewriting: :func:`splice` replaces the content of chosen tool results and changes no other
byte of the request — the system prompt, the tools, thinking blocks and their signatures,
ids, order, ``cache_control`` markers and the JSON layout itself stay as the client sent
them, so a provider's prompt cache sees the same prefix. Each result's content is found in
the raw body as the client serialised it, next to its call id: compact JSON, as Claude Code's
``JSON.stringify`` and Codex's ``serde_json`` write it, found byte for byte; else Python's
``json.dumps`` layout (blanks around colons, non-ASCII escaped), found by the value's extent and
checked by decoding it (:func:`value_span`). The stub goes where the value was, written
compactly; every other byte stays the client's. A result that cannot be found either way makes
:func:`splice` fall back to serialising the whole body compactly (still the same request, only
the layout may differ) — :class:`Spliced.exact` says which happened.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import orjson

from veil import hosts
from veil.context.prefix import shared_prefix
from veil.context.transcript import Found
from veil.dialects import DIALECTS, Api
from veil.dialects import route as _route
from veil.dialects.base import CACHE_TTL_S, arguments_of, dumps, json_array, json_object, text_of

ROUTES: Mapping[str, Api] = {path: d.api for d in DIALECTS.values() for path in d.paths}
"""The API of a request path, by its last segments: ``/v1/responses``, ``/responses`` and
Codex's ChatGPT-login ``/backend-api/codex/responses`` are all the Responses API, an Azure
deployment's ``…/chat/completions`` is Chat Completions (each dialect's
:attr:`~veil.dialects.base.Dialect.paths`; :func:`route`)."""


def route(path: str) -> tuple[Api | None, bool]:
    """The API a request path is for (None: forwarded as it is), by its last segments and
    without its query string; and whether it is a token count (Anthropic's
    ``…/count_tokens``), which is of the request as it would be sent
    (:func:`veil.dialects.route`)."""
    dialect, counting = _route(path)
    return (dialect.api if dialect is not None else None), counting


class WireError(ValueError):
    """A body that is not the API's request (not JSON, not an object, no messages)."""


@dataclass(frozen=True)
class Result:
    """A tool result in the request: its position among the results, its call, the text the
    model is given and the JSON value that carries it (what :func:`splice` replaces)."""

    index: int
    call_id: str
    value: Any
    field: str
    """The key holding ``value`` (``content`` or ``output``)."""
    encoded: bytes | None = None
    """``value`` as compact JSON, when known (it is what :func:`splice` looks for)."""
    span: tuple[int, int] | None = None
    """Where ``encoded`` is in the request's bytes, when the reader knows it."""
    entry: int = -1
    """The index of its :class:`Found` in :attr:`Request.found`."""


@dataclass(frozen=True)
class Request:
    api: Api
    body: dict[str, Any]
    found: tuple[Found, ...]
    results: tuple[Result, ...]
    """The tool results, in order; ``found`` holds them too (role ``tool``)."""
    key: str
    model: str
    stream: bool
    session: str = ""
    """The agent's own session id, from the body or the headers (what resumes it)."""


def loads(raw: bytes) -> dict[str, Any]:
    try:
        data: object = loads_any(raw)
    except ValueError as exc:
        raise WireError(f"the request body is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise WireError(f"the request body is a JSON {type(data).__name__}, not an object")
    return cast(dict[str, Any], data)


def loads_any(raw: bytes) -> object:
    """A JSON value, read with orjson, or with the standard library when orjson refuses it
    for a lone surrogate escape (``"\\ud83d"``: JavaScript's ``JSON.stringify`` writes one
    when a string was cut inside an emoji; the string keeps it, and :func:`dumps` writes it
    back as the same escape). Raises ValueError for a body that is not JSON (``NaN`` and
    ``Infinity`` included: a provider refuses them, and they could not be written back)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        if b"\\u" not in raw:
            raise
    return json.loads(raw.decode("utf-8"), parse_constant=_not_json)


def _not_json(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def readable(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) as U+FFFD: what the
    context layer reads, stores and embeds must be valid Unicode; the request's own bytes keep
    the surrogates (see :func:`loads_any`). ``value`` itself when it has none."""
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return _SURROGATE.sub("\ufffd", value)
        return value
    if isinstance(value, dict):
        d = cast(dict[Any, Any], value)
        pairs = [(readable(k), readable(v)) for k, v in d.items()]
        same = all(a is k and b is v for (a, b), (k, v) in zip(pairs, d.items(), strict=True))
        return d if same else dict(pairs)
    if isinstance(value, list):
        items = cast(list[Any], value)
        out = [readable(v) for v in items]
        return items if all(a is b for a, b in zip(out, items, strict=True)) else out
    return value


# ---- conversation identity ------------------------------------------------------------------


def conversation_key(
    api: Api, body: Mapping[str, Any], headers: Mapping[str, str], found: Sequence[Found]
) -> str:
    """Which conversation a request continues: the client's session (Claude Code's
    ``metadata.user_id`` ``session_id``; Codex's ``prompt_cache_key``) and a digest of the
    conversation's first message, so that a subagent or a side request of the same session is
    a conversation of its own."""
    session = session_of(api, body, headers)
    first = next((f.text for f in found if f.role == "user"), "")
    digest = hashlib.sha256(first.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{session or 'anonymous'}:{digest}"


# ---- the dialects' facts --------------------------------------------------------------------


def session_of(api: Api, body: Mapping[str, Any], headers: Mapping[str, str]) -> str:
    """The client's session (the dialect's
    :attr:`~veil.dialects.base.Dialect.session_of`): Claude Code's ``metadata.user_id``
    ``session_id``, Codex's ``prompt_cache_key`` (or a session header, or the ``user``
    field)."""
    return DIALECTS[api].session_of(body, headers)


def cache_ttl(api: Api, body: Mapping[str, Any], raw: bytes) -> float:
    """How long the provider keeps this request's cached prefix, in seconds (the dialect's
    :attr:`~veil.dialects.base.Dialect.cache_ttl`): the longest ``cache_control`` ``ttl`` an
    Anthropic request marks (``1h``), OpenAI's ``prompt_cache_retention`` (``24h``), else
    :data:`CACHE_TTL_S`."""
    return DIALECTS[api].cache_ttl(body, raw)


def expand_tool(api: Api, body: Mapping[str, Any]) -> str | None:
    """Veil's expand tool as this request offers it to the model (the name a stub gives), or
    None when it offers none: each host's names for it and where a host that defers it behind
    its tool search names it are the host's (:func:`veil.hosts.expand_offered`)."""
    dialect = DIALECTS[api]
    system = body.get(dialect.system_key) if dialect.system_key else None
    early = [system, *json_array(body.get(dialect.messages_key))[:4]]
    text = dumps(early).decode("utf-8", "replace")
    return hosts.expand_offered(dialect.tool_names(body), text)


# ---- rewriting -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Spliced:
    body: bytes
    exact: bool
    """Every other byte of the request is as the client sent it."""


def splice(request: Request, raw: bytes, texts: Mapping[int, str]) -> Spliced:
    """``raw`` with result ``i``'s content replaced by ``texts[i]`` (a JSON string)."""
    return Splicer().splice(request, raw, texts)


class Splicer:
    """:func:`splice` for one conversation, remembering the last request: between two
    batches of evictions a request is the last one's bytes, the same stubs, and something new
    at the end, so the output up to the last replacement both share is the last output's
    (copied, not rebuilt one result at a time)."""

    def __init__(self) -> None:
        self._forget()

    def _forget(self) -> None:
        """Nothing remembered: the next request is spliced from its first byte."""
        self._raw = b""
        self._out = b""
        self._order: list[int] = []
        self._texts: list[str] = []
        self._ends: list[tuple[int, int]] = []
        """After each replacement: where it ends in the input and in the output."""
        self._given: Mapping[int, str] | None = None
        """The ``texts`` last spliced (see :meth:`splice`)."""

    def splice(self, request: Request, raw: bytes, texts: Mapping[int, str]) -> Spliced:
        """``raw`` with each result ``texts`` names sent as its text. ``texts`` must not change
        once given: the same object again is taken to hold the same stubs (not compared)."""
        if texts is self._given:
            order, stubs = self._order, self._texts
            kept = len(order)
        else:
            order = sorted(texts)
            stubs = [texts[i] for i in order]
            kept = min(shared_prefix(order, self._order), shared_prefix(stubs, self._texts))
        shared = common_prefix(raw, self._raw) if self._raw else 0
        while kept and self._ends[kept - 1][0] > shared:
            kept -= 1
        pieces: list[bytes] = []
        at = 0
        ends: list[tuple[int, int]] = list(self._ends[:kept])
        size = 0
        if kept:
            at, size = ends[-1]
            pieces.append(self._out[:size])
        for index in order[kept:]:
            result = request.results[index]
            span = result.span
            if (
                span is None
                or span[0] < at
                or result.encoded is None
                or not raw.startswith(result.encoded, span[0])
            ):
                span = span_of(request.api, raw, result, at)
            if span is None:
                self._forget()
                return Spliced(_reserialised(request, texts), False)
            start, end = span
            stub = dumps(DIALECTS[request.api].stub_value(result.value, texts[index]))
            pieces += [raw[at:start], stub]
            size += start - at + len(stub)
            at = end
            ends.append((at, size))
        pieces.append(raw[at:])
        out = b"".join(pieces)
        self._raw, self._out, self._order, self._texts, self._ends = raw, out, order, stubs, ends
        self._given = texts
        return Spliced(out, True)


def common_prefix(a: bytes, b: bytes) -> int:
    """How many leading bytes ``a`` and ``b`` share (compared a chunk at a time, in C)."""
    n = min(len(a), len(b))
    lo = 0
    chunk = 65_536
    while lo + chunk <= n and a[lo : lo + chunk] == b[lo : lo + chunk]:
        lo += chunk
    hi = min(lo + chunk, n)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


NEAR = 256
"""Bytes between a result's call id and its content key (other short keys: ``type``,
``is_error``, ``cache_control``); a content further away is not this result's."""


def span_of(
    api: Api, raw: bytes, result: Result, after: int, before: int | None = None
) -> tuple[int, int] | None:
    """Where ``result``'s content value is in ``raw`` (at or after ``after``, ending by
    ``before``): in the same object as its call id, just after it or just before it."""
    return value_span(
        raw,
        DIALECTS[api].anchor_of(result.call_id),
        b'"' + result.field.encode() + b'":',
        result.encoded if result.encoded is not None else dumps(result.value),
        after,
        before,
    )


def value_span(
    raw: bytes, anchor: bytes, key: bytes, value: bytes, after: int, before: int | None = None
) -> tuple[int, int] | None:
    """Where ``value`` (compact JSON) is in ``raw`` as the value of ``key`` (``"<name>":``) in
    the object that ``anchor`` (``"<id key>":"<id>"``) names, within :data:`NEAR` bytes after
    or before it; at or after ``after``, ending by ``before``. The one search of the splicer
    (a result's content) and of input elision (a call's input). A client that writes spaced or
    ASCII-escaped JSON is searched for by :func:`_spaced_span`."""
    needle = key + value
    limit = len(raw) if before is None else before
    at = raw.find(anchor, after, limit)
    while at >= 0:
        end = at + len(anchor)
        forward = raw.find(key, end, min(limit, end + NEAR + len(key)))
        if forward >= 0 and raw.startswith(needle, forward) and forward + len(needle) <= limit:
            start = forward + len(key)
            return start, start + len(value)
        back = raw.rfind(needle, max(after, at - len(needle) - NEAR), at)
        if back >= 0 and at - (back + len(needle)) <= NEAR:
            start = back + len(key)
            return start, start + len(value)
        at = raw.find(anchor, end, limit)
    return _spaced_span(raw, anchor, key, value, after, limit)


_BLANK = rb"[ \t\r\n]*"
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_SCALAR = re.compile(rb"[^,\]}\s]+")


def _spaced_span(
    raw: bytes, anchor: bytes, key: bytes, value: bytes, after: int, limit: int
) -> tuple[int, int] | None:
    """:func:`value_span` for a client that does not write compact UTF-8 JSON (Python's
    ``json.dumps`` by default: ``", "`` and ``": "``, non-ASCII as ``\\u`` escapes): the
    anchor and the key with blanks around their colon, and a value found by its extent in
    ``raw`` and accepted when it decodes to the same JSON value as ``value``. A body written
    compactly gets here only when its search failed, and then costs a plain search for the
    id (an id the body does not hold, such as Gemini's made-up ones, costs nothing more)."""
    name, _, ident = anchor.partition(b'":')
    named = re.compile(re.escape(name + b'"') + _BLANK + b":" + _BLANK + rb"\Z")
    keyed = re.compile(re.escape(key[:-1]) + _BLANK + b":" + _BLANK)
    wanted: object = _NOT_DECODED
    at = raw.find(ident, after, limit)  # the id's bytes first: a plain search, not a regex scan
    while at >= 0:
        end = at + len(ident)
        found = named.search(raw, max(after, at - len(name) - NEAR), at)  # (blanks: a few)
        at = raw.find(ident, end, limit)
        if found is None:
            continue
        start = found.start()
        spans: list[tuple[int, int]] = []
        forward = keyed.search(raw, end, min(limit, end + NEAR + len(key) + 8))
        if forward is not None:
            spans.append((forward.end(), -1))
        back = raw.rfind(key[:-1], after, start)
        while back >= 0:
            before_id = keyed.match(raw, back, start)
            if before_id is not None:
                spans.append((before_id.end(), start))
                break
            back = raw.rfind(key[:-1], after, back)
        for begin, anchor_at in spans:
            stop = _value_end(raw, begin, limit)
            if stop is None or (anchor_at >= 0 and anchor_at - stop > NEAR):
                continue
            if wanted is _NOT_DECODED:
                wanted = json.loads(value)
            try:
                same = json.loads(raw[begin:stop]) == wanted
            except ValueError:
                same = False
            if same:
                return begin, stop
    return None


_NOT_DECODED = object()


def _value_end(raw: bytes, start: int, limit: int) -> int | None:
    """Where the JSON value that starts at ``start`` ends (None: not a whole value by
    ``limit``)."""
    first = raw[start : start + 1]
    if first == b'"':
        found = _STRING.match(raw, start, limit)
        return None if found is None else found.end()
    if first in (b"[", b"{"):
        depth = 0
        for token in _TOKEN.finditer(raw, start, limit):
            mark = token.group()
            if mark in (b"[", b"{"):
                depth += 1
            elif mark in (b"]", b"}"):
                depth -= 1
                if not depth:
                    return token.end()
        return None
    found = _SCALAR.match(raw, start, limit)
    return None if found is None else found.end()


def _reserialised(request: Request, texts: Mapping[int, str]) -> bytes:
    """The body with the results replaced, serialised whole (the n-th result object in
    document order is ``request.results[n]``, as :func:`parse` found them)."""
    is_result = DIALECTS[request.api].is_result
    seen = 0

    def walk(value: Any) -> Any:
        nonlocal seen
        if isinstance(value, dict):
            d = cast(dict[str, Any], value)
            if is_result(d):
                index = seen
                seen += 1
                if index in texts:
                    field = request.results[index].field
                    stub = DIALECTS[request.api].stub_value(d.get(field), texts[index])
                    return {k: (stub if k == field else v) for k, v in d.items()}
                return d
            return {k: walk(v) for k, v in d.items()}
        if isinstance(value, list):
            return [walk(v) for v in cast(list[Any], value)]
        return value

    return dumps(walk(request.body))


__all__ = [
    "CACHE_TTL_S",
    "NEAR",
    "ROUTES",
    "Api",
    "Request",
    "Result",
    "Spliced",
    "Splicer",
    "WireError",
    "arguments_of",
    "cache_ttl",
    "common_prefix",
    "conversation_key",
    "dumps",
    "expand_tool",
    "json_array",
    "json_object",
    "loads",
    "loads_any",
    "readable",
    "route",
    "session_of",
    "span_of",
    "splice",
    "text_of",
    "value_span",
]
