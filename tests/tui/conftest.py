"""Fixtures for the TUI tests: a small git repository and scripted models (no network).

The app runs headless under Textual's pilot; the agent runs in its worker thread as in real
use, so tests wait for it with :func:`wait_until` rather than sleeping.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from veil.agent.runtime import RunOptions
from veil.llm.messages import (
    AssistantMessage,
    Done,
    Request,
    Response,
    StreamEvent,
    TextDelta,
    ToolCall,
    Usage,
)
from veil.tui.app import VeilApp
from veil.tui.prompt import PromptArea
from veil.tui.widgets import AssistantText, ToolDetail

FILES = ("a.py", "b.py", "c.py", "d.py")
WINDOW = 5000
"""With this window the item budget is about 1,800 tokens (the window minus the reserve and the
system prompt + tool schemas), so reading the four ~535-token files evicts the first ones."""

READ_ALL: list[dict[str, Any]] = [
    {"content": f"Reading {name}.", "tool_calls": [{"name": "read", "arguments": {"path": name}}]}
    for name in FILES
] + [{"content": "Done reading."}]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository holding four files of ~535 tokens each."""
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    for name in FILES:
        stem = name.removesuffix(".py")
        (root / name).write_text(
            "\n".join(
                f"def f_{stem}_{n}(x):\n    return x * {n}  # filler line for {stem}"
                for n in range(40)
            )
            + "\n"
        )
    return root


def write_script(path: Path, turns: list[dict[str, Any]]) -> str:
    """Write a scripted-model file and return its ``--model`` spec."""
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


def make_app(
    repo: Path, model: str, *, approve: str = "auto", window: int = WINDOW, resume: bool = False
) -> VeilApp:
    return VeilApp(
        RunOptions(model=model, approve=approve, window=window, resume=resume, cwd=repo)  # type: ignore[arg-type]
    )


async def submit(pilot: Pilot[int], text: str) -> None:
    """Put ``text`` in the prompt and press enter."""
    pilot.app.query_one("#prompt", PromptArea).load_text(text)
    await pilot.press("enter")
    await pilot.pause()


async def wait_until(pilot: Pilot[int], predicate: Callable[[], bool], timeout: float = 15) -> None:
    """Let the app run until ``predicate()`` holds (the agent runs in a worker thread)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.02)
    await pilot.pause()


async def run_turns(pilot: Pilot[int], app: VeilApp, text: str) -> None:
    """Send a message and wait for the whole run to end."""
    await submit(pilot, text)
    await wait_until(pilot, lambda: not app.running)


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coro)


def texts(app: VeilApp) -> list[str]:
    """The transcript's blocks as plain text, top to bottom (the assistant's Markdown and a tool
    call's diff or output as written)."""
    return [
        child.source if isinstance(child, AssistantText | ToolDetail) else str(child.render())
        for child in app.transcript.children
    ]


def process_gone(pid: int) -> bool:
    """Whether process ``pid`` has ended: it no longer exists, or it is a zombie (dead, its exit
    status not yet collected — in a container without an init that reaps, a killed grandchild
    stays one)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def wait_for(predicate: Callable[[], bool], timeout: float = 15) -> None:
    """Poll ``predicate`` (off the app: processes, files, threads) until it holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def pids(*files: Path) -> list[int]:
    """The pids the scripted command wrote, once every file holds one."""
    return [int(f.read_text()) for f in files]


def has_pid(path: Path) -> bool:
    return path.is_file() and path.read_text().strip().isdigit()


class BlockingProvider:
    """A provider that streams ``first``, then waits for ``go`` (or ``release``) before the
    rest of its reply: a model call the test holds open. ``closed`` is set when the stream is
    closed before its end (the run let go of it); ``started`` when the first chunk is out."""

    def __init__(self, first: str, rest: str, tool_calls: tuple[ToolCall, ...] = ()) -> None:
        self.first = first
        self.rest = rest
        self.tool_calls = tool_calls
        self.started = threading.Event()
        self.go = threading.Event()
        self.closed = threading.Event()

    @property
    def model(self) -> str:
        return "blocking"

    @property
    def context_window(self) -> int:
        return WINDOW

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        finished = False
        try:
            yield TextDelta(self.first)
            self.started.set()
            if not self.go.wait(30):
                raise AssertionError("the test never released the provider")
            yield TextDelta(self.rest)
            message = AssistantMessage(self.first + self.rest, self.tool_calls)
            finished = True
            yield Done(Response(message, Usage(100, 10)))
        finally:
            if not finished:
                self.closed.set()
