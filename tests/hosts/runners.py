"""Run the real Claude Code and Codex headless against a model server on 127.0.0.1.

Each run gets a private home (``HOME``; for Codex also ``CODEX_HOME``), a minimal environment
(nothing of the caller's credentials or settings leaks in), and proxy variables that point at a
closed port on 127.0.0.1 with ``NO_PROXY=127.0.0.1,localhost``: the model server is reached
directly and anything else either binary tries (Codex looks up github.com and chatgpt.com)
fails at once on this machine instead of leaving it. Runs are their own process group, killed
whole on a timeout and after exit (MCP servers, shells).

Every run's duration is recorded in :data:`TIMINGS`; ``tests/hosts/conftest.py`` prints them in
the pytest terminal summary.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROXY_TRAP = "http://127.0.0.1:9"
"""The discard port on loopback: nothing listens there, so a proxied request fails at once."""

CLAUDE_TOOLS = ("Bash", "Read", "Edit", "Write")
"""Tools a Claude Code run may use without asking (``--allowedTools``)."""

CODEX_MODEL = "gpt-5.5"
"""A model Codex knows the metadata of: it offers ``exec_command`` and ``apply_patch`` and does
not warn about a missing model."""

TIMINGS: list[tuple[str, float]] = []
"""``(test id or label, seconds)`` of every real run in this session."""


class AgentTimeout(AssertionError):
    """A real agent run did not end in time (it was killed with its process group)."""


@dataclass(frozen=True)
class AgentRun:
    """A finished run: the command, its exit status, stdout parsed as JSON lines (``events``;
    lines that are not JSON objects are skipped), the raw output and how long it took."""

    command: tuple[str, ...]
    returncode: int
    events: list[dict[str, Any]]
    stdout: str
    stderr: str
    seconds: float
    home: Path

    def describe(self) -> str:
        """A summary for assertion messages: status, time, the last events and stderr."""
        events = "\n".join(json.dumps(e)[:400] for e in self.events[-8:])
        return (
            f"exit {self.returncode} after {self.seconds:.1f} s\n--- last events:\n{events}\n"
            f"--- stderr (tail):\n{self.stderr[-2000:]}"
        )


@dataclass(frozen=True)
class ClaudeRun(AgentRun):
    """A Claude Code run (``-p … --output-format stream-json --verbose``). ``transcript`` is the
    session file ``$HOME/.claude/projects/<project>/<session>.jsonl`` when it exists."""

    session_id: str | None = None
    transcript: Path | None = None

    @property
    def result(self) -> dict[str, Any] | None:
        """The closing ``{"type": "result", …}`` event."""
        return next((e for e in reversed(self.events) if e.get("type") == "result"), None)

    @property
    def hook_stops(self) -> list[str]:
        """The reasons of the hooks' stops (``continue: false``) that ended the run, from the
        transcript's ``hook_stopped_continuation`` entries — what an interactive session shows
        ("PostToolBatch hook stopped continuation: …"); ``claude -p`` prints none of them and
        ends with ``terminal_reason: "hook_stopped"``."""
        if self.transcript is None:
            return []
        stops: list[str] = []
        for line in self.transcript.read_text().splitlines():
            entry = json_lines(line)
            attachment = entry[0].get("attachment") if entry else None
            if isinstance(attachment, dict) and attachment.get("type") == (
                "hook_stopped_continuation"
            ):
                stops.append(str(attachment.get("message", "")))
        return stops


@dataclass(frozen=True)
class CodexRun(AgentRun):
    """A Codex run (``codex exec --json``). ``rollout`` is the newest session file under
    ``$CODEX_HOME/sessions`` when there is one."""

    codex_home: Path | None = None
    rollout: Path | None = None

    def items(self, kind: str) -> list[dict[str, Any]]:
        """The completed items of one type (``agent_message``, ``command_execution``…)."""
        return [
            e["item"]
            for e in self.events
            if e.get("type") == "item.completed" and e.get("item", {}).get("type") == kind
        ]


def private_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a run: ``PATH`` and ``TMPDIR`` from ours, a private ``HOME``, a UTF-8
    locale, the proxy trap, then ``extra``."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
    }
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = PROXY_TRAP
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env.update(extra or {})
    return env


def run_process(
    command: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float, label: str
) -> tuple[int, str, str, float]:
    """Run ``command`` in its own process group; ``(status, stdout, stderr, seconds)``. On a
    timeout the group is killed and :class:`AgentTimeout` raised; after a normal exit whatever
    is left of the group (MCP servers, shells) is killed too."""
    start = time.monotonic()
    process = subprocess.Popen(
        list(command),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        stdout, stderr = process.communicate()
        seconds = time.monotonic() - start
        TIMINGS.append((f"{label} (TIMED OUT)", seconds))
        raise AgentTimeout(
            f"{label}: no exit after {timeout:.0f} s; killed.\n--- stdout (tail):\n"
            f"{stdout[-2000:]}\n--- stderr (tail):\n{stderr[-2000:]}"
        ) from None
    finally:
        _kill_group(process.pid)
    seconds = time.monotonic() - start
    TIMINGS.append((label, seconds))
    return process.returncode, stdout, stderr, seconds


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects among ``text``'s lines."""
    events: list[dict[str, Any]] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return events


def _label(kind: str) -> str:
    test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
    return f"{kind} {test}".strip()


@dataclass(frozen=True)
class ClaudeRunner:
    """``run_claude(task, *, cwd, base_url, …)``: Claude Code headless on one private HOME;
    ``version``: the pinned version ``binary`` is, when the fixture knows it."""

    binary: Path
    home: Path
    version: str = ""

    def __call__(
        self,
        task: str,
        *,
        cwd: Path,
        base_url: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        timeout: float = 180.0,
        allowed_tools: Sequence[str] = CLAUDE_TOOLS,
        wrapper: Sequence[str] = (),
    ) -> ClaudeRun:
        """Run ``claude -p TASK --output-format stream-json --verbose`` in ``cwd`` against
        ``base_url`` (``ANTHROPIC_BASE_URL``, a dummy key, non-essential traffic off).

        Permissions: ``--permission-mode acceptEdits --allowedTools …`` (as root Claude Code
        refuses ``bypassPermissions``); ``allowed_tools`` lists the tools, e.g. ``mcp__NAME``
        for an MCP server's. ``args`` go after these flags; ``env`` overrides variables.
        ``wrapper`` (``veil claude --window N``): run through it, Claude Code's arguments
        after ``--``, the binary named by ``VEIL_CLAUDE``."""
        self.home.mkdir(parents=True, exist_ok=True)
        variables = private_env(
            self.home,
            {
                "ANTHROPIC_BASE_URL": base_url,
                "ANTHROPIC_API_KEY": "sk-ant-scripted-dummy",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1",
                "DISABLE_ERROR_REPORTING": "1",
                **(env or {}),
            },
        )
        command = (
            *launcher(self.binary, wrapper, "VEIL_CLAUDE", variables),
            "-p",
            task,
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            *allowed_tools,
            *args,
        )
        code, stdout, stderr, seconds = run_process(
            command, cwd=cwd, env=variables, timeout=timeout, label=_label("claude")
        )
        events = json_lines(stdout)
        session = next((str(e["session_id"]) for e in events if e.get("session_id")), None)
        transcript = None
        if session is not None:
            found = sorted((self.home / ".claude" / "projects").glob(f"*/{session}.jsonl"))
            transcript = found[0] if found else None
        return ClaudeRun(
            command, code, events, stdout, stderr, seconds, self.home, session, transcript
        )


def _veil_block(text: str) -> str:
    """What ``veil install codex`` wrote into a ``config.toml`` (kept across runs)."""
    start, end = text.find("# >>> veil"), text.find("# <<< veil")
    return "\n" + text[start : end + len("# <<< veil")] + "\n" if 0 <= start < end else ""


def launcher(
    binary: Path, wrapper: Sequence[str], variable: str, variables: dict[str, str]
) -> tuple[str, ...]:
    """How a run starts: the binary itself, or ``wrapper`` (``veil claude --window N``) then
    ``--`` with the binary named by ``variable`` in ``variables`` (set here)."""
    if not wrapper:
        return (str(binary),)
    variables[variable] = str(binary)
    return (*wrapper, "--")


def codex_config(base_url: str, *, model: str = CODEX_MODEL, extra: str = "") -> str:
    """A ``config.toml`` that sends ``model`` to ``base_url`` (``…/v1`` is appended) over the
    Responses API, with the key read from ``VEIL_SCRIPTED_API_KEY``; ``extra`` is appended."""
    return (
        f'model = "{model}"\n'
        'model_provider = "scripted"\n\n'
        "[model_providers.scripted]\n"
        'name = "Scripted model"\n'
        f'base_url = "{base_url}/v1"\n'
        'env_key = "VEIL_SCRIPTED_API_KEY"\n'
        'wire_api = "responses"\n' + (f"\n{extra}\n" if extra else "")
    )


@dataclass(frozen=True)
class CodexRunner:
    """``run_codex(task, *, cwd, base_url, …)``: ``codex exec`` on one private HOME/CODEX_HOME."""

    binary: Path
    home: Path

    def __call__(
        self,
        task: str,
        *,
        cwd: Path,
        base_url: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        timeout: float = 180.0,
        model: str = CODEX_MODEL,
        config: str = "",
        wrapper: Sequence[str] = (),
    ) -> CodexRun:
        """Write ``$CODEX_HOME/config.toml`` (:func:`codex_config`, ``config`` appended, then
        the block ``veil install codex`` wrote there, if any) and run
        ``codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox
        [ARGS] TASK`` in ``cwd``; ``wrapper`` (``veil codex --window N``): run through it,
        Codex's arguments after ``--``, the binary named by ``VEIL_CODEX``."""
        codex_home = self.home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        path = codex_home / "config.toml"
        installed = _veil_block(path.read_text() if path.exists() else "")
        path.write_text(codex_config(base_url, model=model, extra=config) + installed)
        variables = private_env(
            self.home,
            {
                "CODEX_HOME": str(codex_home),
                "VEIL_SCRIPTED_API_KEY": "sk-scripted-dummy",
                **(env or {}),
            },
        )
        command = (
            *launcher(self.binary, wrapper, "VEIL_CODEX", variables),
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            *args,
            task,
        )
        code, stdout, stderr, seconds = run_process(
            command, cwd=cwd, env=variables, timeout=timeout, label=_label("codex")
        )
        rollouts = sorted(
            (codex_home / "sessions").rglob("*.jsonl"), key=lambda p: p.stat().st_mtime
        )
        return CodexRun(
            command,
            code,
            json_lines(stdout),
            stdout,
            stderr,
            seconds,
            self.home,
            codex_home,
            rollouts[-1] if rollouts else None,
        )
