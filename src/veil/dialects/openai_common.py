"""What OpenAI's two APIs (:mod:`~veil.dialects.responses`, :mod:`~veil.dialects.chat`) share:
the session key, the prompt cache's retention, the error shape and the request-id header. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from veil.dialects.base import CACHE_TTL_S, JSON, TTL_S, json_object

REQUEST_ID_HEADER = "x-request-id"


def session_of(body: Mapping[str, Any], headers: Mapping[str, str]) -> str:
    """``prompt_cache_key`` (Codex sends its conversation's id there), else a ``session-id``
    header, else the ``user`` field.

    (Codex also sends a ``session_id`` header, with an underscore; it is not read: Codex always
    sends ``prompt_cache_key``, and reading it would move requests that do not between
    conversations.)"""
    return str(body.get("prompt_cache_key") or headers.get("session-id") or body.get("user") or "")


def cache_ttl(body: Mapping[str, Any], raw: bytes) -> float:
    """``prompt_cache_retention`` (``24h``), else the in-memory cache's 5 minutes."""
    return TTL_S.get(str(body.get("prompt_cache_retention") or ""), CACHE_TTL_S)


def error_body(
    message: str,
    kind: str | None = None,
    *,
    param: str | None = None,
    code: str | None = None,
    request_id: str | None = None,
) -> JSON:
    """``{"error": {"message", "type", "param", "code"}}`` (``server_error`` by default; the
    request's id goes in a header only)."""
    return {"error": {"message": message, "type": kind or "server_error", "param": param,
                      "code": code}}  # fmt: skip


def error_of(body: object) -> tuple[str, str | None] | None:
    """``(message, code)`` of an error body (its ``type`` when it has no code)."""
    error = json_object(body).get("error")
    if not isinstance(error, dict):
        return None
    fields = json_object(cast(object, error))
    code = fields.get("code") or fields.get("type")
    return str(fields.get("message", "")), None if code is None else str(code)
