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
from textual.app import App
from textual.pilot import Pilot

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
from veil.tui.prompt import PromptArea
from veil.tui.render import count

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
            welcome = texts(app)[0]
            assert welcome.startswith(f"veil in {repo.resolve()} with scripted:")
            assert "/help" in welcome
            status = str(app.query_one("#status").render())
            assert "T —" in status and "session new" in status
            assert "0 in / 0 out" in status and "memory off" in status
            await submit(pilot, "/context")
            assert texts(app)[-1] == "/context: no session yet; send a message first."

            await run_turns(pilot, app, "look at the files")
            s = app.driver.setup
            assert s is not None
            status = str(app.query_one("#status").render())
            assert f"T {s.harness.engine.threshold:.2f}" in status
            assert "level 0" in status
            assert f"/{s.harness.engine.config.window_tokens:,} (" in status  # the real window
            assert f"window {s.harness.sent_tokens:,}/" in status  # the calibrated count
            assert s.session_id[-8:] in status
            assert f"{count(app.tokens_in)} in / {count(app.tokens_out)} out" in status
            assert "memory off" in status  # a scripted model has no extraction model

            await submit(pilot, "/context")
            figure, manifest = texts(app)[-2:]
            assert manifest.startswith("<veil-manifest>")
            assert manifest == s.harness.engine.manifest()
            # one window figure: /context shows the status line's, and the manifest no other
            assert figure.startswith("window ") and figure in status
            assert "window" not in manifest.splitlines()[1]

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
            prompt = app.query_one("#prompt", PromptArea)
            app.on_prompt_area_submitted(PromptArea.Submitted(prompt, "and keep it short"))
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
            # The continued conversation and its session are there before any message.
            assert second.driver.setup is None
            lines = texts(second)
            assert f"Continuing session {s.session_id}: {len(s.messages)} earlier messages" in lines
            assert "> look at the files" in lines and "Done reading." in lines
            assert second.tool_line("call_4_1") is not None
            assert s.session_id[-8:] in str(second.query_one("#status").render())

            await run_turns(pilot, second, "and now?")
            lines = texts(second)
            assert lines.count("> look at the files") == 1  # not shown a second time
            assert lines[-2:] == ["> and now?", "Resumed."]
            assert second.tool_line("call_1_1") is not None
            resumed = second.driver.setup
            assert resumed is not None and resumed.session_id == s.session_id
            assert len(resumed.sessions.messages(s.session_id)) == len(s.messages) + 2

    run(run_second())


def test_status_counts_the_tokens_the_provider_reported(repo: Path, tmp_path: Path) -> None:
    usage = [
        {"input_tokens": 1200, "output_tokens": 34},
        {"input_tokens": 1300, "output_tokens": 5},
    ]
    model = write_script(
        tmp_path / "usage.json",
        [
            {
                "content": "Looking.",
                "tool_calls": [{"name": "ls", "arguments": {}}],
                "usage": usage[0],
            },
            {"content": "Done.", "usage": usage[1]},
        ],
    )
    app = make_app(repo, model)

    async def scenario() -> None:
        async with app.run_test(size=(120, 30)) as pilot:
            await run_turns(pilot, app, "look")
            status = str(app.query_one("#status").render())
            assert "│ 2,500 in / 39 out │" in status

    run(scenario())


def test_continuing_without_a_session_says_so_at_once(repo: Path, tmp_path: Path) -> None:
    app = make_app(repo, write_script(tmp_path / "s.json", [{"content": "Hi."}]), resume=True)

    async def scenario() -> None:
        async with app.run_test(size=(100, 30)):
            assert texts(app)[-1] == (
                "veil: there is no earlier session in this project to continue "
                "(see `veil sessions`)"
            )

    run(scenario())


def test_run_tui_prints_the_session_to_continue_when_it_closes(
    repo: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    apps: list[VeilApp] = []

    def headless(self: VeilApp) -> None:
        async def drive(pilot: Pilot[object]) -> None:
            await run_turns(cast(Pilot[int], pilot), self, "hello")
            await pilot.press("ctrl+q")

        apps.append(self)
        App.run(self, headless=True, size=(100, 30), auto_pilot=drive)

    monkeypatch.setattr(VeilApp, "run", headless)
    model = write_script(tmp_path / "hi.json", [{"content": "Hi."}])
    assert run_tui(RunOptions(model=model, approve="auto", window=5000, cwd=repo)) == 0
    s = apps[0].driver.setup
    assert s is not None
    err = capsys.readouterr().err
    assert err.strip() == (
        f"veil: session {s.session_id}. `veil -c` continues it "
        f"(or `veil --session {s.session_id}`)."
    )


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


def test_a_call_left_without_result_gets_its_recorded_one_on_continue(
    repo: Path, tmp_path: Path
) -> None:
    """A session that stopped between a call and its result (a crash, a kill): the preview
    shows the call as unknown; once the session is set up it has its recorded result."""
    first = make_app(repo, write_script(tmp_path / "hi.json", [{"content": "Hi."}]))

    async def run_first() -> None:
        async with first.run_test(size=(100, 30)) as pilot:
            await run_turns(pilot, first, "hello")

    run(run_first())
    s = first.driver.setup
    assert s is not None
    pending = AssistantMessage("Running.", (ToolCall("call_z_1", "bash", {"command": "true"}),))
    s.sessions.append(s.session_id, len(s.messages), [pending])

    second = make_app(
        repo, write_script(tmp_path / "again.json", [{"content": "Back."}]), resume=True
    )

    async def run_second() -> None:
        async with second.run_test(size=(100, 30)) as pilot:
            line = second.tool_line("call_z_1")
            assert line is not None and line.status == "?"
            await run_turns(pilot, second, "go on")
            assert line.status == "error"
            await submit(pilot, "/output call_z_1")
            assert isinstance(second.screen, OutputScreen)
            assert "interrupted" in second.screen.text

    run(run_second())
