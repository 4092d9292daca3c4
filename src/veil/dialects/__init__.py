"""The wire dialects model providers speak, one module per API, each owning its facts (see
:class:`~veil.dialects.base.Dialect`): :mod:`~veil.dialects.anthropic` (Anthropic Messages),
:mod:`~veil.dialects.responses` (OpenAI Responses), :mod:`~veil.dialects.chat` (OpenAI Chat
Completions), :mod:`~veil.dialects.gemini` (Google Gemini ``generateContent``).
:data:`DIALECTS` registers them; :func:`route` finds a request path's.

Shared by them: :mod:`~veil.dialects.base` (the neutral values a body is read into, the JSON
helpers), :mod:`~veil.dialects.openai_common` (what OpenAI's two APIs share),
:mod:`~veil.dialects.overflow` (the texts of a context-overflow refusal),
:mod:`~veil.dialects.encoding` (a body's ``Content-Encoding``). Imports nothing of Veil: the
proxy and the providers make their own values of what a dialect reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from veil.dialects import anthropic, chat, gemini, responses
from veil.dialects.base import (
    CACHE_TTL_S,
    JSON,
    Api,
    Dialect,
    InputAt,
    Message,
    Piece,
    ResultAt,
    ToolCall,
)

DIALECTS: Mapping[Api, Dialect] = MappingProxyType(
    {d.api: d for d in (anthropic.DIALECT, responses.DIALECT, chat.DIALECT, gemini.DIALECT)}
)
"""Every dialect, by its API's name (the order in which paths are matched)."""


def route(path: str) -> tuple[Dialect | None, bool]:
    """The dialect a request path is for (None: none of them), by the path's last segments
    (query string and fragment aside, a trailing slash too), and whether it is a token count:
    a path ending in a dialect's :attr:`~veil.dialects.base.Dialect.count_suffix` is a count,
    whichever dialect's path precedes it; a suffix that is a method (``:countTokens``) is its
    own dialect's count whatever precedes it."""
    where = path.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    for dialect in DIALECTS.values():  # a count that is a method of its own (Gemini's)
        method = dialect.count_suffix or ""
        if method.startswith(":") and where.endswith(method):
            return dialect, True
    counting = False
    for suffix in _COUNT_SUFFIXES:
        if where.endswith(suffix):
            where, counting = where[: -len(suffix)], True
            break
    for dialect in DIALECTS.values():
        if any(where.endswith(p) for p in dialect.paths):
            return dialect, counting
    return None, counting


_COUNT_SUFFIXES = tuple(
    dict.fromkeys(
        d.count_suffix
        for d in DIALECTS.values()
        if d.count_suffix and not d.count_suffix.startswith(":")
    )
)


def dialect_for_path(path: str) -> Dialect | None:
    """The dialect a request path is for (a token count's included); None: none of them."""
    return route(path)[0]


def dialect_for_client(path: str, headers: Mapping[str, str]) -> Dialect | None:
    """The API a client speaks, for an error answered to it: its path's dialect, else one whose
    clients' own header it sends (``anthropic-version``) or whose path's last segment its path
    holds (``…/messages…``); None when nothing says (OpenAI's error shape is the usual one)."""
    found = dialect_for_path(path)
    if found is not None:
        return found
    lower = {k.lower() for k in headers}
    for dialect in DIALECTS.values():
        if any(h in lower for h in dialect.client_headers):
            return dialect
    for dialect in DIALECTS.values():
        if any("/" + p.rsplit("/", 1)[-1] in path for p in dialect.paths):
            return dialect
    return None


def error_body(dialect: Dialect | None, message: str) -> JSON:
    """An error the proxy answers itself, in the client's API's shape (OpenAI's when unknown:
    :data:`DIALECTS` ``["chat"]``)."""
    return (dialect or DIALECTS["chat"]).error_body(message)


__all__ = [
    "CACHE_TTL_S",
    "DIALECTS",
    "Api",
    "Dialect",
    "InputAt",
    "Message",
    "Piece",
    "ResultAt",
    "ToolCall",
    "dialect_for_client",
    "dialect_for_path",
    "error_body",
    "route",
]
