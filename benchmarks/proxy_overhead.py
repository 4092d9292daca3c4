"""The latency Veil's proxy adds to a request, upstream time excluded.

Run from the repository root::

    python -m benchmarks.proxy_overhead            # 2,000 results, ~200k tokens
    python -m benchmarks.proxy_overhead --quick    # 300 results (inside ``make test``)

A Claude Code-like conversation (Anthropic Messages: a system prompt and tool schemas of
Claude Code's size, then one assistant tool call and one tool result per step — Read, Bash,
Grep, Glob, Edit on seeded files and commands, results of 20 to 400 tokens, about 100 on
average) grows one step per request, as an agent's does: request ``k`` carries ``k`` results.
Every request goes through exactly what ``veil proxy`` does to it before forwarding —
:func:`veil.proxy.wire.parse` (JSON decode, the conversation's entries), then
:meth:`veil.proxy.session.Conversations.prepare` (capture of the new result with redaction and
embedding, the measure, a batch of evictions when over the budget, the stubs, the byte-exact
splice) — on a real SQLite ``.veil/context.db`` in a temporary directory, with the shipped
embedder, at a 150,000-token window (``veil claude``'s default), so batches of evictions happen
during the run and are in the figures.

Each request is prepared as the proxy server prepares it (``ahead=True``): one that Veil's
bookkeeping would not change goes out ahead of it (:mod:`veil.proxy.conversation`: parse, the
stubs already sent spliced in again, nothing more), and its bookkeeping — the capture, the
measure, the turn boundary — runs once the answer is relayed (``ahead`` counts them). That
bookkeeping (``bookkeeping_after_ms``) and the store's writes (the tape events of the request,
``background_writes_ms``) run while the model answers or the agent's tools run, as under an
agent, whose model takes seconds; here the upstream takes no time, so they are waited for
between requests, outside the timing, and timed on their own: left to run into the next
request they would stand for GIL contention that an agent session does not have.

Reported per request: p50 / p95 / max milliseconds over the newest tenth of the run (the
largest conversations: 1,800–2,000 results, 180–200k tokens in the full run) and over the
whole run, and, measured in the same run on the same bodies, a baseline: ``orjson`` decoding
and encoding the whole body (what a proxy that reads every request in full pays; Veil's reads
only what follows the bytes the conversation's last request shares, :mod:`veil.proxy.reading`).

The end-to-end figure: the newest 50 requests sent over HTTP on 127.0.0.1 to an upstream that
answers at once, directly and through a :class:`veil.proxy.server.ProxyServer` (requests run
sequentially, keep-alive off on both paths); the difference of the medians is what the proxy
adds, HTTP included. Through the proxy twice: paced (each request once the proxy is idle: what
it does after an answer runs while an agent's tools and model take seconds), and back to back
(each request while the last one's bookkeeping, usage record and store writes still run — in
this process they also take turns for the interpreter with the client that times it).

Results: ``benchmarks/results/proxy_overhead.json`` (``proxy_overhead-quick.json``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson

from benchmarks.lib import timing
from benchmarks.lib.machine import describe, load_average
from benchmarks.lib.report.proxy_overhead import table
from benchmarks.lib.results import save

WINDOW = 150_000
FULL_STEPS = 2_000
QUICK_STEPS = 300
E2E_REQUESTS = 50
SYSTEM_TOKENS = 3_000
TOOLS_TOKENS = 12_000
Json = dict[str, Any]
WORDS = [
    "def",
    "return",
    "self",
    "value",
    "import",
    "class",
    "for",
    "in",
    "if",
    "else",
    "None",
    "True",
    "False",
    "path",
    "config",
    "item",
    "result",
    "token",
    "cache",
    "store",
    "event",
    "error",
    "test",
    "assert",
    "json",
    "list",
    "dict",
    "str",
    "int",
    "float",
    "open",
    "read",
    "write",
    "line",
    "file",
    "module",
    "engine",
    "window",
    "budget",
    "score",
    "tier",
    "live",
    "warm",
    "cold",
    "stub",
    "pointer",
]


def _text(rnd: random.Random, tokens: int) -> str:
    """Code-like lines of about ``tokens`` tokens (4 characters each), every line unique."""
    lines: list[str] = []
    size = 0
    n = 0
    while size < tokens * 4:
        words = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 9)))
        line = f"{n:5d}  {words} = {rnd.randint(0, 10**9)}"
        lines.append(line)
        size += len(line) + 1
        n += 1
    return "\n".join(lines)


def steps(n: int, seed: int = 20261202) -> list[tuple[Json, Json]]:
    """``n`` (assistant tool call, tool result) message pairs."""
    rnd = random.Random(seed)
    out: list[tuple[Json, Json]] = []
    for k in range(n):
        kind = rnd.choice(("Read", "Read", "Bash", "Grep", "Glob", "Edit"))
        path = f"src/pkg/module_{rnd.randint(0, 400)}.py"
        inputs: Json = {
            "Read": {"file_path": path},
            "Bash": {"command": f"pytest tests/test_{rnd.randint(0, 90)}.py -q"},
            "Grep": {"pattern": rnd.choice(WORDS), "path": "src"},
            "Glob": {"pattern": f"src/**/*{rnd.choice(WORDS)}*.py"},
            "Edit": {"file_path": path, "old_string": "a = 1", "new_string": "a = 2"},
        }[kind]
        tokens = max(20, min(400, int(rnd.lognormvariate(4.15, 0.6))))
        call_id = f"toolu_{k:06d}{rnd.randrange(16**12):012x}"
        assistant = {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Step {k}: {kind}."},
                {"type": "tool_use", "id": call_id, "name": kind, "input": inputs},
            ],
        }
        result = {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": _text(rnd, tokens)}
            ],
        }
        out.append((assistant, result))
    return out


def body(pairs: Sequence[tuple[Json, Json]], fixed: Json, k: int) -> bytes:
    """Request ``k``: the task, then the first ``k`` steps."""
    messages: list[Json] = [{"role": "user", "content": "Refactor the package and run tests."}]
    for assistant, result in pairs[:k]:
        messages += [assistant, result]
    return orjson.dumps({**fixed, "messages": messages})


def fixed_part() -> Json:
    rnd = random.Random(7)
    tools = [
        {
            "name": f"Tool{i}",
            "description": _text(rnd, TOOLS_TOKENS // 20),
            "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}},
        }
        for i in range(20)
    ]
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "stream": True,
        "system": [{"type": "text", "text": _text(rnd, SYSTEM_TOKENS)}],
        "tools": tools,
        "metadata": {"user_id": json.dumps({"session_id": "bench-session"})},
    }


def summary(values_ms: Sequence[float]) -> Json:
    """n, p50, p95 (linear interpolation) and max, milliseconds."""
    return timing.summary(values_ms, ("n", "p50", "p95", "max"), digits=2)


# ---- in process ------------------------------------------------------------------------------


def measure(n: int, root: Path) -> tuple[Json, list[bytes], Any]:
    """Every request of an ``n``-step conversation through parse + prepare; the baseline on the
    same bodies. Returns the figures, the newest bodies (for the end-to-end part) and the
    conversations (kept open for it)."""
    from veil.embed import default_embedder
    from veil.proxy.reading import parse
    from veil.proxy.session import Conversations
    from veil.tape import open_store

    (root / ".veil").mkdir()
    embedder = default_embedder()
    store = open_store(
        f"sqlite:///{root / '.veil' / 'context.db'}?synchronous=normal", embedder=embedder
    )
    conversations = Conversations(store, scope="bench", root=root, window=WINDOW, embedder=embedder)
    pairs = steps(n)
    fixed = fixed_part()
    proxy_ms: list[float] = []
    baseline_ms: list[float] = []
    persist_ms: list[float] = []
    settle_ms: list[float] = []
    went_ahead: list[bool] = []
    sizes: list[int] = []
    evicting: list[bool] = []
    kept: list[bytes] = []
    headers = {"content-type": "application/json"}
    for k in range(1, n + 1):
        raw = body(pairs, fixed, k)
        t0 = time.perf_counter()
        request = parse("anthropic", raw, headers)
        early = conversations.prepare(request, raw, ahead=True)
        proxy_ms.append((time.perf_counter() - t0) * 1000)
        # the bookkeeping of a request that went ahead of it, and the store's background
        # writes, outside the timing: the proxy runs them once the answer is relayed, while
        # the agent's tools and model take seconds; timed on their own
        t0 = time.perf_counter()
        prepared = conversations.settle(early)
        settle_ms.append((time.perf_counter() - t0) * 1000)
        went_ahead.append(early.ahead)
        t0 = time.perf_counter()
        conversation = conversations.known(request)
        if conversation is not None:
            conversation.engine.wait()
        persist_ms.append((time.perf_counter() - t0) * 1000)
        t0 = time.perf_counter()
        orjson.dumps(orjson.loads(raw))
        baseline_ms.append((time.perf_counter() - t0) * 1000)
        sizes.append(prepared.tokens_before)
        evicting.append(prepared.evicted > 0)
        if not prepared.exact:
            raise AssertionError(f"request {k} was not spliced byte-exactly")
        if k > n - E2E_REQUESTS:
            kept.append(raw)
    tail = max(1, n // 10)
    figures: Json = {
        "steps": n,
        "window": WINDOW,
        "tokens_last": sizes[-1],
        "tokens_tail_first": sizes[-tail],
        "batches": sum(evicting),
        "newest_tenth": {
            "proxy_ms": summary(proxy_ms[-tail:]),
            "baseline_ms": summary(baseline_ms[-tail:]),
            "batch_requests": sum(evicting[-tail:]),
            "background_writes_ms": summary(persist_ms[-tail:]),
            "ahead": sum(went_ahead[-tail:]),
            "bookkeeping_after_ms": summary(settle_ms[-tail:]),
        },
        "ahead": sum(went_ahead),
        "all": {"proxy_ms": summary(proxy_ms), "baseline_ms": summary(baseline_ms)},
    }
    return figures, kept, conversations


# ---- over HTTP -------------------------------------------------------------------------------


class _Instant(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    answer = orjson.dumps(
        {"type": "message", "content": [{"type": "text", "text": "ok"}],
         "usage": {"input_tokens": 1, "output_tokens": 1}}
    )  # fmt: skip

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(self.answer)))
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(self.answer)


def _post(port: int, raw: bytes) -> float:
    t0 = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/v1/messages", raw, {"content-type": "application/json",
                                              "connection": "close"})  # fmt: skip
    conn.getresponse().read()
    conn.close()
    return (time.perf_counter() - t0) * 1000


def end_to_end(bodies: Sequence[bytes], conversations: Any) -> Json:
    """The newest requests, directly to an instant upstream and through the proxy."""
    from veil.proxy.server import ProxyServer, Upstream

    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _Instant)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = int(upstream.server_address[1])
    proxy = ProxyServer(Upstream.parse(f"http://127.0.0.1:{port}"), conversations)
    proxy.serve_in_background()
    try:
        direct = [_post(port, raw) for raw in bodies]
        through: list[float] = []
        for raw in bodies:  # paced: what the proxy does after an answer is done, untimed
            proxy.wait_idle(60)
            through.append(_post(proxy.port, raw))
        proxy.wait_idle(60)
        # back to back: each request comes while the last one's bookkeeping, usage record and
        # store writes run (in this process they also take turns with the client timing it)
        rushed = [_post(proxy.port, raw) for raw in bodies]
    finally:
        proxy.shutdown()
        proxy.server_close()
        upstream.shutdown()
        upstream.server_close()
    return {
        "direct_ms": summary(direct),
        "proxy_ms": summary(through),
        "added_p50_ms": round(statistics.median(through) - statistics.median(direct), 2),
        "back_to_back_ms": summary(rushed),
        "back_to_back_added_p50_ms": round(
            statistics.median(rushed) - statistics.median(direct), 2
        ),
    }


# ---- the run ---------------------------------------------------------------------------------


def run(*, quick: bool) -> Json:
    started = time.perf_counter()
    before = describe(load_average=load_average())
    with tempfile.TemporaryDirectory(prefix="veil-proxy-bench-") as tmp:
        figures, kept, conversations = measure(QUICK_STEPS if quick else FULL_STEPS, Path(tmp))
        try:
            figures["end_to_end"] = end_to_end(kept, conversations)
        finally:
            conversations.close()
    figures["quick"] = quick
    figures["machine"] = before
    figures["load_after"] = load_average()
    figures["seconds"] = round(time.perf_counter() - started, 1)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The latency Veil's proxy adds to a request.")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_STEPS} results")
    args = parser.parse_args(argv)
    data = run(quick=args.quick)
    save(data, "proxy_overhead", quick=args.quick)
    print(table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
