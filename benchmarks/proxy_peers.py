"""Veil's proxy beside a published peer, CliffCompaction 0.1.0, each run as the HTTP proxy it is.

Run from the repository root, after ``pip install cliffcompaction==0.1.0``::

    python -m benchmarks.proxy_peers            # set A every 10th, set B every 15th trajectory
    python -m benchmarks.proxy_peers --quick    # the first 3 of each

Every step of a trajectory becomes the Anthropic Messages body a Claude Code-like agent sends
(as :mod:`benchmarks.replay.proxy_policy` builds it; ``metadata.user_id``: one session per
trajectory and budget), sent in order, one at a time, over HTTP on 127.0.0.1 (a new connection
each, the streamed answer read to its end) through three arms, each before its own recording
upstream (threaded, Nagle off: it records every body and answers a minimal Anthropic SSE stream
whose ``input_tokens`` is the body's size in our measure below; ``count_tokens`` too):

- **keep-all**: :class:`veil.proxy.server.ProxyServer` without conversations (forwards every
  body unchanged), in this process: the baseline.
- **veil**: ``veil proxy --upstream URL --window W`` (:class:`benchmarks.lib.proxy_fuzz.VeilProxy`),
  what a user runs: a subprocess per trajectory and budget, as Cliff's, ``W`` the window whose
  request budget is the trajectory's (:func:`window_for`), the shipped embedder, the system
  clock, a project directory of its own per trajectory and budget (a trajectory is a project:
  what one session of a project learns — a file's content, a regret — is that project's). Each
  fresh server gets one untimed warm-up request (which also makes its store's schema).
- Every arm is a process of its own but keep-all: a proxy in this process would take turns for
  the interpreter with the client timing it, and what it does after an answer (Veil's
  bookkeeping of a request that went out ahead of it, :mod:`veil.proxy.conversation`, its usage
  record and its store writes) would be timed as the client's wait. After each request every
  arm gets :data:`PAUSE` untimed (an agent's tools and model take seconds between requests);
  a request that comes before a proxy's work is done waits for it, and is timed so.
- **cliff**: ``python -m cliffcompaction serve --threshold BUDGET --anthropic-upstream URL``, a
  subprocess per trajectory and budget (the threshold is process-wide), HOME and XDG
  directories in a temporary directory. Each fresh server gets one untimed warm-up request.

Budget: :func:`benchmarks.replay.harness.budget_for` at f = 0.5 and 0.625, the same number to
both; Cliff counts it as ``len(json.dumps(body)) // 4`` (``cliff_estimate_over_ours``: that
count over ours on the keep-all bodies). Each arm's :class:`benchmarks.replay.policies.Run` is
rebuilt from what its upstream received, the same way for all. Tokens:
:func:`veil.tokens.estimate_tokens` of every text the model reads (system, string contents,
text blocks, ``tool_result`` contents, a ``tool_use`` as its name + JSON input). Observation
``j`` is verbatim iff its exact text is the ``tool_result`` of its id, or a summary carries it
whole as one entry ``result: TEXT`` (Cliff's format; Cliff strips it, so compared stripped).
Cached prefix: segment by segment (:class:`~benchmarks.replay.policies.PrefixTracker`), a
segment being one of those texts with its kind and message index (a re-encoding of the JSON
is no change).

Per set x f x arm, summed over trajectories: tokens sent / keep-all's; the need-based miss rate
(:mod:`benchmarks.replay.needs`, pooled over needs); input cost with prompt caching
(:func:`~benchmarks.replay.policies.run_cost`) / keep-all's; requests, rewritten requests,
errors (not 200, or not one body forwarded), requests over the budget in our measure; client
round trips p50/p95 ms and the ms added: the arm's round trip minus keep-all's for the same
request (the three go back to back, their order rotated every step). Round trips include the
upstream's parse and count, alike in every arm. Results: ``benchmarks/results/proxy_peers.json``
(``proxy_peers-quick.json``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import version
from pathlib import Path
from typing import Any, cast

from benchmarks.lib import timing
from benchmarks.lib.machine import describe, load_average, source_state
from benchmarks.lib.proxy_fuzz import VeilProxy
from benchmarks.lib.report.proxy_peers import table
from benchmarks.lib.results import save
from benchmarks.replay.harness import budget_for
from benchmarks.replay.load import Trajectory, load
from benchmarks.replay.needs import Need, detect_needs, misses
from benchmarks.replay.policies import PrefixTracker, Run, Segment, run_cost
from benchmarks.replay.proxy_policy import as_agent_calls
from veil.context.budget import request_budget
from veil.proxy.server import ProxyServer, Upstream, free_port
from veil.replay.proxy import call_id
from veil.tokens import estimate_tokens

FRACTIONS = (0.5, 0.625)
SAMPLES = {"A": 10, "B": 15}
QUICK_LIMIT = 3
ARMS = ("keep-all", "veil", "cliff")
PATH = "/v1/messages"
PEER = ("python", "-m", "cliffcompaction", "serve")
PAUSE = 0.025
"""Seconds after each request, untimed: an agent's tools and model take seconds between two
requests, and what a proxy does once an answer is relayed (Veil's bookkeeping of a request that
went ahead of it, its usage record and store writes) runs then, not into the next request."""
PROXY_ID = re.compile(r"proxy-[0-9a-f]{16}")
NUMBER = re.compile(r"\d[\d,.]*")
"""Veil's log lines are counted by kind: its conversations and figures are left out."""
SEPARATOR, RESULT = "\n\n---\n\n", "result: "
"""How Cliff's summary separates its entries, and how an entry that is a tool result starts."""
LOG_LINE = re.compile(r" cliff (\w+) (compact \([^)]*\)|[^:(~]+)")
"""A Cliff log line's level and what it says (counted by kind in the result's ``logs``)."""
SSE = (
    'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_bench","type":'
    '"message","role":"assistant","model":"replay","content":[],"usage":{"input_tokens":%d,'
    '"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":1}}}\n\n'
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    '"content_block":{"type":"text","text":""}}\n\n'
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    '"delta":{"type":"text_delta","text":"ok"}}\n\n'
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    '"usage":{"output_tokens":1}}\n\n'
    'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)
Json = dict[str, Any]


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    blocks = cast(list[Json], content) if isinstance(content, list) else []
    return "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")


def parts(sent: Json) -> Iterator[tuple[tuple[object, ...], str]]:
    """(what it is, its text) for every text of a forwarded body the model reads, in order."""
    yield ("system",), _text(sent.get("system", ""))
    for index, message in enumerate(cast(list[Json], sent.get("messages", []))):
        content = message.get("content")
        if not isinstance(content, list):
            yield ("message", index), _text(content)
        for block in cast(list[Json], content if isinstance(content, list) else []):
            kind = block.get("type")
            if kind == "tool_result":
                yield ("tool", block["tool_use_id"]), _text(block.get("content"))
            elif kind == "text":
                yield ("message", index), str(block["text"])
            elif kind == "tool_use":
                call = json.dumps(block.get("input", {}), ensure_ascii=False)
                yield ("call", block["id"]), str(block["name"]) + call


def tokens_of(raw: bytes) -> int:
    return sum(estimate_tokens(text) for _, text in parts(json.loads(raw)))


def prompt(sent: Json, t: Trajectory, k: int) -> tuple[list[Segment], frozenset[int]]:
    """The segments of step ``k``'s forwarded body, and the observations verbatim in it."""
    segments: list[Segment] = []
    live: set[int] = set()
    for key, text in parts(sent):
        segments.append(((*key, text), estimate_tokens(text)))
        if key[0] == "tool":
            j = int(str(key[1]).split("_")[1])
            if text == t.steps[j].observation:
                live.add(j)
        elif key[0] == "message":  # a summary's entries
            for entry in text.split(SEPARATOR):
                if entry.startswith(RESULT) and (found := entry[len(RESULT) :]):
                    live.update(j for j in range(k) if t.steps[j].observation.strip() == found)
    return segments, frozenset(live)


def bodies(t: Trajectory, session: str) -> Iterator[bytes]:
    """Step by step, the body the agent sends (as ``proxy_policy.veil_proxy`` builds it)."""
    messages: list[Json] = [{"role": "user", "content": t.instance}]
    body: Json = {"model": "replay", "max_tokens": 4096, "stream": True, "system": t.system,
                  "messages": messages,
                  "metadata": {"user_id": json.dumps({"session_id": session})}}  # fmt: skip
    for k, s in enumerate(as_agent_calls(t).steps):
        yield json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        use = {"type": "tool_use", "id": call_id(k), "name": s.tool, "input": dict(s.input or {})}
        messages.append(
            {"role": "assistant", "content": [{"type": "text", "text": s.thought}, use]}
        )
        messages.append({"role": "user", "content": [{"type": "tool_result",
                         "tool_use_id": call_id(k), "content": s.observation}]})  # fmt: skip


class Recorder:
    """A threaded upstream on 127.0.0.1 that records each POST body and answers at once."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, bytes]] = []
        self.lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else a client may wait 40 ms for the body

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with recorder.lock:
                    recorder.seen.append((self.path.split("?")[0], body))
                if self.path.split("?")[0].endswith("/count_tokens"):
                    data = json.dumps({"input_tokens": tokens_of(body)}).encode()
                    kind = "application/json"
                else:
                    data, kind = (SSE % tokens_of(body)).encode(), "text/event-stream"
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def take(self) -> list[bytes]:
        """The message bodies received since the last call (side calls are dropped)."""
        with self.lock:
            found = [body for path, body in self.seen if path == PATH]
            self.seen.clear()
        return found

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def post(port: int, body: bytes) -> tuple[int, float]:
    """One request's status and round trip in s (connect to the answer's last byte)."""
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", PATH, body, {"content-type": "application/json", "x-api-key": "sk-x",
                                      "anthropic-version": "2023-06-01"})  # fmt: skip
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status, time.perf_counter() - start


class Cliff:
    """``cliff serve`` in a subprocess with its own HOME, stopped by :meth:`close`."""

    def __init__(self, upstream: str, budget: int, home: Path) -> None:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("CLIFF_") and "proxy" not in k.lower()}  # fmt: skip
        env |= {"HOME": str(home), "NO_PROXY": "127.0.0.1,localhost"}
        env |= {f"XDG_{d.upper()}_HOME": str(home / d) for d in ("config", "cache", "data")}
        command = [sys.executable, *PEER[1:], "--host", "127.0.0.1", "--port", str(self.port),
                   "--threshold", str(budget), "--anthropic-upstream", upstream]  # fmt: skip
        self.log = home / "cliff.log"
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(command, env=env, cwd=home, stdout=out, stderr=out)
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/__cliff__/status")
                status = json.loads(conn.getresponse().read())
                conn.close()
                if status.get("threshold_tokens") != budget:
                    raise RuntimeError(f"cliff serves {status}, not threshold {budget}")
                return
            except (OSError, ValueError) as exc:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    log = self.log.read_text()[-2000:]
                    raise RuntimeError(f"cliff did not start: {log}") from exc
                time.sleep(0.05)

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass
class Trace:
    """One arm over one trajectory: what reached the upstream, and the round trips."""

    tokens: list[int] = field(default_factory=lambda: [])
    live: list[frozenset[int]] = field(default_factory=lambda: [])
    tracker: PrefixTracker = field(default_factory=PrefixTracker)
    seconds: list[float] = field(default_factory=lambda: [])
    rewritten: int = 0
    errors: int = 0

    def add(self, t: Trajectory, k: int, sent: bytes, forwarded: list[bytes], status: int) -> None:
        self.errors += status != 200 or len(forwarded) != 1
        body = forwarded[-1] if forwarded else b"{}"  # nothing went out: an empty prompt
        self.rewritten += body != sent
        segments, live = prompt(json.loads(body), t, k)
        self.tracker.add(segments)
        self.tokens.append(sum(x[1] for x in segments))
        self.live.append(live)

    def run(self) -> Run:
        return Run(self.tokens, self.live, {}, self.tracker.cached)


def replay(
    t: Trajectory, f: float, ups: dict[str, Recorder], passthrough: int, work: Path,
    logs: Counter[str],
) -> dict[str, Trace]:  # fmt: skip
    """Every step of ``t`` through the three arms at budget fraction ``f``, each proxy in
    ``work`` (Veil's project directory, its store in ``.veil/``: a trajectory is a project of
    its own)."""
    budget = budget_for(t, f)
    (work / "veil").mkdir(parents=True)
    cliff = Cliff(ups["cliff"].url, budget, work)
    veil = VeilProxy(ups["veil"].url, window=window_for(budget), root=work / "veil", record=False)
    traces = {arm: Trace() for arm in ARMS}
    warm = json.dumps({"model": "replay", "max_tokens": 1, "stream": True,
                       "messages": [{"role": "user", "content": "warm-up"}]}).encode()  # fmt: skip
    try:
        veil.__enter__()
        ports = {"keep-all": passthrough, "veil": veil.port, "cliff": cliff.port}
        for arm in ARMS:  # untimed: a fresh server's first connection
            post(ports[arm], warm)
            ups[arm].take()
        for k, raw in enumerate(bodies(t, f"{t.id}@{f}")):
            for arm in ARMS[k % 3 :] + ARMS[: k % 3]:
                status, seconds = post(ports[arm], raw)
                time.sleep(PAUSE)  # what a proxy does after an answer runs now, untimed
                traces[arm].seconds.append(seconds)
                traces[arm].add(t, k, raw, ups[arm].take(), status)
    finally:
        cliff.close()
        veil.__exit__()
    for line in veil.stderr.splitlines():
        said = line.split(": ", 1)[-1] if " veil proxy " in line else line
        logs[f"veil: {NUMBER.sub('N', PROXY_ID.sub('proxy-…', said))[:160]}"] += 1
    for line in cliff.log.read_text().splitlines():
        said = LOG_LINE.search(line)
        logs[f"cliff: {said[1]} {said[2].strip()}" if said else f"cliff: {line[:80]}"] += 1
    return traces


def window_for(budget: int) -> int:
    """The ``--window`` whose request budget is ``budget`` (the window less the reply's
    reserve, :func:`veil.context.budget.request_budget`)."""
    low, high = budget, budget + 20_000
    while low < high:
        mid = (low + high) // 2
        if request_budget(mid) < budget:
            low = mid + 1
        else:
            high = mid
    if request_budget(low) != budget:
        raise ValueError(f"no window has a request budget of {budget}")
    return low


@dataclass
class Tally:
    tokens: int = 0
    cost: float = 0.0
    needs: int = 0
    misses: int = 0
    requests: int = 0
    over_budget: int = 0
    rewritten: int = 0
    errors: int = 0
    seconds: list[float] = field(default_factory=lambda: [])
    added: list[float] = field(default_factory=lambda: [])

    def add(self, trace: Trace, needs: list[Need], budget: int, base: list[float]) -> None:
        got = trace.run()
        self.tokens += sum(got.tokens)
        self.cost += run_cost(got)
        self.needs += len(needs)
        self.misses += sum(misses(needs, got.live))
        self.requests += len(got.tokens)
        self.over_budget += sum(1 for x in got.tokens if x > budget)
        self.rewritten += trace.rewritten
        self.errors += trace.errors
        self.seconds += trace.seconds
        self.added += [x - y for x, y in zip(trace.seconds, base, strict=True)]

    def summary(self, keep: Tally) -> Json:
        def ms(xs: list[float]) -> Json:
            return timing.summary(xs, ("p50", "p95"), scale=timing.MS, digits=2)

        return {
            "tokens_vs_keep_all": round(self.tokens / keep.tokens, 4),
            "miss_rate": round(self.misses / self.needs, 4) if self.needs else None,
            "cost_vs_keep_all": round(self.cost / keep.cost, 4),
            "needs": self.needs,
            "misses": self.misses,
            "requests": self.requests,
            "rewritten": self.rewritten,
            "errors": self.errors,
            "over_budget": self.over_budget,
            "latency_ms": ms(self.seconds),
            "added_ms": None if self is keep else ms(self.added),
        }


def run(quick: bool) -> Json:
    started = time.perf_counter()
    peer = version("cliffcompaction")  # not installed: pip install cliffcompaction==0.1.0
    from cliffcompaction.engine import estimate_tokens as cliff_estimate  # pyright: ignore

    machine = describe(load_average=load_average(), **source_state())
    ups = {arm: Recorder() for arm in ARMS}
    passthrough = ProxyServer(Upstream.parse(ups["keep-all"].url), None)
    passthrough.serve_in_background()
    results: dict[str, dict[str, Json]] = {}
    sets: dict[str, Json] = {}
    logs: Counter[str] = Counter()
    ours = theirs = 0
    try:
        with tempfile.TemporaryDirectory(prefix="proxy-peers-") as tmp:
            for name, every in SAMPLES.items():
                trajs = load(name, every=every, limit=QUICK_LIMIT if quick else None)
                sets[name] = {"every": every, "trajectories": len(trajs),
                              "steps": sum(len(t.steps) for t in trajs)}  # fmt: skip
                for t in trajs:
                    for body in bodies(t, t.id):
                        ours += tokens_of(body)
                        theirs += int(cliff_estimate(json.loads(body)))  # pyright: ignore
                for f in FRACTIONS:
                    tallies = {arm: Tally() for arm in ARMS}
                    for n, t in enumerate(trajs):
                        needs = detect_needs(t.steps, f"{t.system}\n{t.instance}")
                        work = Path(tmp) / f"{name}-{f}-{n}"
                        traces = replay(t, f, ups, passthrough.port, work, logs)
                        for arm, trace in traces.items():
                            tallies[arm].add(
                                trace, needs, budget_for(t, f), traces[ARMS[0]].seconds
                            )
                        print(f"{name} f={f} {n + 1}/{len(trajs)} {t.id}", file=sys.stderr)
                    keep = tallies[ARMS[0]]
                    by_f = results.setdefault(name, {})
                    by_f[str(f)] = {arm: tallies[arm].summary(keep) for arm in ARMS}
    finally:
        passthrough.shutdown()
        passthrough.server_close()
        for up in ups.values():
            up.close()
    return {
        "benchmark": "proxy_peers",
        "quick": quick,
        "command": "python -m benchmarks.proxy_peers" + (" --quick" if quick else ""),
        "seconds": round(time.perf_counter() - started, 1),
        "machine": machine,
        "load_after": load_average(),
        "peer": {"name": "cliffcompaction", "version": peer,
                 "command": " ".join(PEER) + " --threshold BUDGET --anthropic-upstream URL"},
        "fractions": list(FRACTIONS),
        "sets": sets,
        "cliff_estimate_over_ours": round(theirs / max(1, ours), 4),
        "logs": dict(sorted(logs.items())),
        "results": results,
    }  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Veil's proxy beside CliffCompaction's.")
    parser.add_argument("--quick", action="store_true", help=f"first {QUICK_LIMIT} of each set")
    args = parser.parse_args(argv)
    data = run(quick=args.quick)
    save(data, "proxy_peers", quick=args.quick)
    print(table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
