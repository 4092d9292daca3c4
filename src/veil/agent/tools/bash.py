"""``bash(command, timeout?)``: run a shell command in the project directory.

How it runs, and why:

* ``bash -c COMMAND`` (not a login shell: profiles print noise and are slow), in ``ctx.cwd``,
  stdin closed (a command that waits for input fails instead of hanging), pagers disabled.
* In its own session / process group (``start_new_session``), so that on timeout or abort the
  *whole group* — the command and everything it spawned — gets SIGTERM, then SIGKILL after
  ``TERM_GRACE_S``. Background jobs that escape the group with ``setsid`` are out of reach.
* ``timeout`` seconds (default ``ctx.default_timeout_s``, at most ``MAX_TIMEOUT_S``); ``ctx.abort``
  is polled every ``POLL_S``.
* Output is stdout and stderr interleaved as written. The model sees the *end* (errors and
  summaries are there), truncated at ``MAX_LINES`` lines / ``MAX_BYTES`` bytes; ``full_output``
  then holds all of it (up to ``MAX_CAPTURE_BYTES``: beyond that the oldest output is dropped and
  the drop is noted). When bash exits, output still arriving from background jobs that kept the
  pipe open is read for ``DRAIN_GRACE_S`` more, then the pipe is closed: redirect a background
  job's output to a file.

The last line of the content is the outcome: ``[exit code N]``, ``[killed by signal NAME]``,
``[timed out after Ns; process group killed]`` or ``[interrupted by the user; process group
killed]``; the same facts are in ``details`` (``exit_code``, ``timed_out``, ``aborted``). A
non-zero exit is *not* an error result — the tool worked, the command failed — but a timeout,
an abort or a failure to start bash is.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from veil.agent.tool import ToolContext, ToolError, ToolResult, Touches
from veil.agent.tools._common import (
    MAX_BYTES,
    MAX_LINES,
    BaseTool,
    optional_number,
    project_root,
    require_str,
    split_lines,
    truncate_tail,
)
from veil.llm.messages import ToolSpec

MAX_TIMEOUT_S = 600.0
"""No single command may run longer than this, whatever the model asks for."""
POLL_S = 0.05
"""How often the abort flag and the deadline are checked."""
TERM_GRACE_S = 1.0
"""Time between SIGTERM and SIGKILL, for processes to clean up."""
DRAIN_GRACE_S = 0.5
"""How long to keep reading after bash exited, for output still in flight."""
MAX_CAPTURE_BYTES = 8 * 1024 * 1024
"""Memory bound on captured output; the oldest bytes are dropped beyond it."""
_READ_CHUNK = 65536


@dataclass
class _Outcome:
    output: bytes
    dropped: int
    returncode: int | None
    timed_out: bool
    aborted: bool


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, give it ``TERM_GRACE_S``, then SIGKILL whatever is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=TERM_GRACE_S)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _execute(command: str, cwd: Path, timeout: float, abort: threading.Event) -> _Outcome:
    env = os.environ | {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
    try:
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
    except OSError as exc:
        raise ToolError(f"could not start bash: {exc}") from None
    assert proc.stdout is not None
    stream = proc.stdout
    fd = stream.fileno()
    os.set_blocking(fd, False)
    buffer = bytearray()
    dropped = 0
    timed_out = aborted = eof = False
    deadline = time.monotonic() + timeout
    exited_at: float | None = None

    def read_available() -> None:
        nonlocal dropped, eof
        while True:
            try:
                chunk = os.read(fd, _READ_CHUNK)
            except BlockingIOError:
                return
            if not chunk:
                eof = True
                return
            buffer.extend(chunk)
            if len(buffer) > MAX_CAPTURE_BYTES:
                excess = len(buffer) - MAX_CAPTURE_BYTES
                del buffer[:excess]
                dropped += excess

    try:
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                now = time.monotonic()
                if proc.poll() is not None:
                    if eof:
                        break
                    exited_at = exited_at or now
                    if now - exited_at > DRAIN_GRACE_S:
                        break
                if abort.is_set():
                    aborted = True
                elif now >= deadline:
                    timed_out = True
                if aborted or timed_out:
                    _kill_group(proc)
                    # Every writer in the group is dead now; take what is left in the pipe.
                    drain_until = time.monotonic() + DRAIN_GRACE_S
                    while not eof and time.monotonic() < drain_until:
                        if selector.select(timeout=POLL_S):
                            read_available()
                    break
                if eof:  # the command closed its output but is still running
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=POLL_S)
                elif selector.select(timeout=POLL_S):
                    read_available()
    finally:
        stream.close()
        if proc.poll() is None:  # only on an exception (e.g. KeyboardInterrupt) above
            _kill_group(proc)
    return _Outcome(bytes(buffer), dropped, proc.returncode, timed_out, aborted)


def _status(outcome: _Outcome, timeout: float) -> str:
    if outcome.timed_out:
        return f"[timed out after {timeout:g}s; process group killed]"
    if outcome.aborted:
        return "[interrupted by the user; process group killed]"
    code = outcome.returncode
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"[killed by signal {name}]"
    return f"[exit code {code}]"


_VIEW = re.compile(
    r"^\s*(?:cd\s+[^;&|]+&&\s*)?(?P<cmd>cat|nl(?:\s+-ba)?|head|tail|sed\s+-n)"
    r"(?P<opts>(?:\s+(?:-n\s*\d+|-\d+|-[a-z]+|'\d+(?:,\d+)?p'|\"\d+(?:,\d+)?p\"|\d+(?:,\d+)?p))*)"
    r"\s+(?P<path>[\w./-]+)\s*$"
)
_RANGE = re.compile(r"(\d+)(?:,(\d+))?p|-n\s*(\d+)|-(\d+)")


def file_view(command: str) -> tuple[str, str | None] | None:
    """``(path, range)`` when ``command`` only shows (part of) one file: ``cat``, ``nl -ba``,
    ``head``/``tail`` (``-n N``), ``sed -n 'a,bp'``; ``range`` is None for the whole file. Any
    pipe, redirection or second command makes it something else."""
    match = _VIEW.match(command)
    if match is None or match.group("path").startswith("-"):
        return None
    cmd, opts = match.group("cmd"), match.group("opts") or ""
    found = _RANGE.search(opts)
    if cmd.startswith(("cat", "nl")) or found is None:
        return match.group("path"), None if not cmd.startswith(("head", "tail")) else "part"
    a, b, n, short = found.groups()
    if cmd.startswith("sed"):
        return match.group("path"), f"{a}-{b or a}"
    count = n or short
    return match.group("path"), f"{cmd[:4]} {count}"


class BashTool(BaseTool):
    spec = ToolSpec(
        name="bash",
        description=(
            "Run a bash command in the project directory (bash -c, no stdin). Returns stdout "
            f"and stderr combined; long output keeps its last {MAX_LINES} lines / "
            f"{MAX_BYTES // 1024} KB. The last line gives the exit code. Commands are killed "
            f"after the timeout (seconds, at most {MAX_TIMEOUT_S:g}). Redirect the output of "
            "background jobs to a file."
        ),
        parameters={
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line to run."},
                "timeout": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "description": "Seconds before the command is killed.",
                },
            },
            "required": ["command"],
            "additionalProperties": False,
        },
    )
    mutates = True
    parallel_safe = False

    def touches(self, arguments: dict[str, Any]) -> Touches:
        """A command; and when it is a plain view of one file (``cat f``, ``nl -ba f``,
        ``head -n 40 f``, ``sed -n '10,60p' f``), the file it reads — agents that read files
        through the shell read them all the same."""
        command = str(arguments.get("command") or "")
        view = file_view(command)
        if view is None:
            return Touches(command=command or None)
        path, lines = view
        return Touches(reads=path, partial=lines is not None, range=lines, command=command)

    def _run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        command = require_str(arguments, "command")
        requested = optional_number(arguments, "timeout", minimum=0.0)
        if requested == 0:
            raise ToolError("argument 'timeout' must be greater than 0")
        timeout = min(requested or ctx.default_timeout_s, MAX_TIMEOUT_S)
        cwd = project_root(ctx)
        if not cwd.is_dir():
            raise ToolError(f"project directory {cwd} does not exist")

        outcome = _execute(command, cwd, timeout, ctx.abort)

        output = outcome.output.decode("utf-8", "replace")
        if outcome.dropped:
            output = f"[first {outcome.dropped} bytes of output dropped]\n" + output
        status = _status(outcome, timeout)
        cut = truncate_tail(split_lines(output))
        body = cut.text
        if cut.truncated:
            shown = f"last {len(cut.lines)} of {cut.total} lines"
            if cut.partial:
                shown = f"end of the last line (of {cut.total} lines)"
            body = f"[output truncated: showing the {shown}; the full output is kept]\n" + body
        if not output:
            body = "(no output)\n"
        elif not body.endswith("\n"):
            body += "\n"
        full = None
        if cut.truncated:
            full = output + ("" if output.endswith("\n") else "\n") + status
        return ToolResult(
            body + status,
            is_error=outcome.timed_out or outcome.aborted,
            full_output=full,
            details={
                "exit_code": None if outcome.timed_out or outcome.aborted else outcome.returncode,
                "timed_out": outcome.timed_out,
                "aborted": outcome.aborted,
                "timeout_s": timeout,
                "truncated": cut.truncated,
            },
        )
