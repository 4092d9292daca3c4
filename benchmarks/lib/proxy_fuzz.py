"""A seeded fuzz of ``veil proxy``: random valid agent conversations in each wire dialect, sent
through the real proxy to a recording upstream, and a checker of every body it forwards.

Shared by ``tests/proxy/test_fuzz.py`` (a quick size inside ``make test``) and
``benchmarks/proxy_fuzz.py`` (a larger one); it lives here because a benchmark may not import
``tests`` (``tests/test_benchmarks_quick.py``).

**The generator** (:class:`Conversation` and one subclass per dialect) grows a conversation
request by request, as an agent does: each request is the previous one's messages, the model's
reply (text, thinking, tool calls — several at once sometimes) and the next user turn (the
calls' results in order, or a new prompt). Every choice comes from a ``random.Random`` seeded
by the conversation's name, so a seed reproduces the same bytes. Bodies are written as the
agents write them: compact JSON, non-ASCII as UTF-8, a lone surrogate as its ``\\ud83d`` escape
(JavaScript's ``JSON.stringify`` on a string cut inside an emoji) — :func:`stringify`; some
Chat Completions clients write spaced, ASCII-only JSON (Python's ``json.dumps`` defaults), into
which the proxy splices its stubs in place too (a body it had to serialise again is counted as
``reserialised``: :class:`veil.proxy.wire.Spliced`).

- Anthropic Messages (``/v1/messages``): system as a string or blocks, tools, text, parallel
  ``tool_use``/``tool_result``, ``is_error`` results, results whose content is text, image and
  document blocks, ``thinking`` (with ``signature``) and ``redacted_thinking`` (with ``data``)
  blocks, ``server_tool_use`` with ``web_search_tool_result``, ``cache_control`` (``ttl`` 1h or
  not) on the system prompt, on the last block (moved each request, as Claude Code does) and on
  up to two random earlier blocks — tool_use, tool_result, text, image and document blocks —
  never more than four; results of 10–60 KB now and then; emoji, other scripts, ANSI escapes
  and sometimes a lone surrogate; ``metadata.user_id`` with a session id; now and then a
  ``count_tokens`` request of the conversation first.
- OpenAI Responses (``/v1/responses``, ``/backend-api/codex/responses``): ``message``,
  ``reasoning`` with ``encrypted_content``, ``function_call``/``function_call_output`` (output
  as text or content items with an image), ``custom_tool_call``, ``store: false``,
  ``prompt_cache_key``.
- OpenAI Chat Completions (``/v1/chat/completions``): assistant ``tool_calls`` and ``tool``
  messages (content as text or parts).
- Gemini ``generateContent`` (``…/models/M:streamGenerateContent?alt=sse`` and
  ``:generateContent``), as Gemini CLI sends it: model turns of thought parts with a
  ``thoughtSignature``, text and parallel ``functionCall`` parts, each with the CLI's call id;
  user turns of ``functionResponse`` parts (``{"output": …}`` or ``{"error": …}``) with the same
  ids, now and then a text part beside them; ``systemInstruction``, ``functionDeclarations``.

In every dialect: bodies gzip- or zstd-compressed now and then (zstd when ``zstandard`` is
installed: :data:`ZSTD`); a request sent twice now and then (a retry); the user rewinding the
last exchanges (the next request continues from an earlier one); the client clearing an old
result's content itself (:attr:`Conversation.clears`, Claude Code's context editing); a
``cache_control`` marker on a block inside a result
(:attr:`AnthropicConversation.markers_inside_results`). The last two were failures the fuzz
found; ``tests/proxy/test_fuzz.py`` keeps their reproductions as regression tests.

**The checker** (:class:`Checker`, one per conversation) takes the body the client sent and the
body the upstream received and raises :class:`Violation` unless: it is JSON; every tool call is
paired with its result (same ids, same order); it is the client's body, key for key and in the
same order, but for the content of tool results replaced by a stub (a string starting
``[veil:``) — so thinking blocks, signatures, encrypted reasoning and every ``cache_control``
are where they were, as they were; a result the model has not read yet (after the last
assistant turn) is never replaced, nor one holding a ``cache_control`` marker; a stub names its
call's tool, and once sent for a call is sent again, the same, in every later request of the
conversation; a call's input may be elided (:mod:`veil.proxy.inputs`) — its keys kept, each
changed string one marker that counts the original's characters and carries a ``veil://``
pointer, a JSON text still JSON — but never a call of the last assistant turn, and once elided
it is sent the same in every later request; and the bytes: a request with no stub is the
client's bytes, and one with stubs is the client's layout exactly (what re-encoding it as the
client does gives back) when the client wrote compact JSON.

**The rig**: :class:`RecordingUpstream` (a threaded ``http.server`` on 127.0.0.1 that records
every body by the request's ``x-veil-fuzz`` header and answers a minimal valid reply in the
request's dialect, SSE when it asks to stream, with usage), :class:`VeilProxy` (``veil proxy
--upstream … --window …`` as a subprocess in a fresh directory, its stderr kept), and
:func:`drive` / :func:`run_concurrently` that send conversations through it and check every
forwarded body; conversations run side by side must never see each other's text, nor be sent
a stub pointing at another's result (:meth:`Run.isolation`).
"""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import os
import random
import re
import signal
import string
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal, cast

Dialect = Literal["anthropic", "responses", "chat", "gemini"]
DIALECTS: tuple[Dialect, ...] = ("anthropic", "responses", "chat", "gemini")
Layout = Literal["compact", "spaced-ascii"]
Json = dict[str, Any]

ID_HEADER = "x-veil-fuzz"
"""The header naming a request (``conversation:sequence``), by which the upstream records it."""
TAG = re.compile(rb"fuzzconv-[0-9a-f]{8}")
"""Text unique to one conversation: in its first message and in every result it gets."""
POINTER = re.compile(r"veil://[a-z]+/[A-Za-z0-9_.:-]+")
STUB = "[veil:"
TIMEOUT_S = 120.0
"""Every socket's timeout: a bound on a failure, never a wait anything relies on."""


def _zstandard() -> Any | None:
    try:
        import zstandard  # pyright: ignore[reportMissingTypeStubs]
    except ImportError:
        return None
    return zstandard


ZSTD = _zstandard() is not None
"""Whether bodies may go zstd-compressed (the ``zstandard`` package is installed; Python 3.14's
``compression.zstd`` is not used: the project runs on 3.11)."""


# ---- encoding ------------------------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")


def stringify(value: object, layout: Layout = "compact") -> bytes:
    """``value`` as a client writes it: ``compact`` as JavaScript's ``JSON.stringify`` and
    Rust's ``serde_json`` do (no spaces, non-ASCII as UTF-8, a lone surrogate as its lowercase
    ``\\uXXXX`` escape); ``spaced-ascii`` as Python's ``json.dumps`` by default."""
    if layout == "compact":
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return _SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", text).encode()
    return json.dumps(value, allow_nan=False).encode()


def parse(raw: bytes) -> Any:
    """A body as JSON (``NaN`` and ``Infinity`` refused); raises ValueError."""
    return json.loads(raw.decode("utf-8"), parse_constant=_no_constant)


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def compress(data: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.compress(data, compresslevel=1, mtime=0)
    if encoding == "zstd":
        zstd = _zstandard()
        assert zstd is not None
        return bytes(zstd.ZstdCompressor(level=1).compress(data))
    return data


def decompress(data: bytes, encoding: str) -> bytes:
    """``data`` decoded per its ``Content-Encoding``; raises ValueError when it is not."""
    encoding = encoding.strip().lower()
    try:
        if encoding in ("", "identity"):
            return data
        if encoding == "gzip":
            return gzip.decompress(data)
        if encoding == "zstd":
            zstd = _zstandard()
            if zstd is None:
                raise ValueError("zstandard is not installed")
            return bytes(zstd.ZstdDecompressor().decompressobj().decompress(data))
    except Exception as exc:
        raise ValueError(f"a body marked {encoding} does not decode ({exc})") from None
    raise ValueError(f"unknown Content-Encoding {encoding!r}")


# ---- the generator: shared pieces ------------------------------------------------------------

ALNUM = string.ascii_letters + string.digits
_VOCABULARY = (
    "def return self value import class for in if else None True path config item result "
    "token cache store event error test assert json list dict str int open read write line "
    "file module engine window budget score stub pointer async await yield lambda"
)
WORDS = tuple(_VOCABULARY.split())
UNICODE = (
    "café",
    "straße",
    "naïve",
    "漢字かな",
    "Привет",
    "مرحبا",
    "שלום",
    "Ελληνικά",
    "😀",
    "🚀",
    "👩\u200d💻",
    "🇫🇷",
    "✓",
    "→",
    "…",
    "≤",
    "€",
    "\u00a0",
    "\u2028",
    "\t",
)
ANSI = ("\x1b[31mFAILED\x1b[0m", "\x1b[32mPASSED\x1b[0m", "\x1b[1m==\x1b[0m")
FILES = tuple(f"src/pkg/{d}/mod_{i}.py" for d in ("core", "io", "cli", "web") for i in range(10))
CLEARED = "[Old tool result content cleared]"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def _token(rnd: random.Random, n: int) -> str:
    return "".join(rnd.choice(ALNUM) for _ in range(n))


def _b64(rnd: random.Random, nbytes: int) -> str:
    return base64.b64encode(rnd.randbytes(nbytes)).decode()


@dataclass
class Style:
    """What a conversation's texts may hold (per dialect: a lone surrogate only where a
    JavaScript client writes the body)."""

    tag: str
    unicode: float = 0.3
    surrogate: float = 0.0


def _line(rnd: random.Random, style: Style) -> str:
    words = [rnd.choice(WORDS) for _ in range(rnd.randint(3, 10))]
    if rnd.random() < style.unicode:
        words.insert(rnd.randrange(len(words) + 1), rnd.choice(UNICODE))
    if rnd.random() < 0.02:
        words.append(rnd.choice(ANSI))
    return " ".join(words) + f" = {rnd.randint(0, 10**6)}"


def text(rnd: random.Random, chars: int, style: Style, *, numbered: bool = False) -> str:
    """Code-like lines, about ``chars`` characters, the conversation's tag in the first; now
    and then cut inside an emoji (a lone high surrogate at its end)."""
    lines = [f"# {style.tag}"]
    size = 0
    while size < chars:
        line = _line(rnd, style)
        lines.append(f"{len(lines):6d}\t{line}" if numbered else line)
        size += len(lines[-1]) + 1
    out = "\n".join(lines)
    if rnd.random() < style.surrogate:
        out += " cut mid-emoji \ud83d"
    return out


def _result_chars(rnd: random.Random) -> int:
    """A result's size: mostly 100 B–4 KB, now and then 10–60 KB."""
    if rnd.random() < 0.04:
        return rnd.randint(10_000, 60_000)
    return max(60, min(4_000, int(rnd.lognormvariate(6.6, 0.8))))


TOOL_NAMES = ("Read", "Read", "Read", "Bash", "Bash", "Grep", "Glob", "Edit", "Write", "TodoWrite")


def _arguments(rnd: random.Random, tool: str, style: Style) -> Json:
    path = "/repo/" + rnd.choice(FILES)
    if tool == "Read":
        args: Json = {"file_path": path}
        if rnd.random() < 0.2:
            args |= {"offset": rnd.randint(1, 400), "limit": rnd.choice((50, 100, 200))}
        return args
    if tool == "Bash":
        command = rnd.choice(
            ("pytest -q tests/test_{}.py", "git diff HEAD~{}", "ls -la src/pkg/{}", "rg -n x{}")
        ).format(rnd.randint(0, 50))
        return {"command": command, "description": f"{rnd.choice(WORDS)} {style.tag}"}
    if tool == "Grep":
        return {"pattern": rnd.choice(WORDS), "path": "/repo/src", "output_mode": "content"}
    if tool == "Glob":
        return {"pattern": f"**/*{rnd.choice(WORDS)}*.py"}
    if tool == "Edit":
        return {"file_path": path, "old_string": _line(rnd, style), "new_string": _line(rnd, style)}
    if tool == "Write":
        return {"file_path": path, "content": text(rnd, rnd.randint(100, 1500), style)}
    todos = [
        {
            "content": _line(rnd, style),
            "status": rnd.choice(("pending", "in_progress", "completed")),
            "activeForm": rnd.choice(WORDS),
        }
        for _ in range(rnd.randint(1, 4))
    ]
    return {"todos": todos}


def _output(rnd: random.Random, tool: str, args: Mapping[str, Any], style: Style) -> str:
    """What a call gives back; a Read of a file gives the same text each time."""
    if tool == "Read":
        seeded = random.Random(f"{style.tag}:{args.get('file_path')}:{args.get('offset')}")
        return text(seeded, _result_chars(seeded), style, numbered=True)
    if tool in ("Edit", "Write", "TodoWrite"):
        return f"The file {args.get('file_path', 'todos')} has been updated. ({style.tag})"
    return text(rnd, _result_chars(rnd), style)


def _error(rnd: random.Random, style: Style) -> str:
    return f"Exit code {rnd.randint(1, 2)}\n{text(rnd, rnd.randint(80, 600), style)}"


def _schema(name: str) -> Json:
    properties = {
        k: {"type": "string", "description": f"the {k}"}
        for k in ("file_path", "command", "pattern", "path", "content")
    }
    return {
        "type": "object",
        "properties": properties,
        "required": [],
        "additionalProperties": False,
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": name,
    }


@dataclass(frozen=True)
class Request:
    """One request as the client sends it."""

    conversation: str
    seq: int
    dialect: Dialect
    path: str
    headers: dict[str, str]
    body: bytes
    """As the client serialised it, before compression."""
    wire: bytes
    """As it goes on the wire (compressed when ``encoding``)."""
    encoding: str
    layout: Layout
    kind: str = ""
    """``count`` (a token count of the request), ``retry`` (the request sent again), or the
    request itself (empty)."""

    @property
    def id(self) -> str:
        return f"{self.conversation}:{self.seq}{'-' + self.kind if self.kind else ''}"


class Conversation:
    """A conversation that grows by one model turn and one user turn per request."""

    dialect: Dialect
    clears = 0.02
    """The default of :attr:`clear`: a stub sent stays the stub, also once the client cleared
    its result itself (``test_a_stub_outlives_the_client_clearing_its_result`` in
    ``tests/proxy/test_fuzz.py``)."""

    def __init__(self, seed: int, name: str) -> None:
        self.name = name
        self.rnd = random.Random(f"veil-proxy-fuzz:{seed}:{self.dialect}:{name}")
        self.style = Style(f"fuzzconv-{self.rnd.getrandbits(32):08x}")
        self.seq = 0
        self.layout: Layout = "compact"
        self.path = ""
        self.encodings: tuple[tuple[str, float], ...] = (("gzip", 0.15), ("zstd", 0.15))
        self.rewind = 0.02
        """Per request: the chance that the user rewinds the last 1–3 exchanges (an agent's
        rewind or an edited prompt): the request continues from an earlier one."""
        self.clear = self.clears
        """Per request: the chance that the client replaces an old result's content itself
        (Claude Code's context editing: ``CLEARED``)."""
        self.boundaries: list[int] = []
        """The conversation's length after each request (where a rewind may go back to)."""
        self.retries = 0.03
        """Per request: the chance that it is sent twice (a retry after a timeout)."""
        self.counts = 0.0
        """Per request: the chance that a token count of it goes first (Anthropic)."""

    def items(self) -> list[Json]:
        """The conversation's array (``messages`` or ``input``), as the next body holds it."""
        raise NotImplementedError

    def results(self) -> list[tuple[Json, str]]:
        """Every tool result in :meth:`items`: its object and the key of its content."""
        raise NotImplementedError

    def grow(self) -> None:
        """Add the model's reply to the last request and the user's next turn."""
        raise NotImplementedError

    def rewound(self) -> None:
        """Called after a rewind cut :meth:`items` short."""

    def body(self) -> Json:
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        return {}

    def next_request(self) -> Request:
        r = self.rnd
        if len(self.boundaries) > 4 and r.random() < self.rewind:
            del self.boundaries[-r.randint(1, 3) :]
            del self.items()[self.boundaries[-1] :]
            self.rewound()
        elif len(self.boundaries) > 4 and r.random() < self.clear:
            old = self.results()[: max(0, len(self.results()) - 8)]
            if old:
                holder, key = r.choice(old)
                holder[key] = CLEARED
        self.grow()
        self.boundaries.append(len(self.items()))
        raw = stringify(self.body(), self.layout)
        encoding = ""
        roll = self.rnd.random()
        for name, p in self.encodings:
            if roll < p and (name != "zstd" or ZSTD):
                encoding = name
                break
            roll -= p
        request = Request(
            self.name,
            self.seq,
            self.dialect,
            self.path,
            self.headers(),
            raw,
            compress(raw, encoding),
            encoding,
            self.layout,
        )
        self.seq += 1
        return request

    def next_requests(self) -> list[Request]:
        """The next request, and now and then the same conversation sent again around it: a
        token count of it first (``/v1/messages/count_tokens``, as Claude Code asks), or the
        same request again after it (an agent retrying after a timeout)."""
        request = self.next_request()
        out = [request]
        count = self.count_body() if self.rnd.random() < self.counts else None
        if count is not None:
            raw = stringify(count, self.layout)
            path = "/v1/messages/count_tokens" + ("?beta=true" if "?beta" in self.path else "")
            out.insert(
                0, replace(request, path=path, body=raw, wire=raw, encoding="", kind="count")
            )
        if self.rnd.random() < self.retries:
            out.append(replace(request, kind="retry"))
        return out

    def count_body(self) -> Json | None:
        """A token count of the conversation as it is (None: the dialect has none)."""
        return None

    def task(self) -> str:
        opening = f"Fix the failing tests in the repository ({self.style.tag}). "
        return opening + " ".join(
            _line(self.rnd, self.style) for _ in range(self.rnd.randint(1, 6))
        )

    def turns(self) -> tuple[bool, int]:
        """The model's next turn: a final answer (then a new prompt), or how many calls."""
        if self.rnd.random() < 0.08:
            return True, 0
        return False, self.rnd.choices((1, 2, 3, 4), weights=(60, 25, 10, 5))[0]


# ---- Anthropic Messages ----------------------------------------------------------------------


class AnthropicConversation(Conversation):
    dialect: Dialect = "anthropic"
    markers_inside_results = True
    """Whether a ``cache_control`` marker may go on a block inside a tool result's content (a
    valid request; Claude Code marks the ``tool_result`` block itself): the stub carries it
    (``tests/proxy/test_fuzz.py::test_a_marker_inside_a_stubbed_result_is_kept``)."""

    def __init__(self, seed: int, name: str, *, session: str | None = None) -> None:
        super().__init__(seed, name)
        r = self.rnd
        self.style.surrogate = 0.04
        self.path = r.choice(("/v1/messages", "/v1/messages?beta=true"))
        self.encodings = (("gzip", 0.1), ("zstd", 0.05))
        self.thinking = r.random() < 0.5
        self.server_tools = r.random() < 0.4
        self.ttl = r.choice(("none", "1h", "mixed"))
        session = f"{r.getrandbits(128):032x}" if session is None else session
        self.user_id = (
            json.dumps({"device_id": _token(r, 64), "account_uuid": "", "session_id": session})
            if r.random() < 0.7
            else f"user_{_token(r, 64)}_account__session_{session}"
        )
        prompt = f"You are a coding agent. {' '.join(_line(r, self.style) for _ in range(6))}"
        self.system: Any = (
            prompt
            if r.random() < 0.3
            else [
                {"type": "text", "text": "You are Claude Code."},
                {"type": "text", "text": prompt},
            ]
        )
        if isinstance(self.system, list) and r.random() < 0.7:
            system = cast(list[Json], self.system)
            system[-1]["cache_control"] = self._marker(first=True)
        tools: list[Json] = [
            {"name": n, "description": f"The {n} tool.", "input_schema": _schema(n)}
            for n in dict.fromkeys(TOOL_NAMES)
        ]
        if r.random() < 0.5:
            tools.append(
                {
                    "name": "mcp__veil__expand",
                    "description": "Bring back a result.",
                    "input_schema": _schema("expand"),
                }
            )
        if self.server_tools:
            tools.append({"type": "web_search_20250305", "name": "web_search", "max_uses": 5})
        self.tools = tools
        self.order = r.choice(
            (
                (
                    "model",
                    "messages",
                    "system",
                    "tools",
                    "metadata",
                    "max_tokens",
                    "thinking",
                    "temperature",
                    "stream",
                ),
                (
                    "model",
                    "max_tokens",
                    "system",
                    "tools",
                    "thinking",
                    "temperature",
                    "metadata",
                    "stream",
                    "messages",
                ),
            )
        )
        self.result_order = r.choice(
            (
                ("tool_use_id", "type", "content", "is_error"),
                ("type", "tool_use_id", "content", "is_error"),
                ("type", "content", "is_error", "tool_use_id"),
            )
        )
        self.stream = r.random() < 0.8
        self.counts = 0.05
        self.messages: list[Json] = []
        self.moving: Json | None = None
        self.sticky: list[Json] = []

    def items(self) -> list[Json]:
        return self.messages

    def results(self) -> list[tuple[Json, str]]:
        return [
            (b, "content")
            for m in self.messages
            if isinstance(m["content"], list)
            for b in cast(list[Json], m["content"])
            if b.get("type") == "tool_result"
        ]

    def rewound(self) -> None:
        present = {id(b) for b in _markable(self.messages, inside=True)}
        self.sticky = [b for b in self.sticky if id(b) in present]
        if self.moving is not None and id(self.moving) not in present:
            self.moving = None

    def _marker(self, *, first: bool = False) -> Json:
        if self.ttl == "1h" or (self.ttl == "mixed" and first):
            return {"type": "ephemeral", "ttl": "1h"}
        return {"type": "ephemeral"}

    def _prompt(self) -> Json:
        r = self.rnd
        words = (
            self.task() if not self.messages else " ".join(_line(r, self.style) for _ in range(3))
        )
        if r.random() < 0.3:
            return {"role": "user", "content": words}
        content: list[Json] = [{"type": "text", "text": words}]
        if r.random() < 0.1:
            image = {
                "type": "base64",
                "media_type": "image/png",
                "data": base64.b64encode(PNG).decode(),
            }
            content.insert(0, {"type": "image", "source": image})
        return {"role": "user", "content": content}

    def _result(self, call_id: str, tool: str, args: Json) -> Json:
        r = self.rnd
        error = r.random() < 0.08
        value: Any = _error(r, self.style) if error else _output(r, tool, args, self.style)
        roll = r.random()
        if not error and roll < 0.25:
            parts: list[Json] = [{"type": "text", "text": value}]
            if r.random() < 0.5:
                data = base64.b64encode(PNG + r.randbytes(r.randint(200, 3000))).decode()
                parts.append(
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": data},
                    }
                )
            if r.random() < 0.3:
                source = (
                    {"type": "base64", "media_type": "application/pdf", "data": _b64(r, 1500)}
                    if r.random() < 0.5
                    else {
                        "type": "text",
                        "media_type": "text/plain",
                        "data": text(r, 400, self.style),
                    }
                )
                parts.append({"type": "document", "source": source, "title": "report"})
            if r.random() < 0.3:
                parts.append({"type": "text", "text": f"(more: {self.style.tag})"})
            value = parts
        elif roll < 0.27:
            value = ""
        fields: Json = {"type": "tool_result", "tool_use_id": call_id, "content": value}
        if roll >= 0.27 and roll < 0.28:  # no content at all (a call that printed nothing)
            del fields["content"]
        if error:
            fields["is_error"] = True
        return {k: fields[k] for k in self.result_order if k in fields}

    def grow(self) -> None:
        r = self.rnd
        if not self.messages:
            self.messages.append(self._prompt())
            self._mark(self.messages)
            return
        blocks: list[Json] = []
        if self.thinking:
            blocks.append(
                {
                    "type": "thinking",
                    "thinking": " ".join(_line(r, self.style) for _ in range(3)),
                    "signature": _b64(r, r.randint(64, 400)),
                }
            )
            if r.random() < 0.15:
                blocks.append({"type": "redacted_thinking", "data": _b64(r, r.randint(100, 600))})
        if self.server_tools and r.random() < 0.12:
            sid = "srvtoolu_01" + _token(r, 22)
            query = f"{r.choice(WORDS)} {r.choice(WORDS)}"
            found = [
                {
                    "type": "web_search_result",
                    "url": f"https://example.org/{_token(r, 8)}",
                    "title": _line(r, self.style),
                    "encrypted_content": _b64(r, 300),
                    "page_age": "3 days ago",
                }
                for _ in range(r.randint(1, 3))
            ]
            blocks += [
                {
                    "type": "server_tool_use",
                    "id": sid,
                    "name": "web_search",
                    "input": {"query": query},
                },
                {"type": "web_search_tool_result", "tool_use_id": sid, "content": found},
            ]
        final, calls = self.turns()
        if final or r.random() < 0.3:
            blocks.append(
                {"type": "text", "text": " ".join(_line(r, self.style) for _ in range(2))}
            )
        uses: list[Json] = []
        for _ in range(calls):
            tool = r.choice(TOOL_NAMES)
            uses.append(
                {
                    "type": "tool_use",
                    "id": "toolu_01" + _token(r, 22),
                    "name": tool,
                    "input": _arguments(r, tool, self.style),
                }
            )
        assistant = {"role": "assistant", "content": blocks + uses}
        if final:
            user = self._prompt()
        else:
            results = [self._result(u["id"], u["name"], u["input"]) for u in uses]
            if r.random() < 0.3:
                results.append(
                    {
                        "type": "text",
                        "text": f"<system-reminder>{_line(r, self.style)}</system-reminder>",
                    }
                )
            user = {"role": "user", "content": results}
        self.messages += [assistant, user]
        self._mark([assistant, user])

    def _mark(self, new: Sequence[Json]) -> None:
        """Markers: the last block's moves each request; up to two stay on earlier blocks for
        a while; with the system prompt's, never more than four."""
        r = self.rnd
        if self.moving is not None:
            self.moving.pop("cache_control", None)
            self.moving = None
        if self.sticky and r.random() < 0.05:
            self.sticky.pop(0).pop("cache_control", None)
        last = self.messages[-1]["content"]
        if isinstance(last, list) and last:
            block = cast(list[Json], last)[-1]
            if "cache_control" not in block:
                block["cache_control"] = self._marker()
                self.moving = block
        if len(self.sticky) < 2 and r.random() < 0.25:
            candidates = [
                b
                for b in _markable(new, inside=self.markers_inside_results)
                if "cache_control" not in b and b is not self.moving
            ]
            if candidates:
                block = r.choice(candidates)
                block["cache_control"] = self._marker()
                self.sticky.append(block)

    def count_body(self) -> Json | None:
        return {"model": "claude-sonnet-4-5-20250929", "messages": self.messages,
                "system": self.system, "tools": self.tools}  # fmt: skip

    def body(self) -> Json:
        fields: Json = {
            "model": "claude-sonnet-4-5-20250929",
            "max_tokens": 32_000,
            "system": self.system,
            "tools": self.tools,
            "metadata": {"user_id": self.user_id},
            "stream": self.stream,
            "messages": self.messages,
        }
        if self.thinking:
            fields["thinking"] = {"type": "enabled", "budget_tokens": 10_000}
        else:
            fields["temperature"] = 1
        return {k: fields[k] for k in self.order if k in fields}

    def headers(self) -> dict[str, str]:
        return {"anthropic-version": "2023-06-01", "x-api-key": "sk-ant-fuzz"}


def _markable(messages: Sequence[Json], *, inside: bool) -> list[Json]:
    """Blocks a ``cache_control`` marker may go on: text (not empty), image, document,
    tool_use and tool_result blocks, and (``inside``) the blocks inside a result."""
    out: list[Json] = []
    for message in messages:
        content = message["content"]
        for block in cast(list[Json], content) if isinstance(content, list) else []:
            kind = block.get("type")
            if kind in ("image", "document", "tool_use") or (kind == "text" and block.get("text")):
                out.append(block)
            elif kind == "tool_result":
                out.append(block)
                inner = block.get("content")
                if inside and isinstance(inner, list):
                    out += [
                        b
                        for b in cast(list[Json], inner)
                        if b.get("type") != "text" or b.get("text")
                    ]
    return out


# ---- OpenAI Responses ------------------------------------------------------------------------


class ResponsesConversation(Conversation):
    dialect: Dialect = "responses"

    def __init__(self, seed: int, name: str) -> None:
        super().__init__(seed, name)
        r = self.rnd
        self.path = r.choice(("/v1/responses", "/v1/responses", "/backend-api/codex/responses"))
        self.encodings = (("gzip", 0.1), ("zstd", 0.3))
        self.key = f"{r.getrandbits(128):032x}"
        self.stream = r.random() < 0.8
        self.instructions = f"You are Codex. {' '.join(_line(r, self.style) for _ in range(6))}"
        self.tools: list[Json] = [
            {
                "type": "function",
                "name": n,
                "description": f"The {n} tool.",
                "strict": False,
                "parameters": _schema(n),
            }
            for n in ("shell", "read_file", "list_dir", "grep_files")
        ]
        self.tools.append(
            {
                "type": "custom",
                "name": "apply_patch",
                "description": "Edit files.",
                "format": {"type": "grammar", "syntax": "lark", "definition": "start: x"},
            }
        )
        self.input: list[Json] = []

    def items(self) -> list[Json]:
        return self.input

    def results(self) -> list[tuple[Json, str]]:
        return [(x, "output") for x in self.input if x.get("type") in RESULT_KINDS]

    def _user(self, words: str) -> Json:
        if self.rnd.random() < 0.15:  # the API's short form of an input message
            return {"role": "user", "content": words}
        return {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": words}],
        }

    def grow(self) -> None:
        r = self.rnd
        if not self.input:
            env = "<environment_context><cwd>/repo</cwd><shell>bash</shell></environment_context>"
            self.input += [self._user(env), self._user(self.task())]
            return
        items: list[Json] = []
        if r.random() < 0.7:
            reasoning: Json = {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": _line(r, self.style)}],
                "content": None,
                "encrypted_content": "gAAAAB" + _b64(r, r.randint(200, 900)),
            }
            if r.random() < 0.5:
                reasoning = {"id": "rs_" + _token(r, 40), **reasoning}
            items.append(reasoning)
        final, calls = self.turns()
        if final or r.random() < 0.2:
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": _line(r, self.style)}],
                }
            )
        outputs: list[Json] = []
        for _ in range(calls):
            call_id = "call_" + _token(r, 24)
            tool = r.choice(TOOL_NAMES)
            args = _arguments(r, tool, self.style)
            error = r.random() < 0.08
            result = _error(r, self.style) if error else _output(r, tool, args, self.style)
            if tool in ("Edit", "Write") and r.random() < 0.5:
                patch = (
                    f"*** Begin Patch\n*** Update File: {args['file_path']}\n"
                    f"+{_line(r, self.style)}\n*** End Patch"
                )
                items.append(
                    {
                        "type": "custom_tool_call",
                        "status": "completed",
                        "call_id": call_id,
                        "name": "apply_patch",
                        "input": patch,
                    }
                )
                outputs.append(
                    {"type": "custom_tool_call_output", "call_id": call_id, "output": result}
                )
                continue
            command = [
                "bash",
                "-lc",
                str(args.get("command") or f"cat {args.get('file_path', '.')}"),
            ]
            items.append(
                {
                    "type": "function_call",
                    "name": "shell",
                    "call_id": call_id,
                    "arguments": json.dumps({"command": command, "workdir": "/repo"}),
                }
            )
            value: Any = result
            if r.random() < 0.15:
                value = [{"type": "input_text", "text": result}]
                if r.random() < 0.5:
                    url = (
                        "data:image/png;base64," + base64.b64encode(PNG + r.randbytes(500)).decode()
                    )
                    value.append({"type": "input_image", "image_url": url})
            outputs.append({"type": "function_call_output", "call_id": call_id, "output": value})
        self.input += items + (outputs if outputs else [self._user(_line(r, self.style))])

    def body(self) -> Json:
        return {
            "model": "gpt-5-codex",
            "instructions": self.instructions,
            "input": self.input,
            "tools": self.tools,
            "tool_choice": "auto",
            "parallel_tool_calls": True,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "store": False,
            "stream": self.stream,
            "include": ["reasoning.encrypted_content"],
            "prompt_cache_key": self.key,
        }

    def headers(self) -> dict[str, str]:
        return {"authorization": "Bearer sk-fuzz", "originator": "codex_cli_rs"}


# ---- OpenAI Chat Completions -------------------------------------------------------------------


class ChatConversation(Conversation):
    dialect: Dialect = "chat"

    def __init__(self, seed: int, name: str) -> None:
        super().__init__(seed, name)
        r = self.rnd
        self.style.surrogate = 0.03
        self.path = "/v1/chat/completions"
        self.encodings = (("gzip", 0.15),)
        self.layout = "spaced-ascii" if r.random() < 0.25 else "compact"
        self.stream = r.random() < 0.5
        self.user = f"user-{_token(r, 12)}" if r.random() < 0.5 else None
        self.tools = [
            {
                "type": "function",
                "function": {"name": n, "description": f"The {n} tool.", "parameters": _schema(n)},
            }
            for n in dict.fromkeys(TOOL_NAMES)
        ]
        self.messages: list[Json] = []

    def items(self) -> list[Json]:
        return self.messages

    def results(self) -> list[tuple[Json, str]]:
        return [(m, "content") for m in self.messages if m.get("role") == "tool"]

    def grow(self) -> None:
        r = self.rnd
        if not self.messages:
            system = f"You are a helpful coding agent. {_line(r, self.style)}"
            self.messages += [
                {"role": "system", "content": system},
                {"role": "user", "content": self.task()},
            ]
            return
        final, calls = self.turns()
        words = " ".join(_line(r, self.style) for _ in range(2))
        if final:
            self.messages += [
                {"role": "assistant", "content": words},
                {"role": "user", "content": [{"type": "text", "text": _line(r, self.style)}]},
            ]
            return
        tool_calls: list[Json] = []
        results: list[Json] = []
        for _ in range(calls):
            call_id = "call_" + _token(r, 24)
            tool = r.choice(TOOL_NAMES)
            args = _arguments(r, tool, self.style)
            tool_calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": tool, "arguments": json.dumps(args)},
                }
            )
            value: Any = (
                _error(r, self.style) if r.random() < 0.08 else _output(r, tool, args, self.style)
            )
            if r.random() < 0.15:
                value = [{"type": "text", "text": value}]
            results.append({"role": "tool", "tool_call_id": call_id, "content": value})
        assistant: Json = {
            "role": "assistant",
            "content": words if r.random() < 0.3 else None,
            "tool_calls": tool_calls,
        }
        self.messages += [assistant, *results]

    def body(self) -> Json:
        fields: Json = {
            "model": "gpt-4.1",
            "messages": self.messages,
            "tools": self.tools,
            "tool_choice": "auto",
            "temperature": 0.2,
            "stream": self.stream,
        }
        if self.stream:
            fields["stream_options"] = {"include_usage": True}
        if self.user is not None:
            fields["user"] = self.user
        return fields

    def headers(self) -> dict[str, str]:
        return {"authorization": "Bearer sk-fuzz"}


# ---- Gemini generateContent --------------------------------------------------------------


class GeminiConversation(Conversation):
    dialect: Dialect = "gemini"
    clears = 0.0
    """Gemini CLI never clears a result itself (a ``response`` must stay an object)."""

    def __init__(self, seed: int, name: str) -> None:
        super().__init__(seed, name)
        r = self.rnd
        self.style.surrogate = 0.03
        self.stream = r.random() < 0.8
        method = "streamGenerateContent?alt=sse" if self.stream else "generateContent"
        self.path = f"/v1beta/models/gemini-3.1-pro-preview:{method}"
        self.encodings = ()  # Gemini CLI's requests are never compressed
        self.tools = [
            {"functionDeclarations": [
                {"name": n, "description": f"The {n} tool.", "parametersJsonSchema": _schema(n)}
                for n in dict.fromkeys(TOOL_NAMES)
            ]}
        ]  # fmt: skip
        self.system = {"parts": [{"text": f"You are Gemini CLI. {_line(r, self.style)}"}]}
        self.contents: list[Json] = []

    def items(self) -> list[Json]:
        return self.contents

    def results(self) -> list[tuple[Json, str]]:
        return [
            (cast(Json, part["functionResponse"]), "response")
            for content in self.contents
            for part in cast(list[Json], content["parts"])
            if "functionResponse" in part
        ]

    def grow(self) -> None:
        r = self.rnd
        if not self.contents:
            self.contents.append({"role": "user", "parts": [{"text": self.task()}]})
            return
        final, calls = self.turns()
        parts: list[Json] = []
        if r.random() < 0.5:
            signature = _b64(r, r.randint(24, 96))
            parts.append({"text": _line(r, self.style), "thought": True,
                          "thoughtSignature": signature})  # fmt: skip
        if final or r.random() < 0.6:
            parts.append({"text": " ".join(_line(r, self.style) for _ in range(2))})
        if final:
            self.contents += [
                {"role": "model", "parts": parts or [{"text": "ok"}]},
                {"role": "user", "parts": [{"text": _line(r, self.style)}]},
            ]
            return
        answers: list[Json] = []
        for k in range(calls):
            tool = r.choice(TOOL_NAMES)
            args = _arguments(r, tool, self.style)
            call_id = f"{tool}_{r.randint(10**12, 10**13)}_{k}"
            parts.append({"functionCall": {"id": call_id, "args": args, "name": tool}})
            response: Json = (
                {"error": _error(r, self.style)}
                if r.random() < 0.08
                else {"output": _output(r, tool, args, self.style)}
            )
            answers.append({"functionResponse": {"name": tool, "response": response,
                                                 "id": call_id}})  # fmt: skip
        if r.random() < 0.05:
            answers.append({"text": _line(r, self.style)})
        self.contents += [{"role": "model", "parts": parts}, {"role": "user", "parts": answers}]

    def body(self) -> Json:
        return {
            "contents": self.contents,
            "systemInstruction": self.system,
            "tools": self.tools,
            "generationConfig": {"temperature": 1, "topP": 0.95,
                                 "thinkingConfig": {"includeThoughts": True}},
        }  # fmt: skip

    def headers(self) -> dict[str, str]:
        return {"x-goog-api-key": "AIza-fuzz", "x-goog-api-client": "google-genai-sdk/1.30.0"}


CONVERSATIONS: Mapping[Dialect, Callable[[int, str], Conversation]] = {
    "anthropic": AnthropicConversation,
    "responses": ResponsesConversation,
    "chat": ChatConversation,
    "gemini": GeminiConversation,
}


# ---- the checker ---------------------------------------------------------------------------


class Violation(AssertionError):
    """A forwarded body that breaks a promise of the proxy."""


RESULT_KINDS = frozenset(
    {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}
)
CALL_KINDS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})


ELIDED = re.compile(
    r"\[veil: ([\d,]+) characters of this tool call's input elided; [^\]]*veil://warm/[\w-]+"
    r"[^\]]*\]"
)
"""A string of a call's input as the proxy elides it (:func:`veil.proxy.inputs.marker`)."""


def elided_from(a: Any, b: Any) -> bool:
    """``b`` is ``a`` (a call's input as the client sent it) with its long strings elided:
    the same keys in the same order, each changed string a marker counting its characters; a
    JSON text elided inside (still JSON)."""
    if isinstance(a, str) and isinstance(b, str):
        if a == b:
            return True
        found = ELIDED.fullmatch(b)
        if found:
            return int(found.group(1).replace(",", "")) == len(a)
        try:
            inner_a, inner_b = json.loads(a), json.loads(b)
        except ValueError:
            return False
        return isinstance(inner_a, dict | list) and elided_from(inner_a, inner_b)
    if isinstance(a, dict) and isinstance(b, dict):
        da, db = cast(Json, a), cast(Json, b)
        return list(da) == list(db) and all(elided_from(da[k], db[k]) for k in da)
    if isinstance(a, list) and isinstance(b, list):
        la, lb = cast(list[Any], a), cast(list[Any], b)
        return len(la) == len(lb) and all(elided_from(x, y) for x, y in zip(la, lb, strict=True))
    return _same(a, b)


def _call_inputs(dialect: Dialect, value: Any) -> list[tuple[str, tuple[Any, ...], Any]]:
    """The tool calls ``value`` (an Anthropic content block, a Responses item, a Chat message)
    holds: (call id, the path to its input, the input)."""
    if not isinstance(value, dict):
        return []
    v = cast(Json, value)
    if dialect == "anthropic" and v.get("type") == "tool_use" and "input" in v:
        return [(str(v.get("id")), ("input",), v["input"])]
    if dialect == "responses" and v.get("type") in ("function_call", "custom_tool_call"):
        key = "arguments" if v.get("type") == "function_call" else "input"
        return [(str(v.get("call_id")), (key,), v[key])] if key in v else []
    if dialect == "chat" and v.get("role") == "assistant" and isinstance(v.get("tool_calls"), list):
        out: list[tuple[str, tuple[Any, ...], Any]] = []
        for n, call in enumerate(cast(list[Any], v["tool_calls"])):
            function = cast(Json, call).get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and "arguments" in function:
                path = ("tool_calls", n, "function", "arguments")
                out.append(
                    (str(cast(Json, call).get("id")), path, cast(Json, function)["arguments"])
                )
        return out
    return []


def _set(value: Any, path: tuple[Any, ...], new: Any) -> None:
    """Set what ``path`` names inside ``value`` to ``new``."""
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = new


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON, types and key order included (``1`` is not ``1.0`` nor ``true``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        da, db = cast(Json, a), cast(Json, b)
        return list(da) == list(db) and all(_same(da[k], db[k]) for k in da)
    if isinstance(a, list):
        la, lb = cast(list[Any], a), cast(list[Any], b)
        return len(la) == len(lb) and all(_same(x, y) for x, y in zip(la, lb, strict=True))
    return bool(a == b)


def _first_difference(a: Any, b: Any, where: str) -> str:
    """Where ``a`` and ``b`` first differ (for a violation's message)."""
    if type(a) is not type(b):
        return f"{where}: {type(a).__name__} became {type(b).__name__}"
    if isinstance(a, dict):
        da, db = cast(Json, a), cast(Json, b)
        if list(da) != list(db):
            return f"{where}: keys {list(da)} became {list(db)}"
        for k in da:
            if not _same(da[k], db[k]):
                return _first_difference(da[k], db[k], f"{where}.{k}")
    if isinstance(a, list):
        la, lb = cast(list[Any], a), cast(list[Any], b)
        if len(la) != len(lb):
            return f"{where}: {len(la)} items became {len(lb)}"
        for i, (x, y) in enumerate(zip(la, lb, strict=True)):
            if not _same(x, y):
                return _first_difference(x, y, f"{where}[{i}]")
    return f"{where}: {str(a)[:80]!r} became {str(b)[:80]!r}"


_OWNERS: tuple[tuple[str, str, str], ...] = (
    ("type", "tool_result", "content"),
    ("type", "tool_use", "input"),
    ("role", "tool", "content"),
    ("type", "function_call_output", "output"),
    ("type", "custom_tool_call_output", "output"),
    ("type", "function_call", "arguments"),
    ("type", "custom_tool_call", "input"),
)
"""(key, value, field): an object whose ``key`` is ``value`` is a result or a call whose
``field`` the proxy may replace whole (a Chat call's ``function`` object: its ``arguments``)."""


def _replaced(a: Any, b: Any, out: list[tuple[Any, Any]]) -> None:
    """Each (client's, forwarded) value of a field the proxy replaced whole, in document
    order."""
    if isinstance(a, dict) and isinstance(b, dict):
        da, db = cast(Json, a), cast(Json, b)
        field = next((f for k, v, f in _OWNERS if da.get(k) == v), None)
        if field is None and "name" in da and "arguments" in da:
            field = "arguments"
        if field is not None and field in da and not _same(da[field], db.get(field)):
            out.append((da[field], db.get(field)))
            return
        for k in da:
            if k in db:
                _replaced(da[k], db[k], out)
    elif isinstance(a, list) and isinstance(b, list):
        for x, y in zip(cast(list[Any], a), cast(list[Any], b), strict=False):
            _replaced(x, y, out)


def _in_place(client: Json, body: Json, sent: bytes, forwarded: bytes, layout: Layout) -> bool:
    """Whether ``forwarded`` is ``sent`` with only the replaced values written anew (compact,
    where they were): putting each back, as the client wrote it, gives the client's bytes."""
    pairs: list[tuple[Any, Any]] = []
    _replaced(client, body, pairs)
    rebuilt, at = forwarded, 0
    for whole, stub in pairs:
        new = stringify(stub, "compact")
        found = rebuilt.find(new, at)
        if found < 0:
            return False
        old = stringify(whole, layout)
        rebuilt = rebuilt[:found] + old + rebuilt[found + len(new) :]
        at = found + len(old)
    return rebuilt == sent


def _what(where: str) -> str:
    """What a path is about, for a violation's message."""
    if "cache_control" in where:
        return "a cache_control marker changed or moved"
    if "signature" in where.lower() or "thinking" in where or "encrypted_content" in where:
        return "a thinking block / signature / encrypted reasoning changed"
    return "a part that is not a tool result's content changed"


@dataclass
class Checked:
    """What one forwarded body was."""

    unchanged: bool
    stubs: int
    """Results sent as stubs in it."""
    exact: bool
    """Its bytes are the client's layout (always, when ``unchanged``)."""


class Checker:
    """Checks the bodies forwarded for one conversation, in order (see the module docstring)."""

    def __init__(self, dialect: Dialect, layout: Layout = "compact") -> None:
        self.dialect: Dialect = dialect
        self.layout: Layout = layout
        self.stubs: dict[str, str] = {}
        """Call id → the stub first sent for its result."""
        self.inputs: dict[str, Any] = {}
        """Call id → its input as first sent elided."""

    @property
    def pointers(self) -> set[str]:
        return {p for s in self.stubs.values() for p in POINTER.findall(s)}

    def check(self, sent: bytes, forwarded: bytes) -> Checked:
        try:
            client = parse(sent)
        except ValueError as exc:  # the fuzz's own bug, not the proxy's
            raise AssertionError(f"the client's body is not JSON: {exc}") from None
        try:
            body = parse(forwarded)
        except (ValueError, UnicodeDecodeError) as exc:
            raise Violation(f"the forwarded body is not JSON ({exc})") from None
        if not isinstance(body, dict):
            raise Violation(f"the forwarded body is a JSON {type(body).__name__}")
        stubs = self._compare(cast(Json, client), cast(Json, body))
        _pairs(self.dialect, cast(Json, body))
        unchanged = forwarded == sent
        if not stubs and not unchanged:
            raise Violation("a request with no stub was not forwarded byte for byte")
        exact = unchanged or stringify(body, self.layout) == forwarded
        if not exact and self.layout != "compact":  # spliced in place into the client's layout?
            exact = _in_place(cast(Json, client), cast(Json, body), sent, forwarded, self.layout)
        if not exact and self.layout == "compact":
            raise Violation("the stubs were spliced, but other bytes of the layout changed")
        return Checked(unchanged, stubs, exact)

    def _compare(self, client: Json, body: Json) -> int:
        """The number of stubs in ``body``; raises unless it is ``client`` but for them."""
        field = {"responses": "input", "gemini": "contents"}.get(self.dialect, "messages")
        if list(client) != list(body):
            raise Violation(f"top-level keys {list(client)} became {list(body)}")
        for key in client:
            if key != field and not _same(client[key], body[key]):
                where = _first_difference(client[key], body[key], key)
                raise Violation(f"{_what(where)}: {where}")
        items, sent = client[field], body[field]
        if not isinstance(items, list) or not isinstance(sent, list):
            return self._same_or_raise(items, sent, field)
        items, sent = cast(list[Any], items), cast(list[Any], sent)
        if len(items) != len(sent):
            raise Violation(f"{field}: {len(items)} items became {len(sent)}")
        last_turn = max(
            (i for i, item in enumerate(items) if _is_model_turn(self.dialect, item)), default=-1
        )
        names = _tool_names(self.dialect, items)
        stubs = 0
        for i, (a, b) in enumerate(zip(items, sent, strict=True)):
            where = f"{field}[{i}]"
            if self.dialect == "gemini":
                stubs += self._gemini(a, b, i, last_turn, where, names)
                continue
            if self.dialect == "anthropic" and isinstance(a, dict) and isinstance(b, dict):
                ma, mb = cast(Json, a), cast(Json, b)
                content_a, content_b = ma.get("content"), mb.get("content")
                if (
                    list(ma) != list(mb)
                    or not isinstance(content_a, list)
                    or not isinstance(content_b, list)
                ):
                    stubs += self._same_or_raise(a, b, where)
                    continue
                for k in ma:
                    if k != "content" and not _same(ma[k], mb[k]):
                        self._same_or_raise(ma[k], mb[k], f"{where}.{k}")
                blocks_a, blocks_b = cast(list[Any], content_a), cast(list[Any], content_b)
                if len(blocks_a) != len(blocks_b):
                    raise Violation(
                        f"{where}.content: {len(blocks_a)} blocks became {len(blocks_b)}"
                    )
                for j, (x, y) in enumerate(zip(blocks_a, blocks_b, strict=True)):
                    if isinstance(x, dict) and cast(Json, x).get("type") == "tool_result":
                        xd = cast(Json, x)
                        stubs += self._result(
                            xd,
                            y,
                            "content",
                            str(xd.get("tool_use_id")),
                            i > last_turn,
                            f"{where}.content[{j}]",
                            names,
                        )
                    else:
                        stubs += self._call_or_raise(x, y, f"{where}.content[{j}]", i >= last_turn)
                continue
            if isinstance(a, dict) and _is_result(self.dialect, cast(Json, a)):
                ad = cast(Json, a)
                key = "output" if self.dialect == "responses" else "content"
                call = str(
                    ad.get("call_id") if self.dialect == "responses" else ad.get("tool_call_id")
                )
                stubs += self._result(ad, b, key, call, i > last_turn, where, names)
            else:
                stubs += self._call_or_raise(a, b, where, i >= last_turn)
        return stubs

    def _gemini(
        self, a: Any, b: Any, i: int, last_turn: int, where: str, names: Mapping[str, str]
    ) -> int:
        """A Gemini content (the ``i``-th; the last model turn is ``last_turn``): its parts as
        sent but for ``functionResponse`` parts whose ``response`` may be ``{"output": STUB}``
        and ``functionCall`` parts whose ``args`` may be elided."""
        unread = i > last_turn
        if not isinstance(a, dict) or not isinstance(b, dict):
            return self._same_or_raise(a, b, where)
        ca, cb = cast(Json, a), cast(Json, b)
        if list(ca) != list(cb) or not isinstance(ca.get("parts"), list):
            return self._same_or_raise(a, b, where)
        for k in ca:
            if k != "parts":
                self._same_or_raise(ca[k], cb[k], f"{where}.{k}")
        parts_a, parts_b = cast(list[Any], ca["parts"]), cast(list[Any], cb.get("parts"))
        if not isinstance(parts_b, list) or len(parts_a) != len(parts_b):
            raise Violation(f"{where}.parts: {len(parts_a)} parts became {str(parts_b)[:80]}")
        stubs = 0
        for j, (x, y) in enumerate(zip(parts_a, parts_b, strict=True)):
            place = f"{where}.parts[{j}]"
            call = cast(Json, x).get("functionCall") if isinstance(x, dict) else None
            if isinstance(call, dict):
                stubs += self._gemini_call(cast(Json, x), y, place, i >= last_turn)
                continue
            response = cast(Json, x).get("functionResponse") if isinstance(x, dict) else None
            if not isinstance(response, dict) or not isinstance(y, dict):
                self._same_or_raise(x, y, place)
                continue
            if list(cast(Json, x)) != list(cast(Json, y)):
                raise Violation(f"{place}: keys {list(cast(Json, x))} became {list(y)}")
            ra, rb = cast(Json, response), cast(Json, y).get("functionResponse")
            if not isinstance(rb, dict):
                raise Violation(f"{place}: a functionResponse became {str(rb)[:80]!r}")
            rbd = cast(Json, rb)
            if not _same(ra.get("response"), rbd.get("response")):
                stub = cast(Json, rbd.get("response"))
                if not isinstance(stub, dict) or list(stub) != ["output"]:
                    raise Violation(f"{place}: a stubbed response is {str(stub)[:120]!r}")
            # compared as the other dialects' results: the content, here the response's text
            flat_a = {**ra, "response": _response_text(ra.get("response"))}
            flat_b = {**rbd, "response": _response_text(rbd.get("response"))}
            if _same(ra.get("response"), rbd.get("response")):
                flat_b["response"] = flat_a["response"]
            call = str(ra.get("id"))
            stubs += self._result(flat_a, flat_b, "response", call, unread, place, names)
        return stubs

    def _gemini_call(self, a: Json, b: Any, where: str, recent: bool) -> int:
        """A ``functionCall`` part: as sent, or its ``args`` elided as the proxy may (not in the
        last model turn, ``recent``; the same bytes once elided); the call is known by its id,
        else by its place. Returns 1 when its input is elided."""
        call = cast(Json, a["functionCall"])
        key = str(call.get("id") or where)
        if _same(a, b):
            return self._input(key, call.get("args"), call.get("args"), where, recent)
        other = cast(Json, b).get("functionCall") if isinstance(b, dict) else None
        if not isinstance(other, dict) or list(cast(Json, b)) != list(a):
            return self._same_or_raise(a, b, where)
        theirs = cast(Json, other)
        if list(theirs) != list(call) or "args" not in call:
            return self._same_or_raise(a, b, where)
        for k in call:
            if k != "args":
                self._same_or_raise(call[k], theirs[k], f"{where}.functionCall.{k}")
        for k in a:
            if k != "functionCall":
                self._same_or_raise(a[k], cast(Json, b)[k], f"{where}.{k}")
        return self._input(key, call["args"], theirs["args"], where, recent)

    def _input(self, call_id: str, va: Any, vb: Any, where: str, recent: bool) -> int:
        """A call's input ``va`` as the client sent it and ``vb`` as forwarded: the same (and
        never elided before), or elided as the proxy may — not in the last assistant turn
        (``recent``), :func:`elided_from`, the same bytes once elided. Returns 1 when elided."""
        if _same(va, vb):
            if call_id in self.inputs:
                raise Violation(f"{where}: the input of {call_id}, elided before, came whole")
            return 0
        if recent:
            raise Violation(f"{where}: the input of {call_id} in the last turn was elided")
        if not elided_from(va, vb):
            raise Violation(f"{where}: the input of {call_id} changed: {str(vb)[:160]!r}")
        if call_id in self.inputs and not _same(self.inputs[call_id], vb):
            raise Violation(f"{where}: the elided input of {call_id} changed")
        self.inputs[call_id] = vb
        return 1

    def _call_or_raise(self, a: Any, b: Any, where: str, recent: bool) -> int:
        """``b`` is ``a``, or ``a`` holds tool calls (an Anthropic ``tool_use`` block, a
        Responses call item, a Chat assistant message) whose inputs ``b`` elides as the proxy
        may (:func:`elided_from`: not in the last assistant turn, ``recent``; the same bytes
        once elided). Returns how many inputs are elided."""
        if _same(a, b):
            for call_id, _, value in _call_inputs(self.dialect, a):
                self._input(call_id, value, value, where, recent)
            return 0
        if not isinstance(a, dict) or not isinstance(b, dict):
            return self._same_or_raise(a, b, where)
        ins_a, ins_b = _call_inputs(self.dialect, a), _call_inputs(self.dialect, b)
        if not ins_a or [c for c, _, _ in ins_a] != [c for c, _, _ in ins_b]:
            return self._same_or_raise(a, b, where)
        elided = 0
        rest_a, rest_b = json.loads(json.dumps(a)), json.loads(json.dumps(b))
        for (call_id, path, va), (_, _, vb) in zip(ins_a, ins_b, strict=True):
            _set(rest_a, path, None)
            _set(rest_b, path, None)
            elided += self._input(call_id, va, vb, where, recent)
        self._same_or_raise(rest_a, rest_b, where)
        return elided

    def _same_or_raise(self, a: Any, b: Any, where: str) -> int:
        if not _same(a, b):
            place = _first_difference(a, b, where)
            raise Violation(f"{_what(place)}: {place}")
        return 0

    def _result(
        self,
        a: Json,
        b: Any,
        key: str,
        call_id: str,
        unread: bool,
        where: str,
        names: Mapping[str, str],
    ) -> int:
        """A tool result: 1 if ``b`` carries a stub in place of its content (0: as sent)."""
        if not isinstance(b, dict) or list(a) != list(cast(Json, b)):
            raise Violation(f"{where}: the result of {call_id} became {str(b)[:120]!r}")
        bd = cast(Json, b)
        for k in a:
            if k != key and not _same(a[k], bd[k]):
                place = _first_difference(a[k], bd[k], f"{where}.{k}")
                raise Violation(f"{_what(place)}: {place}")
        if key not in a or _same(a[key], bd[key]):
            if call_id in self.stubs:
                raise Violation(
                    f"{where}: the stub of {call_id} was not sent again (its result went in full)"
                )
            return 0
        stub = bd[key]
        marker = _last_marker(a[key])
        carried: object = None
        if isinstance(stub, list) and len(cast(list[Any], stub)) == 1:
            # a stub carrying the breakpoint its result's blocks carried: one text block
            block = cast(list[Any], stub)[0]
            if isinstance(block, dict) and set(cast(Json, block)) == {
                "type",
                "text",
                "cache_control",
            }:
                carried, stub = cast(Json, block)["cache_control"], cast(Json, block)["text"]
        if not isinstance(stub, str) or not stub.startswith(STUB):
            raise Violation(
                f"{where}: the content of {call_id}'s result changed, and not to a stub: "
                f"{str(stub)[:120]!r}"
            )
        if unread:
            raise Violation(f"{where}: a result the model has not read yet ({call_id}) was stubbed")
        if marker is not None and carried != marker:
            raise Violation(
                f"{where}: a cache_control marker inside the result of {call_id} was dropped with "
                "its content (stubbed)"
            )
        if marker is None and carried is not None:
            raise Violation(f"{where}: the stub of {call_id} carries a marker its result did not")
        first = self.stubs.setdefault(call_id, stub)
        if first != stub:
            raise Violation(
                f"{where}: the stub of {call_id} changed between requests: "
                f"{first!r} became {stub!r}"
            )
        name = names.get(call_id)
        if not stub.startswith(f"{STUB} {name} "):
            raise Violation(
                f"{where}: the stub of {call_id} does not name its call ({name}): {stub!r}"
            )
        return 1


def _response_text(response: object) -> object:
    """A Gemini ``response``'s ``output`` when it is the stub's shape, else the object."""
    if isinstance(response, dict) and list(cast(Json, response)) == ["output"]:
        return cast(Json, response)["output"]
    return response


def _gemini_parts(body: Json, kind: str) -> list[list[Json]]:
    """Each content's ``kind`` parts (``functionCall``, ``functionResponse``), in order."""
    return [
        [
            cast(Json, p[kind])
            for p in cast(list[Any], cast(Json, c).get("parts") or [])
            if isinstance(p, dict) and isinstance(cast(Json, p).get(kind), dict)
        ]
        for c in cast(list[Any], body.get("contents") or [])
        if isinstance(c, dict)
    ]


def _last_marker(content: object) -> object:
    """The last ``cache_control`` among a result's content blocks (None: none carries one)."""
    found: object = None
    for block in cast(list[Any], content) if isinstance(content, list) else []:
        if isinstance(block, dict) and "cache_control" in block:
            found = cast(Json, block)["cache_control"]
    return found


def _tool_names(dialect: Dialect, items: Sequence[Any]) -> dict[str, str]:
    """Call id → the name of the tool called, for every call in ``items``."""
    out: dict[str, str] = {}
    for item in items:
        it = cast(Json, item) if isinstance(item, dict) else {}
        if dialect == "responses" and it.get("type") in CALL_KINDS:
            out[str(it.get("call_id"))] = str(it.get("name"))
        elif dialect == "anthropic" and isinstance(it.get("content"), list):
            for block in cast(list[Any], it["content"]):
                b = cast(Json, block) if isinstance(block, dict) else {}
                if b.get("type") == "tool_use":
                    out[str(b.get("id"))] = str(b.get("name"))
        elif dialect == "chat":
            for call in cast(list[Any], it.get("tool_calls") or []):
                c = cast(Json, call)
                out[str(c.get("id"))] = str(cast(Json, c.get("function") or {}).get("name"))
        elif dialect == "gemini":
            for calls in _gemini_parts({"contents": [it]}, "functionCall"):
                out.update({str(c.get("id")): str(c.get("name")) for c in calls})
    return out


def _is_result(dialect: Dialect, item: Json) -> bool:
    if dialect == "responses":
        return item.get("type") in RESULT_KINDS
    return dialect == "chat" and item.get("role") == "tool"


def _is_model_turn(dialect: Dialect, item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    it = cast(Json, item)
    if dialect == "responses":
        return (
            it.get("type") in CALL_KINDS
            or it.get("type") == "reasoning"
            or it.get("role") == "assistant"
        )
    return it.get("role") == ("model" if dialect == "gemini" else "assistant")


def _pairs(dialect: Dialect, body: Json) -> None:
    """Every tool call is paired with its result: the same ids, in the same order."""
    if dialect == "gemini":
        calls, answers = (
            _gemini_parts(body, "functionCall"),
            _gemini_parts(body, "functionResponse"),
        )
        for i, turn in enumerate(calls):
            after = [str(r.get("id")) for r in answers[i + 1]] if i + 1 < len(answers) else None
            ids = [str(c.get("id")) for c in turn]
            if ids and after is not None and ids != after:
                raise Violation(f"contents[{i}]: calls {ids} are answered by {after}")
            if answers[i] and (i == 0 or not calls[i - 1]):
                raise Violation(f"contents[{i}]: results answer no call")
        return
    if dialect == "responses":
        items = [
            cast(Json, x) for x in cast(list[Any], body.get("input") or []) if isinstance(x, dict)
        ]
        calls = [str(x.get("call_id")) for x in items if x.get("type") in CALL_KINDS]
        results = [str(x.get("call_id")) for x in items if x.get("type") in RESULT_KINDS]
        if calls != results:
            raise Violation(
                f"calls {calls[-4:]} and results {results[-4:]} are not paired in order"
            )
        pending: set[str] = set()
        for x in items:
            if x.get("type") in CALL_KINDS:
                pending.add(str(x.get("call_id")))
            elif x.get("type") in RESULT_KINDS and str(x.get("call_id")) not in pending:
                raise Violation(f"the result of {x.get('call_id')} comes before its call")
        return
    messages = [
        cast(Json, m) for m in cast(list[Any], body.get("messages") or []) if isinstance(m, dict)
    ]
    for i, m in enumerate(messages):
        if m.get("role") != "assistant":
            continue
        if dialect == "anthropic":
            content = m.get("content")
            blocks = cast(list[Json], content) if isinstance(content, list) else []
            calls = [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
            following = messages[i + 1].get("content") if i + 1 < len(messages) else None
            after = cast(list[Json], following) if isinstance(following, list) else []
            results = [str(b.get("tool_use_id")) for b in after if b.get("type") == "tool_result"]
        else:
            calls = [
                str(cast(Json, c).get("id")) for c in cast(list[Any], m.get("tool_calls") or [])
            ]
            results = []
            for n in messages[i + 1 :]:
                if n.get("role") != "tool":
                    break
                results.append(str(n.get("tool_call_id")))
        if calls and i + 1 < len(messages) and calls != results:
            raise Violation(f"message {i}: calls {calls} are answered by {results}")
        if not calls and results:
            raise Violation(f"message {i + 1}: results {results} answer no call")


def isolation(tags: Mapping[str, str], bodies: Mapping[str, set[bytes]]) -> list[str]:
    """Conversations that saw another's text: ``tags`` names each one's, ``bodies`` the tags
    found in each one's forwarded bodies."""
    out: list[str] = []
    for name, found in bodies.items():
        own = tags[name].encode()
        for other in sorted(found - {own}):
            out.append(f"{name}: a forwarded body holds {other.decode()} (another conversation's)")
    return out


# ---- the rig: a recording upstream ----------------------------------------------------------


@dataclass
class Seen:
    """A request as the upstream received it."""

    path: str
    encoding: str
    body: bytes
    """Decoded (per its Content-Encoding)."""
    problem: str | None
    """Why ``body`` could not be decoded (then it is the raw bytes)."""
    answer: bytes


class _UpstreamServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # 16 conversations connect at once (socketserver's default: 5)
    seen: dict[str, Seen]
    lock: threading.Lock


class _Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _UpstreamServer  # pyright: ignore[reportIncompatibleVariableOverride]

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        encoding = self.headers.get("content-encoding", "")
        try:
            body, problem = decompress(raw, encoding), None
        except ValueError as exc:
            body, problem = raw, str(exc)
        try:
            request = cast(Json, parse(body))
        except (ValueError, UnicodeDecodeError):
            request = {}
        dialect = _dialect_of(self.path)
        stream = request.get("stream") is True or ":streamGenerateContent" in self.path
        tokens = max(1, len(body) // 4)
        counting = self.path.split("?", 1)[0].endswith("/count_tokens")
        events = [json.dumps({"input_tokens": tokens}).encode()] if counting else None
        events = events or _answer(dialect, stream, tokens)
        payload = b"".join(events)
        with self.server.lock:
            self.server.seen[self.headers.get(ID_HEADER, "")] = Seen(
                self.path, encoding, body, problem, payload
            )
        self.send_response(200)
        self.send_header("content-type", "text/event-stream" if stream else "application/json")
        if stream:
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for event in events:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    do_GET = do_POST


def _dialect_of(path: str) -> Dialect:
    where = path.split("?", 1)[0]
    if where.endswith("/messages"):
        return "anthropic"
    if where.endswith(("GenerateContent", ":generateContent")):
        return "gemini"
    return "responses" if where.endswith("/responses") else "chat"


def _sse(event: str | None, data: Json) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _answer(dialect: Dialect, stream: bool, tokens: int) -> list[bytes]:
    """A minimal valid reply with usage: its pieces (SSE events, or one JSON body)."""
    if dialect == "gemini":
        usage = {"promptTokenCount": tokens, "candidatesTokenCount": 3,
                 "totalTokenCount": tokens + 3}  # fmt: skip
        answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]},
                                  "finishReason": "STOP", "index": 0}],
                  "usageMetadata": usage, "modelVersion": "gemini-3.1-pro-preview"}  # fmt: skip
        return [(b"data: %s\r\n\r\n" if stream else b"%s") % json.dumps(answer).encode()]
    if dialect == "anthropic":
        usage = {
            "input_tokens": tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 3,
        }
        message = {
            "id": "msg_fuzz",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        if not stream:
            return [json.dumps(message).encode()]
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {**usage, "output_tokens": 1},
        }
        return [
            _sse("message_start", {"type": "message_start", "message": start}),
            _sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
            ),
            _sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": "ok"},
                },
            ),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 3},
                },
            ),
            _sse("message_stop", {"type": "message_stop"}),
        ]
    if dialect == "responses":
        usage = {
            "input_tokens": tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 3,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens + 3,
        }
        item = {
            "id": "msg_fuzz",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        }
        response = {
            "id": "resp_fuzz",
            "object": "response",
            "status": "completed",
            "model": "gpt-5-codex",
            "output": [item],
            "usage": usage,
        }
        if not stream:
            return [json.dumps(response).encode()]
        created = {**response, "status": "in_progress", "output": [], "usage": None}
        return [
            _sse("response.created", {"type": "response.created", "response": created}),
            _sse(
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ),
            _sse("response.completed", {"type": "response.completed", "response": response}),
        ]
    usage = {"prompt_tokens": tokens, "completion_tokens": 3, "total_tokens": tokens + 3}
    if not stream:
        completion = {
            "id": "chatcmpl-fuzz",
            "object": "chat.completion",
            "model": "gpt-4.1",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "ok"},
                    "finish_reason": "stop",
                }
            ],
            "usage": usage,
        }
        return [json.dumps(completion).encode()]
    chunk = {"id": "chatcmpl-fuzz", "object": "chat.completion.chunk", "model": "gpt-4.1"}
    return [
        _sse(
            None,
            {
                **chunk,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"role": "assistant", "content": "ok"},
                        "finish_reason": None,
                    }
                ],
            },
        ),
        _sse(None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        _sse(None, {**chunk, "choices": [], "usage": usage}),
        b"data: [DONE]\n\n",
    ]


class RecordingUpstream:
    """A model API on 127.0.0.1 that records every request by its ``x-veil-fuzz`` header."""

    def __init__(self) -> None:
        self.server = _UpstreamServer(("127.0.0.1", 0), _Upstream)
        self.server.seen = {}
        self.server.lock = threading.Lock()
        self.thread = threading.Thread(
            target=self.server.serve_forever, name="fuzz-upstream", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def take(self, request_id: str) -> Seen | None:
        """The request named ``request_id`` as received (forgotten here once taken)."""
        with self.server.lock:
            return self.server.seen.pop(request_id, None)

    def __enter__(self) -> RecordingUpstream:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


# ---- the rig: the real `veil proxy` ----------------------------------------------------------


class VeilProxy:
    """``veil proxy --upstream URL --window N`` as a subprocess, in a fresh directory (its
    ``.veil/context.db``), with ``env`` added to this process's environment; its stderr kept
    (:attr:`stderr`)."""

    def __init__(
        self,
        upstream: str,
        *,
        window: int,
        env: Mapping[str, str] | None = None,
        root: Path | None = None,
        record: bool = True,
    ) -> None:
        self.upstream = upstream
        self.window = window
        self.env = None if env is None else {**os.environ, **env}
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if root is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="veil-proxy-")
            root = Path(self._tmp.name)
        self.root = root
        """Its directory (``.veil/context.db``): a fresh one unless given (then kept)."""
        self.err_path = self.root / f"stderr-{os.getpid()}-{id(self)}.txt"
        self.record = record
        self.url = ""
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.requests: list[Mapping[str, Any]] = []
        """Its ``proxy.request`` events' payloads, read once it has stopped (with ``record``)."""

    @staticmethod
    def command() -> list[str]:
        veil = Path(sys.executable).with_name("veil")
        base = [str(veil)] if veil.exists() else [sys.executable, "-m", "veil.cli.main"]
        return [*base, "proxy"]

    def __enter__(self) -> VeilProxy:
        args = [*self.command(), "--upstream", self.upstream, "--window", str(self.window)]
        with self.err_path.open("wb") as err:
            self.process = subprocess.Popen(
                args, cwd=self.root, env=self.env, stdout=subprocess.PIPE, stderr=err
            )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().decode("utf-8", "replace")
        found = re.search(r"http://127\.0\.0\.1:\d+", line)
        if found is None:
            self.__exit__()
            raise RuntimeError(f"veil proxy did not start: {line!r}\n{self.stderr}")
        self.url = found[0]
        self.port = int(self.url.rsplit(":", 1)[1])
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()
        if self.record:
            self.requests = self._recorded()
        if self._tmp is not None:
            self._tmp.cleanup()

    def _recorded(self) -> list[Mapping[str, Any]]:
        """The ``proxy.request`` events it wrote (none when its store cannot be read)."""
        from veil.tape import open_store  # the rig's one import of veil: the checker knows none

        path = self.root / ".veil" / "context.db"
        if not path.exists():
            return []
        store = open_store(f"sqlite:///{path}")
        try:
            return [
                e.payload for s in store.scopes() for e in store.read(s, kinds=["proxy.request"])
            ]
        except Exception:
            return []
        finally:
            store.close()

    def rss_mb(self) -> float | None:
        """The proxy's resident memory now, in MB (None where ``/proc`` does not say)."""
        if self.process is None:
            return None
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return None
        found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        return round(int(found[1]) / 1024, 1) if found else None

    @property
    def stderr(self) -> str:
        return self.err_path.read_text("utf-8", "replace") if self.err_path.exists() else ""


# ---- driving conversations through it --------------------------------------------------------


@dataclass
class Tally:
    """What a run through the proxy saw (per dialect, or all)."""

    conversations: int = 0
    requests: int = 0
    bodies_checked: int = 0
    unchanged: int = 0
    stubbed_bodies: int = 0
    """Forwarded bodies with at least one stub."""
    stubs: int = 0
    """Stubs over all forwarded bodies."""
    stubbed_calls: int = 0
    """Distinct results ever stubbed."""
    reserialised: int = 0
    """Stubbed bodies not spliced in place: the client's other bytes (its layout) changed.
    Allowed only for a client that does not write compact JSON (a violation otherwise)."""
    compressed: dict[str, int] = field(default_factory=dict)
    also: dict[str, int] = field(default_factory=dict)
    """Requests sent besides the conversation's own: token counts, retries."""
    violations: list[str] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in (
            "conversations",
            "requests",
            "bodies_checked",
            "unchanged",
            "stubbed_bodies",
            "stubs",
            "stubbed_calls",
            "reserialised",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for k, v in other.compressed.items():
            self.compressed[k] = self.compressed.get(k, 0) + v
        for k, v in other.also.items():
            self.also[k] = self.also.get(k, 0) + v
        self.violations += other.violations

    def as_json(self, *, keep: int = 20) -> Json:
        return {
            "conversations": self.conversations,
            "requests": self.requests,
            "bodies_checked": self.bodies_checked,
            "unchanged": self.unchanged,
            "stubbed_bodies": self.stubbed_bodies,
            "stubs": self.stubs,
            "stubbed_calls": self.stubbed_calls,
            "reserialised": self.reserialised,
            "compressed": dict(sorted(self.compressed.items())),
            "also": dict(sorted(self.also.items())),
            "violations": len(self.violations),
            "violation_examples": self.violations[:keep],
        }


@dataclass
class Driven:
    """One conversation driven through the proxy."""

    name: str
    dialect: Dialect
    tag: str
    tally: Tally
    pointers: set[str]
    tags_seen: set[bytes]


def _connect(url: str) -> http.client.HTTPConnection:
    host, port = url.removeprefix("http://").split(":")
    return http.client.HTTPConnection(host, int(port), timeout=TIMEOUT_S)


def drive(
    proxy_url: str, upstream: RecordingUpstream, conversation: Conversation, requests: int
) -> Driven:
    """Send ``requests`` requests of ``conversation`` through the proxy, one after the other on
    one keep-alive connection, and check each forwarded body; a violation ends the
    conversation (every later body would repeat it)."""
    tally = Tally(conversations=1)
    checker = Checker(conversation.dialect, conversation.layout)
    tags: set[bytes] = set()
    connection = _connect(proxy_url)
    try:
        for _ in range(requests):
            problem = None
            for request in conversation.next_requests():
                tally.requests += 1
                if request.kind:
                    tally.also[request.kind] = tally.also.get(request.kind, 0) + 1
                if request.encoding:
                    tally.compressed[request.encoding] = (
                        tally.compressed.get(request.encoding, 0) + 1
                    )
                problem = _exchange(connection, request, upstream, checker, tally, tags)
                if problem is not None:
                    where = f"{request.id} ({request.dialect} {request.path})"
                    tally.violations.append(f"{where}: {problem}")
                    break
            if problem is not None:
                break
    finally:
        connection.close()
    tally.stubbed_calls = len(checker.stubs)
    return Driven(
        conversation.name,
        conversation.dialect,
        conversation.style.tag,
        tally,
        checker.pointers,
        tags,
    )


def _exchange(
    connection: http.client.HTTPConnection,
    request: Request,
    upstream: RecordingUpstream,
    checker: Checker,
    tally: Tally,
    tags: set[bytes],
) -> str | None:
    headers = {"content-type": "application/json", ID_HEADER: request.id, **request.headers}
    if request.encoding:
        headers["content-encoding"] = request.encoding
    try:
        connection.request("POST", request.path, body=request.wire, headers=headers)
        response = connection.getresponse()
        answer = response.read()
    except (OSError, http.client.HTTPException) as exc:
        return f"the proxy's answer broke ({type(exc).__name__}: {exc})"
    seen = upstream.take(request.id)
    if seen is None:
        return f"the upstream never got it (the proxy answered {response.status}: {answer[:200]!r})"
    if response.status != 200 or answer != seen.answer:
        return f"the client got {response.status} {answer[:200]!r}, not the upstream's answer"
    if seen.problem is not None:
        return seen.problem
    if seen.path != request.path:
        return f"forwarded to {seen.path}, not {request.path}"
    try:
        checked = checker.check(request.body, seen.body)
    except Violation as exc:
        return str(exc)
    tally.bodies_checked += 1
    tally.unchanged += checked.unchanged
    tally.stubs += checked.stubs
    tally.stubbed_bodies += checked.stubs > 0
    tally.reserialised += not checked.exact
    tags.update(TAG.findall(seen.body))
    return None


@dataclass
class Run:
    """Conversations driven through one proxy, and what they add up to."""

    driven: list[Driven] = field(default_factory=list)

    def by_dialect(self) -> dict[str, Tally]:
        out: dict[str, Tally] = {d: Tally() for d in DIALECTS}
        for d in self.driven:
            out[d.dialect].add(d.tally)
        return out

    def total(self) -> Tally:
        total = Tally()
        for d in self.driven:
            total.add(d.tally)
        return total

    def isolation(self) -> list[str]:
        """Conversations that saw another's text, or share a stub's pointer with another."""
        out = isolation(
            {d.name: d.tag for d in self.driven}, {d.name: d.tags_seen for d in self.driven}
        )
        owner: dict[str, str] = {}
        for d in self.driven:
            for pointer in d.pointers:
                other = owner.setdefault(pointer, d.name)
                if other != d.name:
                    out.append(f"{d.name} and {other} were both sent a stub pointing at {pointer}")
        return out


def conversations(
    dialect: Dialect, seed: int, count: int, prefix: str = ""
) -> Iterator[Conversation]:
    for i in range(count):
        yield CONVERSATIONS[dialect](seed, f"{prefix}{dialect}-{seed}-{i}")


def run_sequentially(
    proxy_url: str,
    upstream: RecordingUpstream,
    dialect: Dialect,
    seeds: Sequence[int],
    requests: int,
) -> Run:
    """One conversation per seed, each grown ``requests`` requests, one after the other."""
    run = Run()
    for seed in seeds:
        for conversation in conversations(dialect, seed, 1):
            run.driven.append(drive(proxy_url, upstream, conversation, requests))
    return run


def run_concurrently(
    proxy_url: str, upstream: RecordingUpstream, seed: int, count: int, requests: int
) -> Run:
    """``count`` conversations (the dialects in turn) at the same time, one thread each; the
    Anthropic ones all in one client session (a main agent and its subagents, which differ by
    their first message)."""
    session = f"{random.Random(seed).getrandbits(128):032x}"
    chosen = [
        AnthropicConversation(seed, f"together-anthropic-{seed}-{i}", session=session)
        if DIALECTS[i % len(DIALECTS)] == "anthropic"
        else CONVERSATIONS[DIALECTS[i % len(DIALECTS)]](
            seed, f"together-{DIALECTS[i % len(DIALECTS)]}-{seed}-{i}"
        )
        for i in range(count)
    ]
    with ThreadPoolExecutor(max_workers=count) as pool:
        driven = list(pool.map(lambda c: drive(proxy_url, upstream, c, requests), chosen))
    return Run(driven)
