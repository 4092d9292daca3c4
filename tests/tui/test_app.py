"""The interactive ``veil`` under Textual's pilot, with a scripted model in a temporary repo.

The heart of it (seed, last paragraph): when a tool call's result leaves the context its line
in the transcript is dimmed, and when ``veil_expand`` brings it back the line is bright again.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path
from typing import cast

import pytest
from textual.widgets import Input

from tests.tui.conftest import (
    READ_ALL,
    make_app,
    run,
    run_turns,
    submit,
    texts,
    wait_until,
    write_script,
)
from veil.agent.runtime import RunOptions
from veil.llm.messages import AssistantMessage, Response, ToolCall, UserMessage
from veil.llm.scripted import ScriptedProvider
from veil.tui.app import VeilApp, run_tui
from veil.tui.approval import ApprovalScreen, OutputScreen

SNAPSHOT = Path(__file__).parent / "snapshots" / "dimmed_tool_call.svg"


def svg_text(line: str) -> str:
    """``line`` as Rich writes it into an SVG text element (spaces and quotes escaped)."""
    return html.escape(line).replace(" ", "&#160;")


DIMMED_TEXT = svg_text('· read {"path": "a.py"} [ok] (out of context)')
LIVE_TEXT = svg_text('· read {"path": "d.py"} [ok]')


def evicted_lines(app: VeilApp) -> set[str]:
    return {cid for cid in ("call_1_1", "call_2_1", "call_3_1", "call_4_1") if is_dim(app, cid)}


def is_dim(app: VeilApp, call_id: str) -> bool:
    line = app.tool_line(call_id)
    assert line is not None, f"no transcript line for {call_id}"
    assert line.has_class("evicted") == str(line.render()).endswith("(out of context)")
    return line.has_class("evicted")


def svg_fill(svg: str, text: str) -> str:
    """The fill colour of the SVG text element holding ``text``."""
    match = re.search(r'<text class="([^"]+)"[^>]*>' + re.escape(text) + "<", svg)
    assert match, f"{text!r} is not in the screenshot"
    style = re.search(re.escape(match.group(1)) + r" \{ fill: (#[0-9a-f]{6})", svg)
    assert style
    return style.group(1)


def test_evicted_tool_call_is_dimmed_and_expanding_it_brightens_it(
    repo: Path, tmp_path: Path
) -> None:
    model = tmp_path / "read.json"
    app = make_app(repo, write_script(model, READ_ALL))

    async def scenario() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await run_turns(pilot, app, "look at the files")
            s = app.driver.setup
            assert s is not None
            evicted = s.harness.evicted_tool_calls()
            # The first read was pushed out by the later ones; the newest is still live.
            assert "call_1_1" in evicted
            assert "call_4_1" not in evicted
            assert evicted_lines(app) == evicted & {"call_1_1", "call_2_1", "call_3_1", "call_4_1"}

            svg = app.export_screenshot()
            assert DIMMED_TEXT in svg
            assert svg_fill(svg, DIMMED_TEXT) != svg_fill(svg, LIVE_TEXT)
            if not SNAPSHOT.exists() or os.environ.get("VEIL_UPDATE_SNAPSHOTS"):
                SNAPSHOT.parent.mkdir(exist_ok=True)
                SNAPSHOT.write_text(svg)

            # The stub the model saw holds the pointer; the next run expands exactly it.
            item = s.harness.engine.by_tool_call("call_1_1")
            assert item is not None
            assert item.pointer in s.harness.engine.stub(item.id)
            provider = cast(ScriptedProvider, s.provider)
            expand = ToolCall("call_x_1", "veil_expand", {"pointer": item.pointer})
            provider.replies = (
                *provider.replies,
                Response(AssistantMessage("Bringing a.py back.", (expand,))),
                Response(AssistantMessage("It is back.")),
            )
            await run_turns(pilot, app, "bring a.py back")
            assert "call_1_1" not in s.harness.evicted_tool_calls()
            assert not is_dim(app, "call_1_1")
            assert "It is back." in texts(app)

    run(scenario())


def test_committed_snapshot_shows_the_dimmed_line() -> None:
    svg = SNAPSHOT.read_text()
    assert DIMMED_TEXT in svg
    assert svg_fill(svg, DIMMED_TEXT) != svg_fill(svg, LIVE_TEXT)


def test_status_line_context_pin_memory_and_quit(repo: Path, tmp_path: Path) -> None:
    app = make_app(repo, write_script(tmp_path / "read.json", READ_ALL))

    async def scenario() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            status = str(app.query_one("#status").render())
            assert "T —" in status and "session new" in status
            await submit(pilot, "/context")
            assert texts(app)[-1] == "/context: no session yet; send a message first."

            await run_turns(pilot, app, "look at the files")
            s = app.driver.setup
            assert s is not None
            status = str(app.query_one("#status").render())
            assert f"T {s.harness.engine.threshold:.2f}" in status
            assert "level 0" in status
            assert f"/{s.harness.engine.config.window_tokens:,} (" in status  # the real window
            assert s.session_id[-8:] in status

            await submit(pilot, "/context")
            manifest = texts(app)[-1]
            assert manifest.startswith("<veil-manifest>")
            assert manifest == s.harness.engine.manifest()

            assert is_dim(app, "call_1_1")
            await submit(pilot, "/pin call_1_1")
            assert texts(app)[-1].startswith("pinned ")
            assert not is_dim(app, "call_1_1")
            await submit(pilot, "/pin nothing_here")
            assert texts(app)[-1].startswith("/pin: ")

            await submit(pilot, "/memory")
            assert texts(app)[-1].startswith("long-term memory briefing:")
            await submit(pilot, "/model")
            assert "restart with `veil --model" in texts(app)[-1]
            await submit(pilot, "/clear")
            assert texts(app) == []
            await submit(pilot, "/quit")
            await pilot.pause()
        assert app.return_code == 0

    run(scenario())


def test_ask_policy_shows_a_modal_and_obeys_it(repo: Path, tmp_path: Path) -> None:
    model = write_script(
        tmp_path / "write.json",
        [
            {
                "content": "Writing two files.",
                "tool_calls": [
                    {"name": "write", "arguments": {"path": "yes.txt", "content": "allowed"}},
                    {"name": "write", "arguments": {"path": "no.txt", "content": "denied"}},
                ],
            },
            {"content": "Done."},
        ],
    )
    app = make_app(repo, model, approve="ask")

    async def scenario() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await submit(pilot, "write them")
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
            screen = cast(ApprovalScreen, app.screen)
            assert (screen.tool_name, screen.arguments["path"]) == ("write", "yes.txt")
            # Typing while the agent runs queues the message for its next model call.
            prompt = app.query_one("#prompt", Input)
            app.on_input_submitted(Input.Submitted(prompt, "and keep it short"))
            assert texts(app)[-1] == "(queued for the running agent)"
            await pilot.click("#allow")
            await wait_until(
                pilot,
                lambda: (
                    isinstance(app.screen, ApprovalScreen)
                    and app.screen.arguments["path"] == "no.txt"
                ),
            )
            await pilot.press("n")
            await wait_until(pilot, lambda: not app.running)
            line_yes, line_no = app.tool_line("call_1_1"), app.tool_line("call_1_2")
            assert line_yes is not None and line_no is not None
            assert (line_yes.status, line_no.status) == ("ok", "denied")
            assert (repo / "yes.txt").read_text() == "allowed"
            assert not (repo / "no.txt").exists()
            s = app.driver.setup
            assert s is not None
            assert UserMessage("and keep it short") in s.messages
            assert s.sessions.messages(s.session_id) == s.messages

    run(scenario())


def test_ctrl_c_aborts_the_run(repo: Path, tmp_path: Path) -> None:
    model = write_script(
        tmp_path / "abort.json",
        [
            {
                "content": "Shell.",
                "tool_calls": [{"name": "bash", "arguments": {"command": "true"}}],
            },
            {"content": "Never reached."},
        ],
    )
    app = make_app(repo, model, approve="ask")

    async def scenario() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await submit(pilot, "run something")
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
            await pilot.press("ctrl+c")
            await wait_until(pilot, lambda: not app.running)
            assert not isinstance(app.screen, ApprovalScreen)
            assert texts(app)[-1] == "run ended (aborted): aborted by the user"
            assert "Never reached." not in texts(app)

    run(scenario())


def test_session_is_persisted_and_resumed(repo: Path, tmp_path: Path) -> None:
    model = write_script(tmp_path / "read.json", [*READ_ALL, {"content": "Resumed."}])
    first = make_app(repo, model)

    async def run_first() -> None:
        async with first.run_test(size=(100, 30)) as pilot:
            await run_turns(pilot, first, "look at the files")

    run(run_first())
    s = first.driver.setup
    assert s is not None
    assert s.sessions.messages(s.session_id) == s.messages

    second = make_app(
        repo, write_script(tmp_path / "again.json", [{"content": "Resumed."}]), resume=True
    )

    async def run_second() -> None:
        async with second.run_test(size=(100, 30)) as pilot:
            await run_turns(pilot, second, "and now?")
            lines = texts(second)
            assert "> look at the files" in lines
            assert lines[-2:] == ["> and now?", "Resumed."]
            assert second.tool_line("call_1_1") is not None
            resumed = second.driver.setup
            assert resumed is not None and resumed.session_id == s.session_id
            assert len(resumed.sessions.messages(s.session_id)) == len(s.messages) + 2

    run(run_second())


def test_run_tui_without_a_model_explains_and_returns_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.delenv("VEIL_MODEL", raising=False)
    assert run_tui(RunOptions(model=None, cwd=tmp_path)) == 1
    assert "VEIL_MODEL" in capsys.readouterr().err


def test_exit_codes_output_viewer_always_allow_and_unknown_commands(
    repo: Path, tmp_path: Path
) -> None:
    model = write_script(
        tmp_path / "shell.json",
        [
            {
                "content": "Shell.",
                "tool_calls": [{"name": "bash", "arguments": {"command": "echo boom; exit 3"}}],
            },
            {
                "content": "Again.",
                "tool_calls": [{"name": "bash", "arguments": {"command": "echo fine"}}],
            },
            {"content": "Done."},
        ],
    )
    app = make_app(repo, model, approve="ask")

    async def scenario() -> None:
        async with app.run_test(size=(100, 30)) as pilot:
            await submit(pilot, "/frobnicate")
            assert texts(app)[-1] == "unknown command /frobnicate; /help lists the commands"
            await submit(pilot, "run it")
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
            await pilot.press("a")  # always allow bash: the second call is not asked
            await wait_until(pilot, lambda: not app.running)
            first, second = app.tool_line("call_1_1"), app.tool_line("call_2_1")
            assert first is not None and second is not None
            assert (first.status, second.status) == ("exit 3", "ok")
            assert first.has_class("failed") and not second.has_class("failed")
            await submit(pilot, "/output call_1_1")
            screen = app.screen
            assert isinstance(screen, OutputScreen)
            assert "boom" in screen.text and "[exit code 3]" in screen.text
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, OutputScreen)
            await pilot.click(second)
            await pilot.pause()
            assert isinstance(app.screen, OutputScreen) and "fine" in app.screen.text

    run(scenario())
