"""The HTTP JSON API over one :class:`~veil.memory.Memory` (FastAPI; served by uvicorn).

Contract (SPEC 8): routes under ``/v1/scopes/{scope}/``; a bearer key names the scopes it may
use and the authority its writes carry. Neither the scope a write lands in nor its author is
ever taken from the request body (bodies forbid unknown fields, so trying is a 422).

Order of checks on every scoped route, each before any store work on the scope:

1. body size (413, :class:`~veil.server.limits.BodyLimit`);
2. bearer key present and valid (401);
3. the key's token bucket (429 with ``Retry-After``);
4. the key holds ``{scope}`` (403). The 403 body is one constant: it is the same whether the
   scope exists, never existed, or is malformed, so a key learns nothing about other tenants;
5. a route that takes a body: its ``Content-Type`` is JSON (``application/json`` or
   ``…+json``), else 415 naming the type sent (or its absence);
6. the request body (422 with a readable message, never a 500): JSON that does not parse (the
   reason and the character), a body that is not an object (what it is instead), an empty
   body, then each field.

Bodies that are not JSON are refused in that order too: the key and the scope are checked
first even when the body cannot be parsed (FastAPI parses before it resolves dependencies).

Access log (``create_app(access_log=…)``; ``veil serve`` writes it on stderr): one line per
request once it is answered — time, method, path (without the query string), status,
milliseconds and the id of the key that was verified (``-`` for none). Never a body, a query
or a key's secret.

Endpoints are plain ``def`` functions: FastAPI runs them on its worker threads, and
``Memory`` (thread-safe, one lock per scope for writes) does the blocking store and model I/O.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

from fastapi import Depends, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from veil import __version__
from veil.memory import EvidenceTooLarge, FactNotCurrent, Memory, NoModel, UnknownFact
from veil.server.keys import ApiKey, KeyRing
from veil.server.limits import BodyLimit, RateLimiter, retry_after_header
from veil.server.schemas import (
    NO_MODEL,
    DisputeBody,
    ErasureOut,
    ErrorBody,
    FactOut,
    FactsOut,
    FactsQuery,
    HealthOut,
    HistoryQuery,
    RecallBody,
    RecallOut,
    RememberBody,
    ValidationErrorBody,
    VersionOut,
    WriteReportOut,
    erasure_out,
    fact_out,
    facts_out,
    recall_out,
    report_out,
)
from veil.verbs import CATALOGUE, Binding, Services
from veil.verbs.memory_verbs import FactList, RecallAnswer

T = TypeVar("T")

FORBIDDEN = ErrorBody(error="forbidden", message="this key may not access that scope")
"""The one body of every scope refusal (SPEC 8: identical whether or not the scope exists)."""


@dataclass(frozen=True)
class ServerSettings:
    """Limits of one server. ``rate_per_s <= 0`` disables rate limiting."""

    max_body_bytes: int = 1_000_000
    rate_per_s: float = 20.0
    burst: int = 40


class ApiError(Exception):
    """An error with a status, a stable code and a message (rendered as :class:`ErrorBody`)."""

    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = ErrorBody(error=code, message=message)
        self.headers = headers or {}


@dataclass(frozen=True)
class Access:
    """A request's binding: the scope it may act on and the key that granted it."""

    scope: str
    key: ApiKey


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    described = {
        401: "missing or invalid API key",
        403: "the key may not access this scope (identical body whether or not it exists)",
        404: "no such fact in this scope",
        409: "the fact is not in a state that allows this operation",
        413: "request body or evidence too large",
        415: "the body is not sent as JSON (Content-Type: application/json)",
        429: "rate limit exceeded; see Retry-After",
        503: "the server was started without a model: remember is unavailable, reads work",
    }
    out: dict[int | str, dict[str, Any]] = {
        code: {"model": ErrorBody, "description": described[code]} for code in codes
    }
    out[422] = {"model": ValidationErrorBody, "description": "invalid JSON or values"}
    return out


_SCOPED = (401, 403, 413, 429)
_WITH_BODY = (*_SCOPED, 415)


_CHALLENGE = {"WWW-Authenticate": "Bearer"}
_bearer = HTTPBearer(auto_error=False, description="an API key from `veil keys create`")


@dataclass(frozen=True)
class _Context:
    keys: KeyRing
    limiter: RateLimiter
    settings: ServerSettings


KEY_ID = "veil_key_id"
"""Where a request's verified key id is kept (``request.state``) for the access log."""


def _principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> ApiKey:
    """The key behind the request (401 without a valid one), after its rate limit (429)."""
    if credentials is None:
        return _authenticate(request, None, None)
    return _authenticate(request, credentials.scheme, credentials.credentials)


def _authenticate(request: Request, scheme: str | None, token: str | None) -> ApiKey:
    ctx = cast(_Context, request.app.state.veil)
    if token is None or scheme is None or scheme.lower() != "bearer":
        raise ApiError(401, "unauthorized", "send Authorization: Bearer <key>", _CHALLENGE)
    key = ctx.keys.verify(token)
    if key is None:
        raise ApiError(401, "unauthorized", "unknown or revoked API key", _CHALLENGE)
    setattr(request.state, KEY_ID, key.key_id)
    wait = ctx.limiter.take(key.key_id)
    if wait is not None:
        raise ApiError(
            429,
            "rate_limited",
            f"rate limit of {ctx.settings.rate_per_s:g} requests/s exceeded",
            {"Retry-After": retry_after_header(wait)},
        )
    return key


def _access(
    scope: Annotated[str, PathParam(description="The tenant key, e.g. user:alice")],
    key: Annotated[ApiKey, Depends(_principal)],
) -> Access:
    """403 with the constant :data:`FORBIDDEN` body unless the key holds ``scope``."""
    if not key.may_use(scope):
        raise ApiError(403, FORBIDDEN.error, FORBIDDEN.message)
    return Access(scope, key)


Scoped = Annotated[Access, Depends(_access)]


def _json_access(request: Request, access: Scoped) -> Access:
    """:func:`_access`, then 415 unless the body is sent as JSON (check 5)."""
    problem = _content_type_problem(request.headers.get("content-type"))
    if problem is not None:
        raise ApiError(415, "unsupported_media_type", problem)
    return access


JsonScoped = Annotated[Access, Depends(_json_access)]
"""A scoped route that takes a JSON body."""


def _content_type_problem(content_type: str | None) -> str | None:
    """Why ``content_type`` is not JSON, or None when it is."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    ):
        return None
    sent = f"it was sent as {media}" if media else "it was sent without a Content-Type"
    return f"send the body as JSON with Content-Type: application/json ({sent})"


def _unread_body_refusal(request: Request) -> ApiError | None:
    """Checks 2-4 for a request whose body did not parse before they ran (FastAPI parses
    first): the refusal they make, or None when they pass or already ran."""
    if getattr(request.state, KEY_ID, None) is not None or "scope" not in request.path_params:
        return None
    scheme, token = get_authorization_scheme_param(request.headers.get("authorization"))
    try:
        key = _authenticate(request, scheme or None, token or None)
        _access(str(request.path_params["scope"]), key)
    except ApiError as exc:
        return exc
    return None


_JSON_KINDS: dict[type, str] = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "true or false",
    type(None): "null",
}


def _body_problem(error: dict[str, Any]) -> str | None:
    """One body-level validation error in words, or None for a field's error."""
    loc = tuple(error.get("loc", ()))
    kind = error.get("type")
    if kind == "json_invalid":
        reason = cast(dict[str, Any], error.get("ctx") or {}).get("error", "JSON decode error")
        where = f" at character {loc[1]}" if len(loc) > 1 else ""
        return f"the body is not valid JSON: {reason}{where}"
    if loc != ("body",):
        return None
    if kind == "missing":
        return "the body is empty: send a JSON object"
    if kind in ("model_attributes_type", "dict_type", "model_type"):
        value: object = error.get("input")
        what = _JSON_KINDS.get(type(value), "something else")
        return f"the body must be a JSON object, not {what}"
    return None


def create_app(
    memory: Memory,
    keys: KeyRing,
    settings: ServerSettings | None = None,
    access_log: Callable[[str], None] | None = None,
) -> FastAPI:
    """The ASGI app. The caller owns ``memory`` and ``keys`` (and closes them). With
    ``access_log``, it is called with one line per request once answered (see the module
    docstring)."""
    settings = settings or ServerSettings()
    limiter = RateLimiter(settings.rate_per_s, settings.burst)
    app = FastAPI(
        title="Veil memory API",
        version=__version__,
        description=(
            "Long-term memory for LLM agents. Scope and author come from the bearer key, "
            "never from the request."
        ),
    )
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    if access_log is not None:  # added last: outermost, so it times and sees every answer
        app.add_middleware(AccessLog, write=access_log)

    app.state.veil = _Context(keys, limiter, settings)

    @app.exception_handler(ApiError)
    def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return JSONResponse(exc.body.model_dump(), status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        refusal = _unread_body_refusal(request)
        if refusal is not None:
            return _api_error(request, refusal)
        raw = [dict(e) for e in exc.errors()]
        whole = [p for p in (_body_problem(e) for e in raw) if p is not None]
        errors = raw
        for e in errors:
            e.pop("input", None)  # never echo (possibly large) input back
            e.pop("ctx", None)
            e.pop("url", None)
        parts = whole or [
            f"{'.'.join(str(x) for x in e.get('loc', ()))}: {e.get('msg', 'invalid')}"
            for e in errors
        ]
        body = ValidationErrorBody(
            error="invalid_request",
            message="; ".join(parts) or "invalid request",
            detail=jsonable_encoder(errors),
        )
        return JSONResponse(body.model_dump(), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:  # FastAPI's "error parsing the body" (e.g. not UTF-8)
            body = ValidationErrorBody(
                error="invalid_request",
                message=f"body: not valid JSON ({exc.detail})",
                detail=[{"loc": ["body"], "msg": str(exc.detail), "type": "json_invalid"}],
            )
            return JSONResponse(body.model_dump(), status_code=422)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "error")
        return JSONResponse(
            {"error": code, "message": str(exc.detail)},
            status_code=exc.status_code,
            headers=dict(exc.headers or {}),
        )

    @app.get("/v1/health", response_model=HealthOut, tags=["meta"])
    def health() -> HealthOut:
        """Liveness: the process is up and answers. No key needed; reveals no scope."""
        return HealthOut(status="ok", version=__version__)

    @app.get("/v1/version", response_model=VersionOut, tags=["meta"])
    def version() -> VersionOut:
        return VersionOut(version=__version__, api="v1")

    services = Services(memory=memory)

    def run(name: str, access: Access, arguments: Mapping[str, object]) -> Any:
        """The catalogue's verb for ``access``'s scope and authority (never the request's)."""
        who = Binding(user_id=access.scope, author=access.key.authority)
        return _guard(lambda: CATALOGUE[name].call(services, who, arguments))

    @app.post(
        "/v1/scopes/{scope}/remember",
        response_model=WriteReportOut,
        responses=_errors(*_WITH_BODY, 503),
        tags=["memory"],
        description=CATALOGUE["remember"].description,
    )
    def remember(access: JsonScoped, body: RememberBody) -> WriteReportOut:
        """Record evidence authored by the key's authority; at most one model call. 503 (and
        nothing written) on a server started without a model."""
        return report_out(run("remember", access, body.model_dump()))

    @app.post(
        "/v1/scopes/{scope}/recall",
        response_model=RecallOut,
        responses=_errors(*_WITH_BODY),
        tags=["memory"],
        description=CATALOGUE["recall"].description,
    )
    def recall(access: JsonScoped, body: RecallBody) -> RecallOut:
        answer: RecallAnswer = run("recall", access, body.model_dump())
        assert answer.recall is not None
        return recall_out(answer.recall)

    @app.get(
        "/v1/scopes/{scope}/facts",
        response_model=FactsOut,
        responses=_errors(*_SCOPED),
        tags=["memory"],
        description=CATALOGUE["facts"].description,
    )
    def facts(access: Scoped, query: Annotated[FactsQuery, Query()]) -> FactsOut:
        found: FactList = run("facts", access, query.model_dump())
        return facts_out(found.facts, found.total)

    @app.get(
        "/v1/scopes/{scope}/history",
        response_model=FactsOut,
        responses=_errors(*_SCOPED),
        tags=["memory"],
        description=CATALOGUE["history"].description,
    )
    def history(access: Scoped, query: Annotated[HistoryQuery, Query()]) -> FactsOut:
        return facts_out(run("history", access, query.model_dump()))

    @app.post(
        "/v1/scopes/{scope}/facts/{fact_id}/confirm",
        response_model=FactOut,
        responses=_errors(*_SCOPED, 404, 409),
        tags=["memory"],
        description=CATALOGUE["confirm"].description,
    )
    def confirm(access: Scoped, fact_id: str) -> FactOut:
        return fact_out(run("confirm", access, {"fact_id": fact_id}))

    @app.post(
        "/v1/scopes/{scope}/facts/{fact_id}/dispute",
        response_model=FactOut,
        responses=_errors(*_WITH_BODY, 404, 409),
        tags=["memory"],
        description=CATALOGUE["dispute"].description,
    )
    def dispute(access: JsonScoped, fact_id: str, body: DisputeBody) -> FactOut:
        return fact_out(run("dispute", access, {"fact_id": fact_id, **body.model_dump()}))

    @app.get(
        "/v1/scopes/{scope}/export",
        response_class=Response,
        responses={
            200: {
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
                "description": "The scope's memory as JSONL (docs/export-format.md).",
            },
            **_errors(*_SCOPED),
        },
        tags=["memory"],
    )
    def export(access: Scoped) -> Response:
        """Every event, fact and episode of the scope with full provenance, as JSONL."""
        with tempfile.TemporaryDirectory(prefix="veil-export-") as tmp:
            path = Path(tmp) / "export.jsonl"
            _guard(lambda: memory.export(access.scope, path))
            data = path.read_bytes()
        return Response(data, media_type="application/x-ndjson")

    @app.delete(
        "/v1/scopes/{scope}",
        response_model=ErasureOut,
        responses=_errors(*_SCOPED),
        tags=["admin"],
    )
    def forget(access: Scoped) -> ErasureOut:
        """Compliance erasure of the whole scope (admin keys only); a content-free receipt."""
        if not access.key.admin:
            raise ApiError(403, "admin_required", "erasing a scope needs an admin key")
        return erasure_out(_guard(lambda: memory.forget(access.scope)))

    return app


def _guard(call: Callable[[], T]) -> T:
    """Run a memory call, mapping its documented errors to HTTP errors (never a 500)."""
    try:
        return call()
    except UnknownFact:
        raise ApiError(404, "not_found", "no such fact in this scope") from None
    except EvidenceTooLarge as exc:
        raise ApiError(413, "evidence_too_large", str(exc)) from None
    except NoModel:
        raise ApiError(503, NO_MODEL.error, NO_MODEL.message) from None
    except FactNotCurrent as exc:
        raise ApiError(409, "conflict", str(exc)) from None
    except (ValueError, OverflowError) as exc:
        raise _invalid_value(str(exc)) from None


def _invalid_value(message: str) -> RequestValidationError:
    return RequestValidationError([{"loc": ("body",), "msg": message, "type": "value_error"}])


class AccessLog:
    """ASGI middleware: one line per HTTP request once it is answered, given to ``write`` —
    ``veil serve: TIME METHOD PATH STATUS MS ms key ID`` (TIME: when it was received, UTC,
    milliseconds). The path is the one sent, without
    its query string (which may hold content), at most 300 characters; the key id is the
    verified key's (``-`` when none was), never its secret; the status is ``-`` when the
    client went away before an answer."""

    def __init__(self, app: ASGIApp, write: Callable[[str], None]) -> None:
        self.app = app
        self.write = write

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        received = datetime.now(UTC)
        started = time.monotonic()
        status: int | None = None

        async def sent(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sent)
        except Exception:
            status = status or 500
            raise
        finally:
            self.write(_access_line(scope, received, status, time.monotonic() - started))


def _access_line(scope: Scope, received: datetime, status: int | None, seconds: float) -> str:
    raw = cast(bytes | None, scope.get("raw_path"))
    path = raw.decode("ascii", "backslashreplace") if raw else str(scope.get("path", ""))
    path = path.split("?", 1)[0]
    if len(path) > 300:
        path = path[:297] + "..."
    state = cast(dict[str, Any], scope.get("state") or {})
    key = state.get(KEY_ID) or "-"
    at = received.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    shown = "-" if status is None else str(status)
    return (
        f"veil serve: {at} {scope.get('method', '-')} {path} {shown} "
        f"{seconds * 1000:.1f} ms key {key}"
    )
