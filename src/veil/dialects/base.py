"""What every wire dialect is made of: :class:`Dialect` (the facts one API owns) and the neutral
values its reading gives — :class:`Piece`, :class:`Message`, :class:`ToolCall`,
:class:`ResultAt` — plus the JSON helpers the dialects share. Pure; imports nothing of Veil.

A dialect reads a body one conversation item at a time (a message, or a Responses input item):
:attr:`Dialect.piece` turns an item into a :class:`Piece` — the messages found in it, the calls
it adds to the next assistant message, and where its tool results are. The values are plain
(strings, tuples, the JSON values themselves); whoever reads them makes its own entries of them
(the proxy: :class:`veil.context.transcript.Found`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import orjson

from veil.dialects.overflow import is_overflow_text

Api = Literal["anthropic", "responses", "chat", "gemini"]
"""A wire API's name: the key of :data:`veil.dialects.DIALECTS`."""

Role = Literal["system", "user", "assistant", "tool"]

JSON = dict[str, Any]

CACHE_TTL_S = 300.0
"""A provider's prompt cache lives five minutes from its last use unless the request asks
for longer (Anthropic's default ``cache_control``; OpenAI's in-memory prompt cache)."""
TTL_S: Mapping[str, float] = {"5m": 300.0, "1h": 3600.0, "24h": 86_400.0}
"""The cache lifetimes a request may ask for, by the name it gives them."""

USAGE_FIGURES = ("input_tokens", "cache_read", "cache_write", "output_tokens")
"""The figures a usage reading may hold, each as the provider states it: ``input_tokens`` (for
Anthropic the uncached part only, see :meth:`Dialect.prompt_tokens`), ``cache_read`` (tokens
served from the prompt cache), ``cache_write`` (written to it; Anthropic only),
``output_tokens``."""


# ---- the neutral values --------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """A tool call: its id, the tool's name as the model sees it, its arguments."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=lambda: {})


@dataclass(frozen=True)
class Message:
    """One message as found: its role, its text (what the model reads; an image as
    ``[image]``), the calls it makes (an assistant's) or, for role ``tool``, the call it
    answers and whether it is an error."""

    role: Role
    text: str
    calls: tuple[ToolCall, ...] = ()
    call_id: str | None = None
    is_error: bool = False


@dataclass(frozen=True)
class ResultAt:
    """Where a tool result's content is in its item: ``block`` (the index of the content block
    holding it, or -1 for the item itself), the call it answers, ``key`` (the field holding the
    value: ``content`` or ``output``), the value and the value as compact JSON (what the
    splicer looks for in the raw body)."""

    block: int
    call_id: str
    key: str
    value: Any
    encoded: bytes


@dataclass(frozen=True)
class InputAt:
    """Where a tool call's input is in its item: the call's id, the key naming that id in the
    call's own object (``id``, ``call_id``), the key holding the input (``input``,
    ``arguments``) and the input as the body holds it (an object, or a JSON text or the raw
    text of a custom tool). The input value follows ``"<key>":`` within 256 bytes of
    ``"<id_key>":"<call id>"`` in the client's compact JSON (what the proxy's input elision
    looks for)."""

    call_id: str
    id_key: str
    key: str
    value: Any
    named_by: str | None = None
    """What ``id_key`` holds for this call in the body when it is not ``call_id``: a Gemini call
    without an id of its own (the dialect made one up) is named by its tool (``"name"``), and
    found as the first call of that tool, after the previous input looked for, whose input is
    this one (as the splicer finds a result without an id)."""


@dataclass(frozen=True)
class Piece:
    """What one conversation item gives: the messages found in it (its tool results among them,
    role ``tool``, in the order of :attr:`results`), the calls it adds to the next assistant
    message (a Responses ``function_call`` item, which stands alone), and its tool results."""

    messages: tuple[Message, ...] = ()
    calls: tuple[ToolCall, ...] = ()
    results: tuple[ResultAt, ...] = ()


EMPTY = Piece()


# ---- a dialect -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Dialect:
    """The facts of one wire API. Every function is pure; none raises on a body of the wrong
    shape (a missing or mistyped field reads as absent).

    Contract (``tests/dialects/test_contract.py`` checks it for every registered dialect):
    :attr:`piece` finds every tool call and result with its id; a result's ``encoded`` value
    follows ``"<key>":`` in the client's compact JSON, within 256 bytes of
    ``"<call_key>":"<call id>"`` in the same object; :attr:`usage` reads back what
    :attr:`usage_block` writes; :attr:`error_of` reads back what :attr:`error_body` writes;
    :attr:`overflow_body` is recognised by :attr:`is_overflow`."""

    api: Api
    paths: tuple[str, ...]
    """The path endings it is served on (query string aside): ``/v1/messages``."""
    count_suffix: str | None
    """What a token-count request adds to a path (``/count_tokens``), when the API has one; a
    method (``:countTokens``, Gemini's) ends the count's path in place of the generate one."""
    client_headers: tuple[str, ...]
    """Request headers (lower case) only this API's clients send: an unrouted request carrying
    one is answered in this API's error shape."""
    messages_key: str
    """The body's conversation array: ``messages`` or ``input``."""
    text_input: bool
    """A string in :attr:`messages_key` is the conversation's one user message (Responses); then
    a body without an array or a string there is not a request. Otherwise only a missing key is
    not a request (a ``null`` there is an empty conversation)."""
    system_key: str | None
    """The top-level key holding the system prompt (None: it is one of the messages)."""
    fixed_keys: tuple[str, ...]
    """The top-level keys sent again with every request besides the conversation (the system
    prompt, the tool schemas), in the order they are counted."""
    call_key: str
    """The key naming a tool result's call: ``tool_use_id``, ``call_id``, ``tool_call_id``."""
    is_result: Callable[[Mapping[str, Any]], bool]
    """Whether a JSON object of a body is a tool result (the object holding the value under
    the key :attr:`piece` names): the splicer's fallback rewrites the n-th of them."""
    piece: Callable[[object], Piece]
    """One conversation item, read (see :class:`Piece`)."""
    tool_names: Callable[[Mapping[str, Any]], list[str]]
    """The names of the tools a body offers, in order; a tool inside a Responses ``namespace``
    tool as ``NAMESPACE.TOOL`` after the namespace's own name."""
    session_of: Callable[[Mapping[str, Any], Mapping[str, str]], str]
    """The client's session from a body and its (lower-case) headers; empty when none says."""
    cache_ttl: Callable[[Mapping[str, Any], bytes], float]
    """How long the provider keeps the request's cached prefix, in seconds (body and raw
    bytes)."""
    cache_marker: str | None
    """The text marking a cache breakpoint in the raw body (``"cache_control"``), for an API
    that caches only up to explicit marks; None: the provider caches any shared prefix."""
    usage: Callable[[Mapping[str, Any]], dict[str, int]]
    """The usage a JSON answer or one SSE event's data states: the positive figures of
    :data:`USAGE_FIGURES`; empty when it states none."""
    usage_block: Callable[[int, int, int, int], JSON]
    """``(prompt, output, cached, written)`` → the usage object as the API writes it
    (``prompt``: every input token, cached or not)."""
    input_counts_cache: bool
    """The API's ``input_tokens`` includes the cached tokens (OpenAI); Anthropic's does not."""
    error_body: Callable[..., JSON]
    """``(message, kind=None, *, param=None, code=None, request_id=None)`` → an error body in
    the API's shape (what its clients read; the fields the shape lacks are dropped); ``kind``
    defaults to the API's server-error type."""
    error_of: Callable[[object], tuple[str, str | None] | None]
    """An error body → (its message, its type or code), None when it is not an error body."""
    overflow_body: Callable[..., JSON]
    """``(limit, counted, *, request_id=None)`` → the API's own 400 body refusing a prompt of
    ``counted`` tokens over a ``limit``-token window (the text the service sends)."""
    request_id_header: str
    """The response header carrying the request's id."""
    stub_value: Callable[[object, str], object] = field(default=lambda _original, text: text)
    """A tool result's value once its content is a stub ``text``, from its ``original`` value:
    the text itself, unless the API needs more kept (Anthropic: a cache breakpoint the
    content's blocks carried stays, on the stub's one text block)."""
    piece_in: Callable[[Sequence[object], int], Piece] | None = None
    """The item at an index read with its neighbours, for an API that pairs a call and its
    result by position rather than by id (Gemini); None: :attr:`piece` of the item alone."""
    call_inputs: Callable[[object], tuple[InputAt, ...]] = field(default=lambda _item: ())
    """Where the inputs of the tool calls one conversation item makes are (see
    :class:`InputAt`)."""
    call_inputs_in: Callable[[Sequence[object], int], tuple[InputAt, ...]] | None = None
    """The same for the item at an index, read with its neighbours, for an API that pairs a
    call and its result by position (Gemini: a call's id may be its result's); None:
    :attr:`call_inputs` of the item alone."""
    model_of: Callable[[Mapping[str, Any], str], str] = field(
        default=lambda body, _path: str(body.get("model") or "")
    )
    """The model a request is for, from its body and its path (Gemini names it in the path)."""
    made_up_name: Callable[[str], str | None] = field(default=lambda _call_id: None)
    """The tool's name when a call id is one the dialect made up (the API gave none: Gemini's
    ``NAME#T.N``), else None: such a result is found in the raw body next to its name."""
    anchor: bytes = field(init=False, repr=False, compare=False)
    """``"<call_key>":`` as bytes (what the splicer searches for)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "anchor", b'"' + self.call_key.encode() + b'":')

    def anchor_of(self, call_id: str) -> bytes:
        """What names a call's result in the raw body: ``"<call_key>":"<id>"``, or for an id
        the dialect made up, ``"name":"<tool>"`` (the splicer takes the first such result
        after the previous one whose value is the one it looks for)."""
        name = self.made_up_name(call_id)
        if name is not None:
            return b'"name":' + dumps(name)
        return self.anchor + dumps(call_id)

    def prompt_tokens(self, usage: Mapping[str, int]) -> int:
        """Every input token of a request from a usage reading: ``input_tokens``, plus the
        cache's reads and writes where the API counts them apart (Anthropic)."""
        tokens = int(usage.get("input_tokens", 0))
        if self.input_counts_cache:
            return tokens
        return tokens + int(usage.get("cache_read", 0)) + int(usage.get("cache_write", 0))

    def is_overflow(self, body: bytes) -> bool:
        """An error answer (its first 4 KiB) says the prompt did not fit the context window."""
        return is_overflow_text(body[:4096].decode("utf-8", "replace"))


# ---- JSON as the clients write it ------------------------------------------------------------


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def dumps(value: object) -> bytes:
    """Compact JSON, as the clients write it (Claude Code's ``JSON.stringify``, Codex's
    ``serde_json``): a lone surrogate as its ``\\uXXXX`` escape, as ``JSON.stringify`` writes
    it."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", text).encode()


def json_object(value: object) -> JSON:
    """``value`` if it is a JSON object, else an empty one."""
    return cast(JSON, value) if isinstance(value, dict) else {}


def json_array(value: object) -> list[Any]:
    """``value`` if it is a JSON array, else an empty one."""
    return cast(list[Any], value) if isinstance(value, list) else []


def text_of(value: object) -> str:
    """The text a content value gives the model: a string, or its blocks' ``text`` joined by
    newlines (an image block as ``[image]``, a bare string as itself)."""
    if isinstance(value, str):
        return value
    parts: list[str] = []
    for block in json_array(value):
        b = json_object(block)
        kind = b.get("type")
        if isinstance(b.get("text"), str):
            parts.append(str(b["text"]))
        elif kind in ("image", "input_image", "image_url"):
            parts.append("[image]")
        elif isinstance(block, str):
            parts.append(block)
    return "\n".join(parts)


def arguments_of(value: object) -> dict[str, Any]:
    """A call's arguments: an object as it is, a JSON text decoded (text that is not a JSON
    object as ``{"input": text}``), anything else as no arguments."""
    if isinstance(value, dict):
        return cast(dict[str, Any], value)
    if isinstance(value, str):
        try:
            parsed: object = json.loads(value)
        except ValueError:
            return {"input": value}
        return cast(dict[str, Any], parsed) if isinstance(parsed, dict) else {"input": value}
    return {}


def positive(usage: Mapping[str, Any], pairs: tuple[tuple[str, str], ...]) -> dict[str, int]:
    """The figures ``usage`` states under each ``(its key, figure)`` pair that are positive
    integers (a later pair naming the same figure wins)."""
    out: dict[str, int] = {}
    for key, figure in pairs:
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            out[figure] = value
    return out
