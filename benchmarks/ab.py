"""A/B on your own key: does Veil pay for itself on real tasks, with the agent you use?

Run from the repository root (docs/ab.md says what it costs and how to read it)::

    python -m benchmarks.ab --agent claude            # your ANTHROPIC_API_KEY, the real API
    python -m benchmarks.ab --agent codex             # your CODEX_API_KEY (or OPENAI_API_KEY)
    python -m benchmarks.ab --quick --agent claude    # offline, a scripted model: machinery only

The task set is ``benchmarks/ab_tasks/tasks.toml``: small repositories, each with a prompt and a
check command that fails as shipped. Each run copies one task into a fresh git repository and
runs the real agent headless in it (``claude -p PROMPT …`` / ``codex exec … PROMPT``) under one
arm:

- **on**: ``veil claude --upstream RELAY [--window N] -- …`` (``veil codex`` alike);
- **shadow**: the same with ``--shadow`` (requests go as the agent sent them; Veil measures);
- **off**: the plain agent, its base URL pointed at the relay.

Every arm's requests pass through a recording relay of our own in front of the upstream (the
provider's API, ``--upstream``, or in ``--quick`` a scripted model server on 127.0.0.1): it
forwards each request as it came and streams the answer back, and reads the usage the provider
reported in it (Anthropic ``message_start``/``message_delta``, OpenAI Responses
``response.completed``) by billing class — uncached input, cache read, cache write, output — so
all three arms are measured the same way, whatever Veil itself says. Each request is priced with
Veil's dated model table (:mod:`veil.llm.catalog`, the one ``veil stats`` uses). After the agent
exits, the task's protected files (its tests) are put back as shipped and its check runs: exit 0
is solved. For on and shadow, ``veil stats --json`` in the run's repository gives what Veil did
(batches, stubs, expands, its own cost estimate).

Arms are interleaved: run 1 goes on, off, shadow; run 2 off, shadow, on; and so on. Each run has
a private ``HOME`` (a real run keeps your environment — your API key — but not your settings,
hooks or installed Veil; ``--quick`` passes nothing of yours). Per arm: runs, solved, cost per
solved task (total cost over solved tasks) with a bootstrap 95% interval (2,000 resamples of the
runs within each task, seeded), mean requests (turns), expands and batches. Results:
``ab.json`` (``ab-quick.json``) in ``--out`` (default ``benchmarks/results``), rewritten after
every run (``complete`` says whether all ran: an interrupted run keeps what it paid for), a
table on stdout and, where matplotlib is installed, ``ab.png`` (``ab-quick.png``) beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

from tests.hosts.binaries import CLAUDE_CODE, CODEX, AgentUnavailable, install
from tests.hosts.runners import (
    CLAUDE_TOOLS,
    AgentTimeout,
    json_lines,
    private_env,
    run_process,
)
from tests.hosts.veil_setup import VEIL_BIN, trust_workspace

from benchmarks.lib.machine import describe, source_state
from benchmarks.lib.paths import REPO, RESULTS, shown
from veil.llm.catalog import CATALOG, PRICES_DATE
from veil.llm.scripted_requests import BodyError, decode_body
from veil.llm.scripted_server import ModelRequest, ScriptedServer, ToolUse, Turn

TASKS = REPO / "benchmarks" / "ab_tasks"
ARMS = ("on", "off", "shadow")
AGENTS = ("claude", "codex")
API = {"claude": "https://api.anthropic.com", "codex": "https://api.openai.com/v1"}
"""The providers' real APIs: the default upstream (``ANTHROPIC_BASE_URL``/``OPENAI_BASE_URL``
when set, as the agents themselves would)."""
FULL_RUNS = 5
RESAMPLES = 2_000
SEED = 34
CHECK_TIMEOUT = 300
QUICK_TASK = "logstats"
QUICK_WINDOW = {"claude": 40_000, "codex": 25_000}
"""``--window`` in ``--quick`` per agent: small enough that the scripted session outgrows its
budget, so the on arm batches and stubs and the model expands (the machinery runs, not just
starts)."""
QUICK_TIMEOUT = 300
QUICK_CODEX_MODEL = "gpt-4.1"
"""Codex's model in ``--quick``: one it offers MCP tools to directly (Veil's expand among them;
for ``gpt-5.5`` it offers none in the request)."""
STUB = b"[veil: "
"""How every stub Veil puts in place of a result begins."""

Json = dict[str, Any]


# ---- the task set ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    name: str
    prompt: str
    check: str
    protected: tuple[str, ...]
    timeout: float
    path: Path


def load_tasks(path: Path = TASKS / "tasks.toml") -> dict[str, Task]:
    """The tasks of ``tasks.toml`` by name, in its order."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    tasks: dict[str, Task] = {}
    for entry in data.get("task", []):
        name = str(entry["name"])
        tasks[name] = Task(
            name=name,
            prompt=" ".join(str(entry["prompt"]).split()),
            check=str(entry["check"]),
            protected=tuple(str(p) for p in entry.get("protected", ())),
            timeout=float(entry.get("timeout", 900)),
            path=path.parent / name,
        )
    return tasks


def make_repo(task: Task, repo: Path) -> Path:
    """A copy of ``task``'s repository at ``repo``, a git repository with one commit."""
    shutil.copytree(task.path, repo, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "."],
        ["-c", "user.email=ab@example.com", "-c", "user.name=ab", "commit", "-q", "-m", "task"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def check(task: Task, repo: Path) -> tuple[bool, str]:
    """Put the protected files back as shipped, run the check: (solved, its output's tail)."""
    for name in task.protected:
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(task.path / name, target)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        done = subprocess.run(
            task.check,
            shell=True,
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"the check took over {CHECK_TIMEOUT} s"
    return done.returncode == 0, (done.stdout + done.stderr)[-600:]


# ---- the recording relay ---------------------------------------------------------------------


@dataclass
class Usage:
    """A reply's usage as the provider reported it, by billing class (input is uncached)."""

    input: int = 0
    cache_read: int = 0
    cache_write_5m: int = 0
    cache_write_1h: int = 0
    output: int = 0

    @property
    def cache_write(self) -> int:
        return self.cache_write_5m + self.cache_write_1h

    @property
    def prompt(self) -> int:
        """Every input token, whatever its class."""
        return self.input + self.cache_read + self.cache_write

    def add(self, other: Usage) -> None:
        for name in ("input", "cache_read", "cache_write_5m", "cache_write_1h", "output"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _anthropic(usage: Mapping[str, Any], into: Usage | None = None) -> Usage:
    """Anthropic's usage object (``message_start``'s, or ``message_delta``'s on top of it:
    the fields a delta names replace the earlier ones)."""
    out = into or Usage()
    if "input_tokens" in usage:
        out.input = _int(usage["input_tokens"])
    if "cache_read_input_tokens" in usage:
        out.cache_read = _int(usage["cache_read_input_tokens"])
    if "cache_creation_input_tokens" in usage:
        written = _int(usage["cache_creation_input_tokens"])
        split = usage.get("cache_creation")
        long = _int(split.get("ephemeral_1h_input_tokens")) if isinstance(split, dict) else 0
        out.cache_write_1h = min(long, written)
        out.cache_write_5m = written - out.cache_write_1h
    if "output_tokens" in usage:
        out.output = _int(usage["output_tokens"])
    return out


def _openai(usage: Mapping[str, Any]) -> Usage:
    """OpenAI's usage (Responses: ``input_tokens`` with ``input_tokens_details.cached_tokens``;
    Chat Completions: ``prompt_tokens`` with ``prompt_tokens_details``); no cache-write class."""
    total = _int(usage.get("input_tokens", usage.get("prompt_tokens")))
    details = usage.get("input_tokens_details") or usage.get("prompt_tokens_details") or {}
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    output = _int(usage.get("output_tokens", usage.get("completion_tokens")))
    return Usage(input=max(0, total - cached), cache_read=cached, output=output)


def usage_of(data: bytes, content_type: str) -> tuple[Usage | None, str]:
    """The usage and model a reply reports (an SSE stream or a JSON body); ``None`` when it
    reports none (an error, a cut stream)."""
    text = data.decode("utf-8", "replace")
    objects: list[Any] = []
    if "event-stream" in content_type:
        for line in text.splitlines():
            if line.startswith("data:"):
                with contextlib.suppress(ValueError):
                    objects.append(json.loads(line[5:].strip()))
    else:
        with contextlib.suppress(ValueError):
            objects.append(json.loads(text))
    usage: Usage | None = None
    model = ""
    for obj in objects:
        if not isinstance(obj, dict):
            continue
        kind = obj.get("type")
        if kind == "message_start" and isinstance(obj.get("message"), dict):
            message = obj["message"]
            usage = _anthropic(message.get("usage") or {})
            model = str(message.get("model") or model)
        elif kind == "message_delta" and isinstance(obj.get("usage"), dict):
            usage = _anthropic(obj["usage"], usage)
        elif kind == "message" and isinstance(obj.get("usage"), dict):  # not streamed
            usage = _anthropic(obj["usage"])
            model = str(obj.get("model") or model)
        elif str(kind).startswith("response.") and isinstance(obj.get("response"), dict):
            response = obj["response"]
            if isinstance(response.get("usage"), dict):
                usage = _openai(response["usage"])
            model = str(response.get("model") or model)
        elif obj.get("object") in ("response", "chat.completion", "chat.completion.chunk"):
            if isinstance(obj.get("usage"), dict):
                usage = _openai(obj["usage"])
            model = str(obj.get("model") or model)
    return usage, model


def cost_of(model: str, usage: Usage) -> float | None:
    """USD for one reply at the table's list prices (``None``: the model has no price there).
    The whole request is priced at its long-context tier when its input passes the threshold."""
    info = CATALOG.lookup(model) if model else None
    if info is None or not info.priced:
        return None
    per_in, per_out, write_5m, write_1h, read = info.rates(usage.prompt)
    return (
        usage.input * per_in
        + usage.cache_write_5m * write_5m
        + usage.cache_write_1h * write_1h
        + usage.cache_read * read
        + usage.output * per_out
    )


@dataclass
class Exchange:
    """One model request through the relay and what came back."""

    path: str
    status: int
    model: str
    usage: Usage | None
    stubbed: bool
    """The body the upstream received holds a Veil stub."""


MODEL_PATHS = ("/messages", "/responses", "/chat/completions")
HOP = frozenset(
    ("connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
     "upgrade", "host", "content-length")
)  # fmt: skip


class UsageRelay:
    """A recording pass-through on 127.0.0.1 in front of ``upstream``: each request goes on as
    it came (method, path, headers but the hop-by-hop ones, body; ``Accept-Encoding: identity``
    so the answer can be read), the answer streams back as it arrives, and every model request
    is kept as an :class:`Exchange`. :attr:`base` is the URL to give a client instead of
    ``upstream`` (the relay's origin with the upstream's path)."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--upstream {upstream!r}: not an http(s) URL")
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.exchanges: list[Exchange] = []
        self.count_tokens = 0
        self._lock = threading.Lock()
        relay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                relay.forward(self, _request_body(self))

            def do_GET(self) -> None:
                relay.forward(self, b"")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.base = self.url + parts.path.rstrip("/")

    def __enter__(self) -> Self:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _connect(self) -> http.client.HTTPConnection:
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=600)
        return http.client.HTTPConnection(self.host, self.port, timeout=600)

    def forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP}
        headers = {k: v for k, v in headers.items() if k.lower() != "accept-encoding"}
        headers["Accept-Encoding"] = "identity"
        default = 443 if self.scheme == "https" else 80
        headers["Host"] = self.host if self.port == default else f"{self.host}:{self.port}"
        conn = self._connect()
        try:
            conn.request(handler.command, handler.path, body, headers)
            response = conn.getresponse()
        except OSError as exc:
            conn.close()
            message = json.dumps({"error": {"message": f"relay: upstream failed: {exc}"}}).encode()
            handler.send_response_only(502)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(message)))
            handler.end_headers()
            handler.wfile.write(message)
            self._record(handler.path, 502, body, b"", "", handler.headers)
            return
        captured = bytearray()
        try:
            handler.send_response_only(response.status)
            for k, v in response.getheaders():
                if k.lower() not in HOP:
                    handler.send_header(k, v)
            length = response.getheader("content-length")
            chunked = length is None
            handler.send_header(
                *(("Transfer-Encoding", "chunked") if chunked else ("Content-Length", length))
            )
            handler.end_headers()
            while chunk := response.read1(65536):
                captured += chunk
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
                handler.wfile.flush()
            if chunked:
                handler.wfile.write(b"0\r\n\r\n")
        except (OSError, http.client.HTTPException):
            handler.close_connection = True  # either side went away; keep what came
        finally:
            conn.close()
            try:
                answer = decode_body(bytes(captured), response.getheader("content-encoding"))
            except BodyError:
                answer = b""
            kind = response.getheader("content-type") or ""
            self._record(handler.path, response.status, body, answer, kind, handler.headers)

    def _record(
        self, path: str, status: int, body: bytes, answer: bytes, kind: str, headers: Any
    ) -> None:
        route = path.split("?", 1)[0].rstrip("/")
        if route.endswith("/count_tokens"):
            with self._lock:
                self.count_tokens += 1
            return
        if not route.endswith(MODEL_PATHS):
            return
        try:
            sent = decode_body(body, headers.get("content-encoding"))
        except BodyError:
            sent = b""
        usage, model = usage_of(answer, kind) if status == 200 else (None, "")
        if not model:
            with contextlib.suppress(ValueError, AttributeError):
                model = str(json.loads(sent).get("model") or "")
        with self._lock:
            self.exchanges.append(Exchange(route, status, model, usage, STUB in sent))


def _request_body(handler: BaseHTTPRequestHandler) -> bytes:
    """The request's body, plain or chunked."""
    if "chunked" in (handler.headers.get("transfer-encoding") or "").lower():
        out = bytearray()
        while True:
            size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return bytes(out)
            out += handler.rfile.read(size)
            handler.rfile.readline()
    return handler.rfile.read(int(handler.headers.get("content-length") or 0))


# ---- the scripted model of --quick -----------------------------------------------------------

QUICK_OLD = (
    "    rank = int(p / 100 * len(ordered))\n    return ordered[min(rank, len(ordered) - 1)]\n"
)
QUICK_NEW = (
    "    rank = -(-p * len(ordered) // 100)  # ceil(p / 100 * n)\n"
    "    return ordered[int(rank) - 1]\n"
)
QUICK_CHECK = "python3 -m unittest test_logstats"
QUICK_DONE = "Fixed: percentile() now takes the value at rank ceil(p / 100 × n); the tests pass."


def _pointer(request: ModelRequest) -> str | None:
    """The first ``veil://`` pointer a stub in ``request`` shows."""
    for result in request.tool_results():
        if result.text.startswith("[veil: ") and (found := POINTER.search(result.text)):
            return found.group(0)
    return None


POINTER = re.compile(r"veil://[a-z]+/[A-Za-z0-9_\-]+")


class Planner:
    """A scripted model that works through ``steps`` (one per request), except that the first
    time it is shown a Veil stub it expands it, through Veil's tool as the agent names it (so
    an arm that stubs nothing never expands)."""

    def __init__(self, steps: Sequence[Callable[[ModelRequest], Turn]]) -> None:
        self.steps = list(steps)
        self.expanded = False

    def __call__(self, request: ModelRequest) -> Turn:
        pointer = _pointer(request)
        tool = next((n for n in request.tool_names() if "veil" in n and n.endswith("expand")), None)
        if pointer and tool and not self.expanded:
            self.expanded = True
            return Turn(
                "That output is out of the prompt; restoring it.",
                (ToolUse(tool, {"pointer": pointer}),),
            )
        return self.steps.pop(0)(request) if self.steps else Turn(QUICK_DONE)

    def script(self) -> list[Planner]:
        """The server's script: this planner for every request it can take."""
        return [self] * (len(self.steps) + 2)


def quick_script(agent: str, repo: Path) -> list[Planner]:
    """A model that solves the quick task (``logstats``) the way an agent would: runs the
    tests, reads the code and the data (enough to outgrow the quick window), expands a stub if
    it is shown one, fixes the percentile, runs the tests again."""
    by_rank = "awk '{print $NF, $0}' data/access.log | sort -n"

    def step(text: str, use: Callable[[ModelRequest], ToolUse]) -> Callable[[ModelRequest], Turn]:
        return lambda request: Turn(text, (use(request),))

    if agent == "claude":

        def bash(command: str) -> Callable[[ModelRequest], ToolUse]:
            return lambda _: ToolUse("Bash", {"command": command, "description": "run it"})

        def read(name: str) -> Callable[[ModelRequest], ToolUse]:
            return lambda _: ToolUse("Read", {"file_path": str(repo / name)})

        edit = ToolUse(
            "Edit",
            {
                "file_path": str(repo / "logstats/stats.py"),
                "old_string": QUICK_OLD,
                "new_string": QUICK_NEW,
            },
        )
        steps = [
            step("Running the tests.", bash(f"{QUICK_CHECK} 2>&1 | tail -15")),
            step("Reading the percentile.", read("logstats/stats.py")),
            step("Reading the data.", read("data/access.log")),
            step("Response times by rank.", bash(by_rank)),
            step("Reading the report.", read("logstats/report.py")),
            step("Reading the tests.", read("test_logstats.py")),
            step("Fixing the rank.", lambda _: edit),
            step("Running the tests.", bash(QUICK_CHECK)),
        ]
        return Planner(steps).script()
    patch = (
        "*** Begin Patch\n*** Update File: logstats/stats.py\n@@\n"
        + "".join(f"-{line}\n" for line in QUICK_OLD.splitlines())
        + "".join(f"+{line}\n" for line in QUICK_NEW.splitlines())
        + "*** End Patch\n"
    )

    def shell(command: str) -> Callable[[ModelRequest], ToolUse]:
        return lambda request: _shell(request, command)

    steps = [
        step("Running the tests.", shell(f"{QUICK_CHECK} 2>&1 | tail -15")),
        step("Reading the percentile.", shell("cat logstats/stats.py")),
        step("Reading the data.", shell("cat data/access.log")),
        step("Response times by rank.", shell(by_rank)),
        step("Reading the report.", shell("cat logstats/report.py")),
        step("Reading the tests.", shell("cat test_logstats.py")),
        step("Fixing the rank.", lambda request: _patch(request, patch)),
        step("Running the tests.", shell(QUICK_CHECK)),
    ]
    return Planner(steps).script()


def _patch(request: ModelRequest, patch: str) -> ToolUse:
    """The fix through Codex's ``apply_patch`` tool, or where the model is not offered it, a
    shell command that makes the same change."""
    if "apply_patch" in request.tool_names():
        return ToolUse("apply_patch", {"input": patch})
    script = (
        "import pathlib; p = pathlib.Path('logstats/stats.py'); "
        f"p.write_text(p.read_text().replace({QUICK_OLD!r}, {QUICK_NEW!r}))"
    )
    return _shell(request, f"python3 -c {shlex.quote(script)}")


def _shell(request: ModelRequest, command: str) -> ToolUse:
    """Codex's shell tool for the model at hand (``exec_command`` or ``shell``)."""
    if "exec_command" in request.tool_names():
        return ToolUse("exec_command", {"cmd": command})
    return ToolUse("shell", {"command": ["bash", "-lc", command]})


# ---- one run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Setup:
    agent: str
    binary: Path
    arms: tuple[str, ...]
    runs: int
    tasks: tuple[Task, ...]
    upstream: str | None
    """The provider's base URL (``None`` in ``--quick``: a scripted server per run)."""
    model: str | None
    window: int | None
    quick: bool
    veil: Path


@dataclass
class Run:
    task: str
    arm: str
    run: int
    order: int
    solved: bool
    exit_code: int | None
    timed_out: bool
    seconds: float
    requests: int
    requests_failed: int
    requests_without_usage: int
    count_tokens: int
    usage: Json
    cost: float
    models: list[str]
    unpriced: list[str]
    stubbed_requests: int
    """Requests whose body, as the upstream received it, held a Veil stub."""
    veil: Json | None
    agent_reported: Json
    check_output: str
    stderr_tail: str = ""
    """The agent's stderr (``veil claude``'s start line and summary among it) when it failed."""
    proxy_log_tail: str = ""
    """The end of ``.veil/proxy.log`` when an on or shadow run failed."""
    per_request: list[Json] = field(default_factory=list[Json])


def _claude_args(setup: Setup, task: Task) -> list[str]:
    args = [
        "-p",
        task.prompt,
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        *CLAUDE_TOOLS,
    ]
    return [*args, *(["--model", setup.model] if setup.model else [])]


def _codex_args(setup: Setup, task: Task) -> list[str]:
    args = ["exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
    return [*args, *(["-m", setup.model] if setup.model else []), task.prompt]


QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def agent_command(
    setup: Setup, task: Task, arm: str, repo: Path, home: Path, base: str
) -> tuple[list[str], dict[str, str]]:
    """The command of one run and its environment: the agent's base URL (for off) or Veil's
    upstream (for on and shadow) is the relay's ``base``."""
    home.mkdir(parents=True, exist_ok=True)
    if setup.quick:
        env = private_env(home)
    else:  # the user's environment (their key), but none of their agent settings or hooks
        drop = {
            "CLAUDE_CONFIG_DIR",
            "CODEX_HOME",
            "ANTHROPIC_BASE_URL",
            "OPENAI_BASE_URL",
            "VEIL_STATE_DIR",
            "VEIL_CLAUDE",
            "VEIL_CODEX",
        }
        env = {k: v for k, v in os.environ.items() if k not in drop}
        env["HOME"] = str(home)
    veil = [
        str(setup.veil),
        setup.agent,
        "--upstream",
        base,
        *(["--window", str(setup.window)] if setup.window else []),
        *(["--shadow"] if arm == "shadow" else []),
        "--",
    ]
    if setup.agent == "claude":
        trust_workspace(home, repo)
        env.update(QUIET)
        if setup.quick:
            env["ANTHROPIC_API_KEY"] = "sk-ant-scripted-dummy"
            env["ENABLE_TOOL_SEARCH"] = "false"  # the expand tool offered directly
        args = _claude_args(setup, task)
        if arm == "off":
            env["ANTHROPIC_BASE_URL"] = base
            return [str(setup.binary), *args], env
        env["VEIL_CLAUDE"] = str(setup.binary)
        return [*veil, *args], env
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    env["CODEX_HOME"] = str(codex_home)
    # a model provider of its own at the relay (`veil codex` overrides its base_url for on and
    # shadow): plain HTTP streaming, where Codex's built-in provider would try a WebSocket
    if setup.quick:
        env[CODEX_KEY] = "sk-scripted-dummy"
    elif key := os.environ.get("CODEX_API_KEY") or os.environ.get("OPENAI_API_KEY"):
        env[CODEX_KEY] = key
    model = setup.model or (QUICK_CODEX_MODEL if setup.quick else None)
    (codex_home / "config.toml").write_text(codex_provider(base, model))
    args = _codex_args(setup, task)
    if arm == "off":
        return [str(setup.binary), *args], env
    env["VEIL_CODEX"] = str(setup.binary)
    return [*veil, *args], env


CODEX_KEY = "VEIL_AB_API_KEY"
"""The variable Codex's provider for the run reads its key from (``CODEX_API_KEY`` or
``OPENAI_API_KEY``'s value in a real run)."""


def codex_provider(base: str, model: str | None) -> str:
    """Codex's ``config.toml`` for one run: the provider ``ab`` at ``base`` (``…/v1``) over the
    Responses API, its key from :data:`CODEX_KEY`; ``model`` if given."""
    return (
        (f"model = {json.dumps(model)}\n" if model else "")
        + 'model_provider = "ab"\n\n[model_providers.ab]\nname = "OpenAI through the A/B relay"\n'
        + f"base_url = {json.dumps(base)}\nenv_key = {json.dumps(CODEX_KEY)}\n"
        + 'wire_api = "responses"\n'
    )


def agent_reported(agent: str, stdout: str) -> Json:
    """What the agent said about itself (a cross-check, not the measure): Claude Code's result
    event (turns, its own cost), Codex's per-turn usage summed."""
    events = json_lines(stdout)
    if agent == "claude":
        result = next((e for e in reversed(events) if e.get("type") == "result"), {})
        return {
            "num_turns": result.get("num_turns"),
            "total_cost_usd": result.get("total_cost_usd"),
            "is_error": result.get("is_error"),
            "result": str(result.get("result") or "")[-500:],
        }
    sums: dict[str, int] = {}
    for e in events:
        if e.get("type") == "turn.completed" and isinstance(e.get("usage"), dict):
            for k, v in e["usage"].items():
                sums[k] = sums.get(k, 0) + _int(v)
    return {"turns": sum(1 for e in events if e.get("type") == "turn.completed"), "usage": sums}


VEIL_KEYS = (
    "requests",
    "tokens_agent",
    "tokens_sent",
    "cache_read",
    "cache_write",
    "output_tokens",
    "batches",
    "expands",
    "stubs",
    "rereads",
    "compactions",
    "cost_estimated",
    "cost_without_veil_estimated",
)


def veil_stats(setup: Setup, repo: Path, env: Mapping[str, str]) -> Json:
    """``veil stats --json``'s totals in the run's repository (``{"error": …}`` if it
    failed)."""
    done = subprocess.run(
        [str(setup.veil), "stats", "--json"],
        cwd=repo,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip()[-500:]}
    total = json.loads(done.stdout).get("total", {})
    return {k: total.get(k) for k in VEIL_KEYS}


def run_one(setup: Setup, task: Task, arm: str, index: int, order: int, work: Path) -> Run:
    """One run of ``task`` under ``arm``: a fresh repository and home, the relay (and in
    ``--quick`` the scripted server), the agent, the check, Veil's stats."""
    root = work / f"{task.name}-{index + 1}-{arm}"
    repo = make_repo(task, root / "repo")
    home = root / "home"
    timeout = QUICK_TIMEOUT if setup.quick else task.timeout
    with contextlib.ExitStack() as stack:
        upstream = setup.upstream or ""
        if setup.quick:
            script = quick_script(setup.agent, repo)
            server = stack.enter_context(ScriptedServer(script, cache=True, pairing=True))
            upstream = server.url + ("/v1" if setup.agent == "codex" else "")
        relay = stack.enter_context(UsageRelay(upstream))
        command, env = agent_command(setup, task, arm, repo, home, relay.base)
        started = time.monotonic()
        label = f"ab {setup.agent} {task.name} {arm} run {index + 1}"
        try:
            code, stdout, stderr, seconds = run_process(
                command, cwd=repo, env=env, timeout=timeout, label=label
            )
            exit_code: int | None = code
            timed_out = False
        except AgentTimeout as exc:
            exit_code, stdout, stderr, timed_out = None, "", str(exc), True
            seconds = time.monotonic() - started
        exchanges = list(relay.exchanges)
        count_tokens = relay.count_tokens
    solved, output = check(task, repo)
    usage = Usage()
    cost = 0.0
    models: set[str] = set()
    unpriced: set[str] = set()
    per_request: list[Json] = []
    for e in exchanges:
        price = cost_of(e.model, e.usage) if e.usage else None
        if e.usage:
            usage.add(e.usage)
        if e.model:
            models.add(e.model)
            if e.usage and price is None:
                unpriced.add(e.model)
        cost += price or 0.0
        per_request.append(
            {
                "status": e.status,
                "model": e.model,
                "stubbed": e.stubbed,
                "usage": asdict(e.usage) if e.usage else None,
                "cost": round(price, 6) if price is not None else None,
            }
        )
    return Run(
        task=task.name,
        arm=arm,
        run=index + 1,
        order=order,
        solved=solved,
        exit_code=exit_code,
        timed_out=timed_out,
        seconds=round(seconds, 1),
        requests=len(exchanges),
        requests_failed=sum(1 for e in exchanges if e.status != 200),
        requests_without_usage=sum(1 for e in exchanges if e.status == 200 and e.usage is None),
        count_tokens=count_tokens,
        usage={**asdict(usage), "cache_write": usage.cache_write, "prompt": usage.prompt},
        cost=round(cost, 6),
        models=sorted(models),
        unpriced=sorted(unpriced),
        stubbed_requests=sum(1 for e in exchanges if e.stubbed),
        veil=None if arm == "off" else veil_stats(setup, repo, env),
        agent_reported=agent_reported(setup.agent, stdout),
        check_output=_redacted(output),
        stderr_tail="" if exit_code == 0 else _redacted(stderr[-2000:]),
        proxy_log_tail="" if exit_code == 0 or arm == "off" else _tail(repo / ".veil/proxy.log"),
        per_request=per_request,
    )


def _redacted(text: str) -> str:
    """``text`` as Veil stores anything: credentials replaced (a results file gets shared)."""
    from veil.redaction import redact

    return redact(text).text


def _tail(path: Path, chars: int = 2000) -> str:
    with contextlib.suppress(OSError):
        return path.read_text(encoding="utf-8", errors="replace")[-chars:]
    return ""


def schedule(setup: Setup) -> Iterator[tuple[int, Task, str]]:
    """(run index, task, arm), interleaved: run r takes the arms rotated by r."""
    n = len(setup.arms)
    for r in range(setup.runs):
        order = setup.arms[r % n :] + setup.arms[: r % n]
        for task in setup.tasks:
            for arm in order:
                yield r, task, arm


# ---- the summary -----------------------------------------------------------------------------


def bootstrap_ci(
    runs: Sequence[Run], *, resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float | None, float | None]:
    """A 95% interval of cost per solved task: runs resampled with replacement within each task
    (the task mix stays as it was), the 2.5th and 97.5th percentiles of total cost over tasks
    solved. ``None`` for the upper end: more than 2.5% of the resamples solved nothing."""
    if not runs:
        return None, None
    by_task: dict[str, list[tuple[float, int]]] = {}
    for r in runs:
        by_task.setdefault(r.task, []).append((r.cost, int(r.solved)))
    rng = random.Random(seed)
    values: list[float] = []
    for _ in range(resamples):
        cost = 0.0
        solved = 0
        for items in by_task.values():
            for _ in items:
                c, s = items[rng.randrange(len(items))]
                cost += c
                solved += s
        values.append(cost / solved if solved else math.inf)
    values.sort()
    low = values[math.ceil(0.025 * resamples) - 1]
    high = values[math.ceil(0.975 * resamples) - 1]
    return (None if math.isinf(low) else low), (None if math.isinf(high) else high)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarise(runs: Sequence[Run], arms: Sequence[str]) -> dict[str, Json]:
    out: dict[str, Json] = {}
    for arm in arms:
        mine = [r for r in runs if r.arm == arm]
        solved = sum(r.solved for r in mine)
        cost = sum(r.cost for r in mine)
        low, high = bootstrap_ci(mine)
        veil = [r.veil for r in mine if r.veil and "error" not in r.veil]

        def veil_mean(key: str, veil: list[Json] = veil) -> float | None:
            return _mean([float(v[key] or 0) for v in veil]) if veil else None

        usage = {
            k: sum(r.usage[k] for r in mine)
            for k in ("input", "cache_read", "cache_write", "output", "prompt")
        }
        out[arm] = {
            "runs": len(mine),
            "solved": solved,
            "cost": round(cost, 6),
            "cost_per_solved": round(cost / solved, 6) if solved else None,
            "ci95": [
                None if low is None else round(low, 6),
                None if high is None else round(high, 6),
            ],
            "turns_mean": _mean([r.requests for r in mine]),
            "expands_mean": veil_mean("expands"),
            "batches_mean": veil_mean("batches"),
            "stubs_mean": veil_mean("stubs"),
            "prompt_tokens_mean": _mean([r.usage["prompt"] for r in mine]),
            "usage": usage,
            "stubbed_requests": sum(r.stubbed_requests for r in mine),
            "veil_cost_estimated_mean": veil_mean("cost_estimated"),
            "veil_cost_without_estimated_mean": veil_mean("cost_without_veil_estimated"),
            "seconds_mean": _mean([r.seconds for r in mine]),
        }
    return out


def _money(value: float | None) -> str:
    return "—" if value is None else f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def table(summary: Mapping[str, Json]) -> str:
    """The per-arm table, as text."""
    head = (
        "arm",
        "runs",
        "solved",
        "cost/solved",
        "95% CI",
        "turns",
        "expands",
        "batches",
        "prompt tok/run",
    )
    rows: list[tuple[str, ...]] = [head]
    for arm, s in summary.items():
        low, high = s["ci95"]
        ci = (
            "—"
            if s["cost_per_solved"] is None
            else f"[{_money(low)}, {'∞' if high is None else _money(high)}]"
        )
        rows.append(
            (
                arm,
                str(s["runs"]),
                f"{s['solved']}/{s['runs']}",
                _money(s["cost_per_solved"]),
                ci,
                _num(s["turns_mean"]),
                _num(s["expands_mean"]),
                _num(s["batches_mean"]),
                _num(s["prompt_tokens_mean"], 0),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    shadow = summary.get("shadow")
    if shadow and shadow.get("veil_cost_estimated_mean") is not None:
        lines.append(
            f"shadow: Veil estimates {_money(shadow['veil_cost_estimated_mean'])} per run with "
            f"Veil against {_money(shadow['veil_cost_without_estimated_mean'])} without "
            "(its own figures, for the same requests)"
        )
    return "\n".join(lines)


def plot(summary: Mapping[str, Json], path: Path, title: str) -> Path | None:
    """Cost per solved task per arm with its 95% interval (an arrow where the interval has no
    upper end), each bar labelled with its solved runs; ``None`` without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    arms = [a for a, s in summary.items() if s["cost_per_solved"] is not None]
    values = [float(summary[a]["cost_per_solved"]) for a in arms]
    lows = [v - (summary[a]["ci95"][0] or v) for a, v in zip(arms, values, strict=True)]
    highs = [(summary[a]["ci95"][1] or v) - v for a, v in zip(arms, values, strict=True)]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar(arms, values, yerr=[lows, highs], capsize=8, color="#4c72b0")
    tops = [v + h for v, h in zip(values, highs, strict=True)]
    if any(summary[a]["ci95"][1] is None for a in arms):
        ax.set_ylim(top=1.35 * max(tops))
    for k, arm in enumerate(arms):
        s = summary[arm]
        top = tops[k]
        if s["ci95"][1] is None:
            ax.annotate("", xy=(k, top * 1.25 or 1), xytext=(k, top),
                        arrowprops={"arrowstyle": "->"})  # fmt: skip
        ax.text(k, values[k] / 2, f"{s['solved']}/{s['runs']} solved", ha="center",
                color="white", fontsize=9)  # fmt: skip
    ax.set_ylabel("USD per solved task (95% CI)")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ---- the command -----------------------------------------------------------------------------


def _binary(agent: str, given: str | None, quick: bool) -> Path:
    """The agent's executable: ``--claude``/``--codex``; else in ``--quick`` the pinned binary
    from the agents' cache (installed on first use), else the one on PATH."""
    if given:
        return Path(given)
    if quick:
        return install(CLAUDE_CODE if agent == "claude" else CODEX)
    found = shutil.which(agent)
    if found is None:
        raise AgentUnavailable(f"`{agent}` is not on PATH (give --{agent} PATH)")
    return Path(found)


def _version(binary: Path) -> str:
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        done = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
        return done.stdout.strip()
    return "unknown"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ab",
        description="A/B of Veil on, off and in shadow mode on real tasks (docs/ab.md).",
    )
    parser.add_argument("--agent", choices=AGENTS, default="claude")
    parser.add_argument("--arms", default=",".join(ARMS), help="comma-separated: on,off,shadow")
    parser.add_argument(
        "--runs",
        type=int,
        default=None,
        help=f"runs per arm and task (default {FULL_RUNS}; 1 with --quick)",
    )
    parser.add_argument(
        "--tasks",
        default=None,
        help="comma-separated task names (default: all of benchmarks/ab_tasks/tasks.toml)",
    )
    parser.add_argument(
        "--upstream", default=None, help="the provider's base URL (default: its real API)"
    )
    parser.add_argument("--model", default=None, help="passed to the agent")
    parser.add_argument("--window", type=int, default=None, help="passed to veil (on, shadow)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="directory for the results")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="one task, one run per arm, a scripted model server on 127.0.0.1",
    )
    parser.add_argument("--claude", default=None, help="the Claude Code executable")
    parser.add_argument("--codex", default=None, help="the Codex executable")
    parser.add_argument("--veil", type=Path, default=VEIL_BIN, help="the veil executable")
    parser.add_argument("--keep", action="store_true", help="keep each run's directory")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    arms = tuple(a.strip() for a in args.arms.split(",") if a.strip())
    if not arms or set(arms) - set(ARMS):
        print(f"--arms: choose from {', '.join(ARMS)}", file=sys.stderr)
        return 2
    every = load_tasks()
    names = [n.strip() for n in (args.tasks or "").split(",") if n.strip()]
    if args.quick:
        if args.upstream:
            print("--quick starts its own scripted server: no --upstream", file=sys.stderr)
            return 2
        if names and names != [QUICK_TASK]:
            print(
                f"--quick runs the task {QUICK_TASK} only (its model is scripted for it)",
                file=sys.stderr,
            )
            return 2
        names = [QUICK_TASK]
    unknown = [n for n in names if n not in every]
    if unknown:
        print(f"unknown task(s) {', '.join(unknown)}; known: {', '.join(every)}", file=sys.stderr)
        return 2
    tasks = tuple(every[n] for n in names) if names else tuple(every.values())
    runs = args.runs or (1 if args.quick else FULL_RUNS)
    if runs < 1:
        print("--runs: at least 1", file=sys.stderr)
        return 2
    upstream = None
    if not args.quick:
        variable = "ANTHROPIC_BASE_URL" if args.agent == "claude" else "OPENAI_BASE_URL"
        upstream = args.upstream or os.environ.get(variable) or API[args.agent]
    try:
        binary = _binary(args.agent, getattr(args, args.agent), args.quick)
    except AgentUnavailable as exc:
        print(f"ab: {exc}", file=sys.stderr)
        return 2
    setup = Setup(
        agent=args.agent,
        binary=binary,
        arms=arms,
        runs=runs,
        tasks=tasks,
        upstream=upstream,
        model=args.model,
        window=args.window or (QUICK_WINDOW[args.agent] if args.quick else None),
        quick=args.quick,
        veil=args.veil,
    )
    version = _version(binary)
    where = (
        "a scripted model server on 127.0.0.1 (the figures mean nothing)"
        if args.quick
        else upstream
    )
    total = runs * len(tasks) * len(arms)
    print(
        f"ab: {args.agent} {version}, arms {', '.join(arms)}, {len(tasks)} task(s) x {runs} "
        f"run(s) = {total} runs against {where}",
        flush=True,
    )
    out: Path = args.out / f"{'ab-quick' if args.quick else 'ab'}.json"
    head: Json = {
        "benchmark": "ab",
        "quick": args.quick,
        "machine": describe(),
        "source": source_state(),
        "agent": args.agent,
        "agent_version": version,
        "model": args.model,
        "upstream": "scripted server (127.0.0.1)" if args.quick else upstream,
        "window": setup.window,
        "arms": list(arms),
        "runs_per_arm": runs,
        "tasks": [t.name for t in tasks],
        "prices_date": PRICES_DATE,
        "bootstrap": {"resamples": RESAMPLES, "seed": SEED, "by": "runs within each task"},
    }
    work = Path(tempfile.mkdtemp(prefix="veil-ab-"))
    done: list[Run] = []
    try:
        for k, (r, task, arm) in enumerate(schedule(setup)):
            run = run_one(setup, task, arm, r, k, work)
            done.append(run)
            print(progress(run, k, total), flush=True)
            save(out, head, done, complete=k + 1 == total)  # a stopped run keeps what it paid for
    except KeyboardInterrupt:
        print(f"ab: interrupted after {len(done)} of {total} runs", file=sys.stderr)
    finally:
        if args.keep:
            print(f"ab: runs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if not done:
        return 1
    summary = summarise(done, arms)
    print()
    print(table(summary))
    print(f"\nwrote {shown(out)}")
    title = f"{args.agent} {version}: cost per solved task"
    if args.quick:
        title += " (--quick: meaningless)"
    drawn = plot(summary, out.with_suffix(".png"), title)
    if drawn is not None:
        print(f"wrote {shown(drawn)}")
    return 0 if len(done) == total else 1


def progress(run: Run, k: int, total: int) -> str:
    """One line per finished run."""
    return (
        f"[{k + 1}/{total}] {run.task} {run.arm} run {run.run}: "
        f"{'solved' if run.solved else 'NOT solved'}, {run.requests} requests, "
        f"{run.usage['prompt']:,} prompt tokens, {_money(run.cost)}, {run.seconds:.0f} s"
        + (" (TIMED OUT)" if run.timed_out else "")
        + (f" (agent exit {run.exit_code})" if run.exit_code not in (0, None) else "")
    )


def save(path: Path, head: Json, done: Sequence[Run], *, complete: bool) -> None:
    """The results so far: ``head``, the per-arm summary of ``done`` and every run."""
    arms: list[str] = head["arms"]
    data = {**head, "complete": complete, "summary": summarise(done, arms),
            "runs": [asdict(r) for r in done]}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
