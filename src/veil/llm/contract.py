"""The provider contract suite (shipped through :mod:`veil.testing`) and the local HTTP server it
runs on. Every streaming provider subclasses :class:`ProviderContract`.

The suite speaks real HTTP: each test starts a :class:`WireServer` on 127.0.0.1, queues canned
replies that the subclass's :class:`WireFormat` writes in its API's wire format, and points a
provider the subclass builds at that server. Nothing in an SDK is patched. There is no pytest
here — the checks are plain ``assert`` and ``try``/``except`` — so ``import veil`` never needs it.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Protocol, Self, TypeVar, runtime_checkable

from veil.llm.configure import HOW_TO_CONFIGURE, ModelNotConfigured
from veil.llm.failures import RetryPolicy
from veil.llm.messages import (
    AssistantMessage,
    ContextOverflow,
    Done,
    ProviderError,
    Request,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    UserMessage,
)
from veil.llm.provider import Provider, complete

# ---- a server on 127.0.0.1 that replays canned replies ------------------------------------


@dataclass(frozen=True)
class Reply:
    """One HTTP reply: a status, a body (JSON, or an SSE stream) and extra headers."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Seen:
    """One request the server received: its path, lower-cased headers and JSON body."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def json_reply(status: int, body: object, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    """A JSON reply (an API's error body, usually)."""
    return Reply(status, json.dumps(body).encode(), "application/json", headers)


def sse_reply(text: str) -> Reply:
    """A 200 ``text/event-stream`` reply whose body is ``text``."""
    return Reply(200, text.encode(), "text/event-stream")


class WireServer:
    """An HTTP server on 127.0.0.1 that answers every POST with the next queued :class:`Reply`
    (the last one repeats; with none queued, a 500) and records each request in :attr:`seen`.
    Use it as a context manager: :attr:`url` (``http://127.0.0.1:PORT``) is set inside it."""

    def __init__(self) -> None:
        self.url = ""
        self.replies: list[Reply] = []
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def queue(self, *replies: Reply) -> None:
        with self.lock:
            self.replies.extend(replies)

    def next_reply(self) -> Reply:
        with self.lock:
            if not self.replies:
                return json_reply(500, {"error": {"message": "no reply queued"}})
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def __enter__(self) -> Self:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.01,), daemon=True)
        self._thread.start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


def _handler(server: WireServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {k.lower(): v for k, v in self.headers.items()}
            with server.lock:
                server.seen.append(Seen(self.path, headers, json.loads(raw or b"{}")))
            reply = server.next_reply()
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply.body)

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


@dataclass
class Sleeps:
    """An injected sleep (for :class:`RetryPolicy`) that records the waits instead of sleeping."""

    waits: list[float] = field(default_factory=lambda: [])

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


# ---- what a subclass supplies: its API's wire format --------------------------------------


@dataclass(frozen=True)
class CannedCall:
    """A tool call as the server streams it: its id, its name, then its arguments' JSON text in
    ``fragments`` (each one a separate delta on the wire; none means no argument text)."""

    id: str
    name: str
    fragments: tuple[str, ...] = ()


class WireFormat(Protocol):
    """Writes canned replies in one API's wire format (the "wire fixture" of the contract)."""

    def text_stream(self, parts: Sequence[str], usage: Usage) -> Reply:
        """A streamed reply of text only, one delta per part, ending normally, that reports
        ``usage``'s input and output tokens."""
        ...

    def tool_stream(self, text: str, calls: Sequence[CannedCall], usage: Usage) -> Reply:
        """A streamed reply of ``text`` (one delta, or none when empty), then ``calls`` in
        order, ending because the model called tools, that reports ``usage``."""
        ...

    def error(
        self, status: int, kind: str, message: str, headers: tuple[tuple[str, str], ...] = ()
    ) -> Reply:
        """An HTTP error reply in the API's error format: ``kind`` is its error type."""
        ...

    def overflows(self) -> Mapping[str, Reply]:
        """Every way this API (and the servers that speak it) says the prompt does not fit,
        by a label for the failure message."""
        ...


@runtime_checkable
class _Closable(Protocol):
    def close(self) -> None: ...


@dataclass(frozen=True)
class Served:
    """A provider pointed at a running :class:`WireServer`, with the sleeps its retries took."""

    server: WireServer
    provider: Provider
    sleeps: Sleeps


E = TypeVar("E", bound=BaseException)


def raised(kind: type[E], call: Callable[..., object], *args: object) -> E:
    """The ``kind`` exception ``call(*args)`` raises; an AssertionError when it returns."""
    try:
        call(*args)
    except kind as exc:
        return exc
    raise AssertionError(f"expected {kind.__name__}; nothing was raised")


HELLO = Request("You are terse.", (UserMessage("hi"),))


# ---- the suite ----------------------------------------------------------------------------


class ProviderContract:
    """The behaviours every streaming :class:`Provider` keeps, whatever its API.

    Subclass it as ``TestMyProvider(ProviderContract)``, set :attr:`wire_format`,
    :attr:`model`, :attr:`context_window` and :attr:`key_env`, and implement
    :meth:`make_provider` and :meth:`make_provider_without_key`. The contract:

    - text streams as :class:`TextDelta` events, in order, then exactly one :class:`Done` whose
      response holds the whole text, stop reason ``"stop"`` and the server's token counts;
    - tool-call fragments stream as :class:`ToolCallDelta` events (the first of each call names
      it) and are assembled into :class:`ToolCall` objects with decoded arguments, stop reason
      ``"tool_calls"``; a call with no argument text has ``{}``;
    - arguments that are not a JSON object are kept raw as ``{"_raw": text}`` — not lost, not
      a crash — and do not spoil the other calls of the reply;
    - a retryable HTTP error (5xx, 429) before any delta is retried with the policy's backoff
      (a ``Retry-After`` hint honoured up to its cap); a 429 that never ends gives up after
      ``1 + max_retries`` attempts with one retryable :class:`ProviderError` naming the status,
      the server's message and the attempts; a client error (400, 401) is raised at once;
    - each of the API's ways to say "the prompt does not fit" is a :class:`ContextOverflow`,
      after one request and no sleep (retrying the same request cannot help);
    - without a key (none passed, none in the environment) the constructor raises one
      :class:`ModelNotConfigured` that names the first of :attr:`key_env` besides the general
      advice.
    """

    wire_format: ClassVar[WireFormat]
    """Writes the canned replies in this provider's wire format."""
    model: ClassVar[str]
    """The model :meth:`make_provider` asks for."""
    context_window: ClassVar[int]
    """The window the provider reports for :attr:`model`."""
    key_env: ClassVar[tuple[str, ...]]
    """The environment variables the provider takes its key from; the first is the one the
    missing-key error must name. All are unset while :meth:`make_provider_without_key` runs."""

    def make_provider(self, url: str, retry: RetryPolicy) -> Provider:
        """A provider for :attr:`model` with a key, talking to the server at ``url`` (its root,
        ``http://127.0.0.1:PORT``: append the path prefix your client expects) under ``retry``.
        Closed after the test when it has ``close()``."""
        raise NotImplementedError

    def make_provider_without_key(self) -> object:
        """Build the provider the way a user would with no key configured (it should raise)."""
        raise NotImplementedError

    @contextmanager
    def serving(self, *replies: Reply) -> Generator[Served, None, None]:
        """A fresh server queued with ``replies`` and a provider pointed at it."""
        sleeps = Sleeps()
        # The expectations below are computed from this policy: waits 0.5, 1, 2; a cap of 4.
        policy = RetryPolicy(max_retries=3, base_delay_s=0.5, max_delay_s=4.0, sleep=sleeps)
        with WireServer() as server:
            server.queue(*replies)
            provider = self.make_provider(server.url, policy)
            try:
                yield Served(server, provider, sleeps)
            finally:
                if isinstance(provider, _Closable):
                    provider.close()

    # -- shape and streaming --

    def test_is_a_provider(self) -> None:
        with self.serving() as served:
            assert isinstance(served.provider, Provider)
            assert served.provider.model == self.model
            assert served.provider.context_window == self.context_window

    def test_text_streams_as_deltas_then_one_done(self) -> None:
        parts = ("Hel", "lo, ", "world", ".")
        with self.serving(self.wire_format.text_stream(parts, Usage(21, 9))) as served:
            events: list[StreamEvent] = list(served.provider.stream(HELLO))
        assert [e.text for e in events if isinstance(e, TextDelta)] == list(parts)
        assert [type(e) for e in events].count(Done) == 1
        done = events[-1]
        assert isinstance(done, Done), events
        response = done.response
        assert response.message == AssistantMessage("Hello, world.")
        assert response.stop_reason == "stop"
        assert (response.usage.input_tokens, response.usage.output_tokens) == (21, 9)

    def test_tool_call_fragments_are_assembled_into_calls(self) -> None:
        calls = (
            CannedCall("call_a", "read", ('{"pa', 'th": "src/', 'a.py"}')),
            CannedCall("call_b", "bash", ('{"command": ', '"ls -la"}')),
        )
        reply = self.wire_format.tool_stream("Looking.", calls, Usage(1200, 45))
        with self.serving(reply) as served:
            events: list[StreamEvent] = list(served.provider.stream(HELLO))
        fragments = [e for e in events if isinstance(e, ToolCallDelta)]
        for index, call in enumerate(calls):
            mine = [f for f in fragments if f.index == index]
            assert mine, f"no ToolCallDelta for call {index}"
            assert (mine[0].id, mine[0].name) == (call.id, call.name)
            assert "".join(f.arguments_fragment for f in mine) == "".join(call.fragments)
        assert {f.index for f in fragments} == {0, 1}
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Looking."
        done = events[-1]
        assert isinstance(done, Done), events
        response = done.response
        assert response.message == AssistantMessage(
            "Looking.",
            (
                ToolCall("call_a", "read", {"path": "src/a.py"}),
                ToolCall("call_b", "bash", {"command": "ls -la"}),
            ),
        )
        assert response.stop_reason == "tool_calls"
        assert (response.usage.input_tokens, response.usage.output_tokens) == (1200, 45)

    def test_invalid_tool_arguments_are_kept_raw(self) -> None:
        calls = (
            CannedCall("call_1", "edit", ('{"path": ', '"a.py", "old_text": ')),
            CannedCall("call_2", "read", ('{"path": "b.py"}',)),
            CannedCall("call_3", "edit", ("[1, 2]",)),
        )
        with self.serving(self.wire_format.tool_stream("", calls, Usage(10, 5))) as served:
            response = complete(served.provider, HELLO)
        assert [c.arguments for c in response.message.tool_calls] == [
            {"_raw": '{"path": "a.py", "old_text": '},
            {"path": "b.py"},
            {"_raw": "[1, 2]"},
        ]
        assert [c.id for c in response.message.tool_calls] == ["call_1", "call_2", "call_3"]

    def test_a_call_without_argument_text_has_empty_arguments(self) -> None:
        calls = (CannedCall("call_1", "ls"),)
        with self.serving(self.wire_format.tool_stream("", calls, Usage(10, 5))) as served:
            (call,) = complete(served.provider, HELLO).message.tool_calls
        assert call == ToolCall("call_1", "ls", {})

    # -- failures --

    def test_server_errors_then_success_are_retried(self) -> None:
        fmt = self.wire_format
        replies = (
            fmt.error(500, "server_error", "boom"),
            fmt.error(503, "unavailable", "busy"),
            fmt.error(529, "overloaded_error", "Overloaded"),
            fmt.text_stream(("Hello.",), Usage(3, 2)),
        )
        with self.serving(*replies) as served:
            assert complete(served.provider, HELLO).message.content == "Hello."
        assert len(served.server.seen) == 4
        assert served.sleeps.waits == [0.5, 1.0, 2.0]

    def test_retry_after_is_honoured_up_to_the_cap(self) -> None:
        fmt = self.wire_format
        replies = (
            fmt.error(429, "rate_limit_error", "slow down", (("retry-after", "2"),)),
            fmt.error(429, "rate_limit_error", "slow down", (("retry-after", "60"),)),
            fmt.text_stream(("Hello.",), Usage(3, 2)),
        )
        with self.serving(*replies) as served:
            complete(served.provider, HELLO)
        assert served.sleeps.waits == [2.0, 4.0]  # the second hint is capped at max_delay_s

    def test_429_retries_are_bounded_then_one_clear_error(self) -> None:
        reply = self.wire_format.error(429, "rate_limit_error", "Rate limit reached")
        with self.serving(reply) as served:
            error = raised(ProviderError, complete, served.provider, HELLO)
        message = str(error)
        assert "HTTP 429" in message and "Rate limit reached" in message, message
        assert "after 4 attempts" in message, message
        assert error.retryable and not isinstance(error, ContextOverflow)
        assert len(served.server.seen) == 4  # 1 + max_retries
        assert served.sleeps.waits == [0.5, 1.0, 2.0]

    def test_client_errors_are_raised_at_once(self) -> None:
        for status, kind in ((400, "invalid_request_error"), (401, "authentication_error")):
            reply = self.wire_format.error(status, kind, "tools.0: bad schema")
            with self.serving(reply) as served:
                error = raised(ProviderError, complete, served.provider, HELLO)
            assert f"HTTP {status}" in str(error) and "tools.0: bad schema" in str(error)
            assert not error.retryable and not isinstance(error, ContextOverflow), status
            assert len(served.server.seen) == 1 and served.sleeps.waits == [], status

    def test_context_overflow_is_recognised(self) -> None:
        overflows = self.wire_format.overflows()
        assert overflows, "the wire format lists no overflow replies"
        for label, reply in overflows.items():
            with self.serving(reply) as served:
                try:
                    complete(served.provider, HELLO)
                except ContextOverflow:
                    pass
                else:
                    raise AssertionError(f"{label}: no ContextOverflow")
            assert len(served.server.seen) == 1, f"{label}: retried"
            assert served.sleeps.waits == [], label

    def test_a_missing_key_is_one_clear_error(self) -> None:
        saved = {name: os.environ.pop(name) for name in self.key_env if name in os.environ}
        try:
            built = self.make_provider_without_key()
        except ModelNotConfigured as exc:
            error = exc
        else:
            if isinstance(built, _Closable):
                built.close()
            raise AssertionError("a provider was built with no key anywhere")
        finally:
            os.environ.update(saved)
        specific = str(error).replace(HOW_TO_CONFIGURE, "")
        assert self.key_env[0] in specific, str(error)
        assert "\n" not in str(error).strip(), str(error)
