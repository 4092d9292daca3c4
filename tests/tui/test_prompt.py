"""The prompt: a multi-line editor (enter sends, ctrl+j / shift+enter add a line, a paste keeps
every line) and the project's history (up/down, kept in .veil/history, redacted, bounded)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

from textual import events

from tests.tui.conftest import make_app, run, run_turns, texts, wait_until, write_script
from veil.llm.messages import UserMessage
from veil.llm.scripted import ScriptedProvider
from veil.tape.redacting import Redactor
from veil.tui.history import ENTRY_MAX_CHARS, History
from veil.tui.prompt import PromptArea

SECRET = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"


def test_enter_sends_every_line_typed_with_ctrl_j_shift_enter_or_pasted(
    repo: Path, tmp_path: Path
) -> None:
    app = make_app(repo, write_script(tmp_path / "ok.json", [{"content": "Got it."}]))

    async def scenario() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            prompt = app.query_one("#prompt", PromptArea)
            await pilot.press("a", "ctrl+j", "b", "shift+enter")
            app.post_message(events.Paste("pasted one\npasted two"))  # as the terminal does
            await pilot.pause()
            assert prompt.text == "a\nb\npasted one\npasted two"
            assert texts(app)[-1].startswith("veil in ")  # nothing was sent yet
            await pilot.press("enter")
            await wait_until(pilot, lambda: not app.running and "Got it." in texts(app))
            assert prompt.text == ""
            assert "> a\nb\npasted one\npasted two" in texts(app)
            s = app.driver.setup
            assert s is not None
            sent = cast(ScriptedProvider, s.provider).requests[0].messages
            assert UserMessage("a\nb\npasted one\npasted two") in sent

    run(scenario())


def test_up_and_down_recall_messages_of_earlier_sessions_redacted(
    repo: Path, tmp_path: Path
) -> None:
    first = make_app(
        repo, write_script(tmp_path / "one.json", [{"content": "One."}, {"content": "Two."}])
    )

    async def earlier_session() -> None:
        async with first.run_test(size=(100, 30)) as pilot:
            await run_turns(pilot, first, "first task\nwith two lines")
            await run_turns(pilot, first, f"use the token {SECRET} please")

    run(earlier_session())
    stored = (repo / ".veil" / "history").read_text()
    assert SECRET not in stored and "[secret:github-token" in stored
    assert json.loads(stored.splitlines()[0]) == "first task\nwith two lines"

    second = make_app(repo, write_script(tmp_path / "two.json", [{"content": "Three."}]))

    async def later_session() -> None:
        async with second.run_test(size=(100, 30)) as pilot:
            prompt = second.query_one("#prompt", PromptArea)
            await pilot.press("d", "r", "a", "f", "t")
            await pilot.press("up")
            assert prompt.text.startswith("use the token [secret:github-token")
            assert SECRET not in prompt.text
            await pilot.press("up")
            assert prompt.text == "first task\nwith two lines"
            await pilot.press("up")  # the oldest: stays
            assert prompt.text == "first task\nwith two lines"
            await pilot.press("down")  # moves to the entry's second line, not the history
            assert prompt.text == "first task\nwith two lines"
            await pilot.press("down", "down")
            assert prompt.text == "draft"  # past the newest entry: what was being typed
            await pilot.press("enter")
            await wait_until(pilot, lambda: not second.running)

    run(later_session())
    lines = (repo / ".veil" / "history").read_text().splitlines()
    assert json.loads(lines[-1]) == "draft"


def test_history_navigation_keeps_the_draft() -> None:
    history = History(None, Redactor())
    assert history.older("typing") is None  # nothing to recall
    for text in ("one", "two", "two", "  ", "x" * (ENTRY_MAX_CHARS + 1)):
        history.add(text)
    assert history.entries == ["one", "two"]  # no repeats, blanks or over-long entries
    assert history.older("typing") == "two"
    assert history.older("two") == "one"
    assert history.older("one") is None
    assert history.newer() == "two"
    assert history.newer() == "typing"
    assert history.newer() is None


def test_history_file_is_bounded(tmp_path: Path) -> None:
    limit = 3
    history = History(tmp_path, Redactor(), limit=limit)
    for n in range(10):
        history.add(f"message {n}")
    path = tmp_path / ".veil" / "history"
    assert len(path.read_text().splitlines()) <= 2 * limit
    assert (tmp_path / ".veil" / ".gitignore").read_text().strip().endswith("*")
    assert path.stat().st_mode & 0o077 == 0  # the person's own messages: not world-readable
    again = History(tmp_path, Redactor(), limit=limit)
    assert again.entries == ["message 7", "message 8", "message 9"]
