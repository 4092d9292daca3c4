"""A scripted model server on 127.0.0.1: a fake at the LLM boundary that real clients — the
``openai`` and ``anthropic`` SDKs, Claude Code, Codex — talk to over HTTP as to the real APIs.

It speaks Anthropic Messages (``POST /v1/messages``, streamed or not, and
``POST /v1/messages/count_tokens``), OpenAI Responses (``POST /v1/responses``), OpenAI Chat
Completions (``POST /v1/chat/completions``) and Gemini (``POST /v1beta/models/M:generateContent``,
``:streamGenerateContent?alt=sse``, ``:countTokens``); how replies are written is in
:mod:`veil.llm.scripted_wire`, what requests hold and why one is refused in
:mod:`veil.llm.scripted_requests`, what a script holds in :mod:`veil.llm.scripted_turns`, how
bytes cross HTTP in :mod:`veil.llm.scripted_http`; here, what each request is answered.
Request bodies may be ``gzip``/``deflate``/``zstd`` encoded (``zstd`` needs the ``zstandard``
package, imported only when such a body arrives).

Contract:

- It replays a script (SPEC 7.1: ``{"turns": [{"content": "...", "tool_calls": [{"name": ...,
  "arguments": {...}}]}]}``), one turn per model request, whatever the request. Tool names are
  the client's own (Claude Code: ``Bash``, ``Read``…; Codex: ``exec_command``, ``apply_patch``…).
  A script entry may instead be a callable ``(ModelRequest) -> Turn | dict`` that sees what the
  client sent. When the script is exhausted every further request gets a plain text turn
  (``final_text``, default ``"done"``), so a client never hangs.
- Side calls — by default a request that offers no tools (Claude Code's titles and summaries,
  Gemini CLI's model router) — get ``side_reply`` without consuming the script (``side_call=``
  changes the rule; ``None`` makes every request a script turn); one that asks for structured
  output (Gemini's ``responseJsonSchema``) gets, unless ``side_reply`` is a callable, a small
  instance of its schema as JSON, which its client can read.
- Every request is recorded in :attr:`ScriptedServer.requests` (path, lower-cased headers,
  parsed JSON body, what was answered and the usage reported); headers are never logged.
- Usage: input tokens are ``counter(text)`` of the request's tools, system prompt and
  messages/input as compact JSON (default ``ceil(chars / 4)``), output tokens the same of the
  reply. With ``cache=True`` the prompt-cache fields are filled from the longest prefix of
  that text shared with the previous request of the same conversation (its dialect's
  :attr:`~veil.dialects.base.Dialect.session_of`), up to the last cache mark where the API
  caches only to its marks (:attr:`~veil.dialects.base.Dialect.cache_marker`).
- Opt-in validation: ``pairing=True`` refuses a history where a tool call lacks its result or
  a result its call; ``context_limit=N`` refuses a request counted over N tokens, in the
  ``overflow`` style — each with the real service's 400 body. Refused requests consume no turn.

Command line: ``python -m veil.llm.scripted_server --script FILE [--port P] [--context-limit N]
[--pairing] [--cache] [--overflow STYLE] [--no-side-calls]`` prints the URL and serves until
interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal, Self, cast

from veil.dialects import DIALECTS, route
from veil.dialects import gemini as google
from veil.llm.scripted import ScriptError
from veil.llm.scripted_http import OpenConnections, handler_class
from veil.llm.scripted_requests import (
    OVERFLOW_STYLES,
    BodyError,
    OverflowStyle,
    TokenCounter,
    ToolCallSeen,
    ToolResultSeen,
    cache_breakpoint,
    chars_over_four,
    decode_body,
    output_text,
    overflow_error,
    pairing_error,
    parse_json,
    prompt_parts,
    shared_prefix,
    side_answer,
    tool_calls_in,
    tool_names,
    tool_results_in,
)
from veil.llm.scripted_turns import (
    ModelRequest,
    TurnFunction,
    TurnSource,
    default_side_call,
    load_script,
    resolve_turn,
    turn_from_mapping,
)
from veil.llm.scripted_wire import (
    Api,
    Reply,
    ReplyContext,
    ToolUse,
    Turn,
    Usage,
    api_error,
    json_reply,
    render,
    responses_tool_kinds,
)

__all__ = [
    "ModelRequest",
    "OverflowStyle",
    "RecordedRequest",
    "ScriptedServer",
    "ToolUse",
    "Turn",
    "TurnFunction",
    "TurnSource",
    "Usage",
    "default_side_call",
    "load_script",
    "main",
    "turn_from_mapping",
]

RequestKind = Literal[
    "script", "side", "exhausted", "count_tokens", "rejected", "error", "not_found"
]
"""What a request was to the server: a script turn, a side call, a request past the end of the
script (answered ``final_text``), a token count, refused by validation (pairing, overflow, a bad
body), failed (a turn callable raised), or an unknown route."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received and what it answered. ``turn`` is the script turn it
    consumed (from 1; ``None`` when it consumed none); ``usage`` what the reply reported."""

    index: int
    method: str
    path: str
    api: Api | None
    kind: RequestKind
    headers: dict[str, str]
    body: dict[str, Any]
    status: int
    content_encoding: str | None = None
    turn: int | None = None
    usage: Usage | None = None
    error: str | None = None
    reply: Turn | None = None

    @property
    def tool_results(self) -> list[ToolResultSeen]:
        """The tool results in this request's history (empty for a non-model request)."""
        return tool_results_in(self.api, self.body) if self.api else []

    @property
    def tool_calls(self) -> list[ToolCallSeen]:
        """The tool calls in this request's history (empty for a non-model request)."""
        return tool_calls_in(self.api, self.body) if self.api else []

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools this request offers (see :meth:`ModelRequest.tool_names`)."""
        return tool_names(self.api, self.body) if self.api else []


def _route(path: str) -> tuple[Api | None, bool]:
    """The API a path is for (:func:`veil.dialects.route`; None: no route) and whether it is a
    token count (an API with a count endpoint: Anthropic's, Gemini's)."""
    dialect, counting = route(path)
    if dialect is None or (counting and not dialect.count_suffix):
        return None, False
    return dialect.api, counting


def _count_answer(api: Api, tokens: int) -> dict[str, Any]:
    """A token count's answer in its API's shape."""
    return google.count_answer(tokens) if api == "gemini" else {"input_tokens": tokens}


class ScriptedServer:
    """A threaded HTTP server on 127.0.0.1 replaying a script (see the module docstring).

    Use it as a context manager; :attr:`url` is ``http://127.0.0.1:PORT`` inside it (clients
    add ``/v1`` where their base URL expects it). ``port=0`` picks a free port.
    """

    def __init__(
        self,
        script: str | Path | Mapping[str, Any] | Sequence[TurnSource] = (),
        *,
        pairing: bool = False,
        context_limit: int | None = None,
        overflow: OverflowStyle = "native",
        cache: bool = False,
        counter: TokenCounter = chars_over_four,
        side_call: Callable[[ModelRequest], bool] | None = default_side_call,
        side_reply: str | Callable[[ModelRequest], str] = "OK",
        final_text: str = "done",
        port: int = 0,
    ) -> None:
        if overflow not in OVERFLOW_STYLES:
            raise ValueError(f"overflow must be one of {', '.join(OVERFLOW_STYLES)}: {overflow!r}")
        if context_limit is not None and context_limit < 1:
            raise ValueError(f"context_limit must be positive: {context_limit}")
        self.script: list[TurnSource] = load_script(script)
        self.pairing = pairing
        self.context_limit = context_limit
        self.overflow: OverflowStyle = overflow
        self.cache = cache
        self.counter = counter
        self.side_call = side_call
        self.side_reply = side_reply
        self.final_text = final_text
        self.url = ""
        self._port = port
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._cursor = 0
        self._numbered = 0
        self._previous_prompt: dict[tuple[str, ...], str] = {}
        self._connections = OpenConnections()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- inspection ----------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """The requests answered from the script (or past its end)."""
        return [r for r in self.requests if r.kind in {"script", "exhausted"}]

    @property
    def side_calls(self) -> list[RecordedRequest]:
        """The requests answered as side calls."""
        return [r for r in self.requests if r.kind == "side"]

    @property
    def turns_used(self) -> int:
        """How many script turns have been consumed (past the end included)."""
        with self._lock:
            return self._cursor

    # ---- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> None:
        """Start serving on 127.0.0.1 in a background thread and set :attr:`url`."""
        handler = handler_class(self._reply, self._connections)
        httpd = ThreadingHTTPServer(("127.0.0.1", self._port), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, args=(0.05,), daemon=True, name="scripted-server"
        )
        self._thread.start()
        self.url = f"http://127.0.0.1:{httpd.server_address[1]}"

    def close(self) -> None:
        """Stop serving and close every open connection."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        self._connections.shut_down()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    # ---- answering -----------------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> RecordedRequest:
        with self._lock:
            request = replace(request, index=len(self._requests))
            self._requests.append(request)
        return request

    def _reply(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        return self.answer(method, path, headers, raw)[0]

    def answer(
        self, method: str, path: str, headers: dict[str, str], raw: bytes
    ) -> tuple[Reply, RecordedRequest]:
        """The reply to one HTTP request, recorded before it is sent (so a client that has read
        its reply always finds its request in :attr:`requests`). A fault of the server itself
        is a recorded 500 naming it, never a dropped connection."""
        try:
            return self._answer(method, path, headers, raw)
        except Exception as exc:
            message = f"scripted server fault: {type(exc).__name__}: {exc}"
            failed = RecordedRequest(
                -1, method, path, None, "error", headers, {}, 500, error=message
            )
            body = {"error": {"message": message, "type": "api_error"}}
            return json_reply(500, body), self._record(failed)

    def _answer(
        self, method: str, path: str, headers: dict[str, str], raw: bytes
    ) -> tuple[Reply, RecordedRequest]:
        encoding = headers.get("content-encoding")
        routed, counting = _route(path)
        base = RecordedRequest(-1, method, path, None, "not_found", headers, {}, 404, encoding)
        api: Api = routed or "chat"
        with self._lock:
            self._numbered += 1
            n = self._numbered
        request_id = f"req_scripted_{n:04d}"
        if method != "POST" or routed is None:
            reply = json_reply(
                404,
                {"error": {"message": f"no route for {method} {path}", "type": "not_found_error"}},
            )
            return reply, self._record(base)
        try:
            body = parse_json(decode_body(raw, encoding))
        except BodyError as exc:
            reply = api_error(
                api, exc.status, "invalid_request_error", str(exc), request_id=request_id
            )
            rejected = replace(base, api=api, kind="rejected", status=exc.status, error=str(exc))
            return reply, self._record(rejected)
        base = replace(base, api=api, body=body, status=200)
        if counting:
            counted = self.counter("".join(prompt_parts(api, body)))
            record = replace(base, kind="count_tokens", usage=Usage(counted, 0))
            return json_reply(200, _count_answer(api, counted)), self._record(record)
        return self._answer_model(api, path, headers, body, base, n)

    def _answer_model(
        self,
        api: Api,
        path: str,
        headers: dict[str, str],
        body: dict[str, Any],
        base: RecordedRequest,
        n: int,
    ) -> tuple[Reply, RecordedRequest]:
        request_id = f"req_scripted_{n:04d}"
        model = DIALECTS[api].model_of(body, path) or "scripted"
        stream = google.streams(path) if api == "gemini" else bool(body.get("stream"))
        if self.pairing and (refusal := pairing_error(api, body, request_id=request_id)):
            message = _error_message(api, refusal)
            rejected = replace(base, kind="rejected", status=refusal.status, error=message)
            return refusal, self._record(rejected)
        parts = prompt_parts(api, body)
        text = "".join(parts)
        counted = self.counter(text)
        if self.context_limit is not None and counted > self.context_limit:
            refusal = overflow_error(
                api,
                self.overflow,
                limit=self.context_limit,
                counted=counted,
                stream=stream,
                request_id=request_id,
                model=model,
            )
            message = _error_message(api, refusal) or "context overflow (in the stream)"
            rejected = replace(
                base, kind="rejected", status=refusal.status, error=message, usage=Usage(counted, 0)
            )
            return refusal, self._record(rejected)
        view = ModelRequest(api, path, headers, body)
        side = self.side_call is not None and self.side_call(view)
        kind: RequestKind
        if side:
            kind, turn_number = "side", None
            reply_text = (
                self.side_reply(view)
                if callable(self.side_reply)
                else side_answer(api, body) or self.side_reply
            )
            source: TurnSource = Turn(reply_text)
        else:
            with self._lock:
                self._cursor += 1
                turn_number = self._cursor
            if turn_number <= len(self.script):
                kind, source = "script", self.script[turn_number - 1]
            else:
                kind, source = "exhausted", Turn(self.final_text)
        try:
            turn = resolve_turn(source, ModelRequest(api, path, headers, body, turn_number or 0))
        except Exception as exc:
            message = f"script turn {turn_number} failed: {type(exc).__name__}: {exc}"
            reply = api_error(api, 500, "api_error", message, request_id=request_id)
            failed = replace(base, kind="error", status=500, turn=turn_number, error=message)
            return reply, self._record(failed)
        usage = self._usage(api, body, headers, parts, text, counted, turn, side)
        context = ReplyContext(
            model=model,
            n=n,
            stream=stream,
            usage=usage,
            turn=turn_number or 0,
            tool_kinds=responses_tool_kinds(body) if api == "responses" else {},
            include_usage=bool(
                isinstance(options := body.get("stream_options"), dict)
                and cast(dict[str, Any], options).get("include_usage")
            ),
        )
        reply = render(api, turn, context)
        record = replace(base, kind=kind, turn=turn_number, usage=usage, reply=turn)
        return reply, self._record(record)

    def _usage(
        self,
        api: Api,
        body: dict[str, Any],
        headers: Mapping[str, str],
        parts: list[str],
        text: str,
        counted: int,
        turn: Turn,
        side: bool,
    ) -> Usage:
        output = max(1, self.counter(output_text(turn)))
        cached = creation = 0
        if self.cache:
            dialect = DIALECTS[api]
            key = (api, str(body.get("model")), dialect.session_of(body, headers), str(side))
            with self._lock:
                previous = self._previous_prompt.get(key, "")
                self._previous_prompt[key] = text
            prefix = shared_prefix(previous, text)
            if dialect.cache_marker is not None:  # cached up to marks (Anthropic)
                breakpoint_ = cache_breakpoint(parts, dialect.cache_marker)
                cached = self.counter(text[: min(prefix, breakpoint_)])
                creation = max(0, self.counter(text[:breakpoint_]) - cached)
            else:
                cached = self.counter(text[:prefix])
        if turn.usage is not None:
            counted, output = turn.usage
            cached = min(cached, counted)
            creation = min(creation, counted - cached)
        return Usage(counted, output, cached, creation)


def _error_message(api: Api, reply: Reply) -> str | None:
    """The message of an error reply's JSON body (``None`` for a stream), as the API's clients
    read it (:attr:`veil.dialects.base.Dialect.error_of`)."""
    if reply.streamed:
        return None
    data: object = json.loads(reply.body)
    found = DIALECTS[api].error_of(data)
    return found[0] if found is not None else str(cast(dict[str, Any], data).get("error"))


# ---- command line ----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m veil.llm.scripted_server``: serve a script until interrupted; the URL is
    the first line on stdout."""
    parser = argparse.ArgumentParser(
        prog="python -m veil.llm.scripted_server",
        description="Serve a scripted model (Anthropic Messages, OpenAI Responses and Chat "
        "Completions, Gemini generateContent) on 127.0.0.1.",
    )
    parser.add_argument("--script", required=True, help='a JSON file {"turns": [...]}')
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument("--context-limit", type=int, default=None, metavar="N")
    parser.add_argument("--overflow", choices=OVERFLOW_STYLES, default="native")
    parser.add_argument("--pairing", action="store_true", help="refuse unpaired tool calls")
    parser.add_argument("--cache", action="store_true", help="report prompt-cache usage")
    parser.add_argument("--final-text", default="done", help="the reply once the script is over")
    parser.add_argument(
        "--no-side-calls",
        action="store_true",
        help="every request is a script turn (by default a request without tools is a side "
        "call answered 'OK')",
    )
    args = parser.parse_args(argv)
    try:
        server = ScriptedServer(
            Path(args.script),
            pairing=args.pairing,
            context_limit=args.context_limit,
            overflow=args.overflow,
            cache=args.cache,
            final_text=args.final_text,
            side_call=None if args.no_side_calls else default_side_call,
            port=args.port,
        )
    except (ScriptError, ValueError) as exc:
        print(f"scripted_server: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    try:
        with server:
            print(server.url, flush=True)
            while not stop.wait(3600):
                pass
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        print(f"scripted_server: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
