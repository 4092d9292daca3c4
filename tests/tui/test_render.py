"""The TUI's plain-text pieces (no Textual app needed)."""

from __future__ import annotations

from veil.agent.report import ARGS_LINES, describe_arguments
from veil.tui.render import StatusInfo, short_args, short_session, status_line, tool_line


def test_tool_line_is_one_line_with_short_arguments() -> None:
    line = tool_line("write", {"path": "x.py", "content": "a\n" * 200}, "ok")
    assert "\n" not in line
    assert line.startswith('· write {"path": "x.py"')
    assert line.endswith("... [ok]")
    assert short_args({"path": "a.py"}) == '{"path": "a.py"}'


def test_status_line_before_and_after_setup() -> None:
    before = status_line(StatusInfo("scripted:s.json", window=5000))
    assert before == "scripted:s.json │ window —/5,000 │ T — │ level — │ session new"
    after = status_line(
        StatusInfo("m", 900, 1800, 0.15, 2, "s_01a22b4ce3939009cb53717bc05e18d5", running=True)
    )
    assert "window 900/1,800 (50%)" in after
    assert "T 0.15" in after
    assert "level 2" in after
    assert "session s_…c05e18d5" in after
    assert after.endswith("running (esc aborts)")


def test_short_session_keeps_the_distinctive_end() -> None:
    assert short_session("s_01a22b4ce3939009cb53717bc05e18d5") == "s_…c05e18d5"
    assert short_session(None) == "new"
    assert short_session("s_abc") == "s_abc"


def test_describe_arguments_shows_commands_verbatim_and_cuts_long_ones() -> None:
    text = describe_arguments({"command": "echo hi\nls", "timeout": 5})
    assert text.splitlines() == ["command:", "  echo hi", "  ls", "timeout: 5"]
    long = describe_arguments({"content": "x\n" * (ARGS_LINES * 2)})
    assert len(long.splitlines()) == ARGS_LINES + 1
    assert long.endswith("more lines)")
