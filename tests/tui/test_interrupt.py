"""Stopping: esc / ctrl+c kill a running command at once and end the turn with a recorded result;
ctrl+q leaves at once whatever runs (a command, a model call).

Each test proves the stop came from the key, not from the command or the model finishing: the
command would sleep 30 s and its result would then be ``[exit code 0]``, and the model call is
held open by the test until after the app has closed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from tests.tui.conftest import (
    BlockingProvider,
    has_pid,
    make_app,
    pids,
    process_gone,
    run,
    run_turns,
    submit,
    texts,
    wait_for,
    wait_until,
    write_script,
)
from veil.agent.loop import INTERRUPTED
from veil.llm.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from veil.llm.scripted import ScriptedProvider
from veil.tui.app import VeilApp


def sleeper(tmp_path: Path) -> dict[str, Any]:
    """A turn whose command runs 30 s in a child of the shell, writing both pids first."""
    command = (
        f"sleep 30 & echo $! > {tmp_path / 'child.pid'}; echo $$ > {tmp_path / 'shell.pid'}; wait"
    )
    return {
        "content": "Running it.",
        "tool_calls": [{"name": "bash", "arguments": {"command": command}}],
    }


def started(app: VeilApp, tmp_path: Path) -> bool:
    line = app.tool_line("call_1_1")
    return (
        line is not None
        and line.status == "running"
        and has_pid(tmp_path / "child.pid")
        and has_pid(tmp_path / "shell.pid")
    )


@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
def test_esc_and_ctrl_c_kill_the_running_command_and_end_the_turn(
    repo: Path, tmp_path: Path, key: str
) -> None:
    model = write_script(
        tmp_path / "sleep.json",
        [sleeper(tmp_path), {"content": "After the stop."}],
    )
    app = make_app(repo, model)

    async def scenario() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await submit(pilot, "run the slow thing")
            await wait_until(pilot, lambda: started(app, tmp_path))
            shell, child = pids(tmp_path / "shell.pid", tmp_path / "child.pid")
            assert not process_gone(shell) and not process_gone(child)

            await pilot.press(key)
            await wait_until(pilot, lambda: not app.running)
            wait_for(lambda: process_gone(shell) and process_gone(child))
            line = app.tool_line("call_1_1")
            assert line is not None and line.status == "aborted"
            killed = "[interrupted by the user; process group killed]"
            assert killed in app._results["call_1_1"].content  # pyright: ignore[reportPrivateUsage]
            assert texts(app)[-1] == "run ended (aborted): aborted by the user"
            assert "After the stop." not in texts(app)  # the model was not asked again

            # The turn ended with the call answered: stored, and resumable at once.
            s = app.driver.setup
            assert s is not None
            stored = s.sessions.messages(s.session_id)
            assert stored == s.messages
            result = next(m for m in stored if isinstance(m, ToolResultMessage))
            assert result.tool_call_id == "call_1_1" and result.details.get("aborted") is True
            provider = cast(ScriptedProvider, s.provider)
            await run_turns(pilot, app, "go on")
            assert texts(app)[-1] == "After the stop."
            sent = provider.requests[-1].messages
            assert any(
                isinstance(m, ToolResultMessage) and m.tool_call_id == "call_1_1" for m in sent
            )

    run(scenario())


def test_ctrl_q_quits_at_once_while_a_command_runs(repo: Path, tmp_path: Path) -> None:
    app = make_app(repo, write_script(tmp_path / "sleep.json", [sleeper(tmp_path)]))

    async def scenario() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await submit(pilot, "run the slow thing")
            await wait_until(pilot, lambda: started(app, tmp_path))
            await pilot.press("ctrl+q")

    run(scenario())
    assert app.return_code == 0
    shell, child = pids(tmp_path / "shell.pid", tmp_path / "child.pid")
    wait_for(lambda: process_gone(shell) and process_gone(child))
    assert app.wait_for_agent(15)
    s = app.driver.setup
    assert s is not None
    stored = s.sessions.messages(s.session_id)
    result = next(m for m in stored if isinstance(m, ToolResultMessage))
    assert "[interrupted by the user; process group killed]" in result.content
    assert s.sessions.get(s.session_id).status == "aborted"  # type: ignore[union-attr]


def start_blocked_reply(app: VeilApp, provider: BlockingProvider) -> None:
    """Swap the session's model for ``provider`` (the session is set up by a first run)."""
    s = app.driver.setup
    assert s is not None
    s.config.provider = provider


def test_ctrl_q_does_not_wait_for_a_model_call(repo: Path, tmp_path: Path) -> None:
    app = make_app(repo, write_script(tmp_path / "hi.json", [{"content": "Hi."}]))
    provider = BlockingProvider("Thinking", " done.")

    async def scenario() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await run_turns(pilot, app, "hello")
            start_blocked_reply(app, provider)
            await submit(pilot, "think hard")
            await wait_until(pilot, provider.started.is_set)
            await pilot.press("ctrl+q")

    try:
        run(scenario())
        # The app has closed while the model call is still open: it did not wait for it.
        assert not provider.go.is_set()
        assert not app.wait_for_agent(0)
    finally:
        provider.go.set()
    assert app.wait_for_agent(15)
    assert provider.closed.is_set()  # the rest of the reply was not waited for either


def test_esc_stops_a_streaming_reply_at_its_next_chunk(repo: Path, tmp_path: Path) -> None:
    app = make_app(repo, write_script(tmp_path / "hi.json", [{"content": "Hi."}]))
    touch = ToolCall("call_b_1", "bash", {"command": f"touch {tmp_path / 'never'}"})
    provider = BlockingProvider("Let me", " touch a file.", (touch,))

    async def scenario() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await run_turns(pilot, app, "hello")
            start_blocked_reply(app, provider)
            await submit(pilot, "touch it")
            await wait_until(pilot, provider.started.is_set)
            await wait_until(pilot, lambda: "Let me" in texts(app))
            await pilot.press("escape")
            provider.go.set()
            await wait_until(pilot, lambda: not app.running)
            assert texts(app)[-1] == "run ended (aborted): aborted by the user"
            s = app.driver.setup
            assert s is not None
            # The cut reply was dropped, not recorded half-done; its tool call never ran.
            assert s.messages[-1] == UserMessage("touch it")
            assert not any(isinstance(m, AssistantMessage) and m.tool_calls for m in s.messages)
            assert s.sessions.messages(s.session_id) == s.messages

    try:
        run(scenario())
    finally:
        provider.go.set()
    assert provider.closed.is_set()
    assert not (tmp_path / "never").exists()


def test_an_abort_during_setup_ends_the_run_before_the_model_is_called(
    repo: Path, tmp_path: Path
) -> None:
    """Esc pressed before the session is set up (the first message) is not lost."""
    app = make_app(repo, write_script(tmp_path / "s.json", [{"content": "Never reached."}]))
    app.driver.abort()  # as if pressed while assemble() runs: no config to flag yet
    end = app.driver.run("hello", emit=lambda _: None)
    assert end.reason == "aborted"
    s = app.driver.setup
    assert s is not None
    assert cast(ScriptedProvider, s.provider).requests == []
    assert INTERRUPTED not in str(s.messages)
    # The request was for that run only: the next one runs.
    assert app.driver.run("again", emit=lambda _: None).reason == "done"
