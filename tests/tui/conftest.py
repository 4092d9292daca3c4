"""Fixtures for the TUI tests: a small git repository and scripted models (no network).

The app runs headless under Textual's pilot; the agent runs in its worker thread as in real
use, so tests wait for it with :func:`wait_until` rather than sleeping.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from veil.agent.runtime import RunOptions
from veil.tui.app import VeilApp

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
    """Type ``text`` into the prompt and press enter."""
    pilot.app.query_one("#prompt", Input).value = text
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
    """The transcript's blocks as plain text, top to bottom."""
    return [str(child.render()) for child in app.transcript.children]
