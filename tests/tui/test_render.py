"""The TUI's plain-text pieces (no Textual app needed)."""

from __future__ import annotations

from veil.agent.report import ARGS_LINES, describe_arguments
from veil.tui.render import (
    StatusInfo,
    count,
    goodbye_line,
    short_args,
    short_session,
    status_line,
    tool_line,
    welcome_line,
)


def test_tool_line_is_one_line_with_short_arguments() -> None:
    line = tool_line("write", {"path": "x.py", "content": "a\n" * 200}, "ok")
    assert "\n" not in line
    assert line.startswith('· write {"path": "x.py"')
    assert line.endswith("... [ok]")
    assert short_args({"path": "a.py"}) == '{"path": "a.py"}'


def test_status_line_before_and_after_setup() -> None:
    before = status_line(StatusInfo("scripted:s.json", window=5000, memory_on=False))
    assert before == (
        "scripted:s.json │ window —/5,000 │ 0 in / 0 out │ T — │ level — │ memory off │ session new"
    )
    after = status_line(
        StatusInfo(
            "m",
            900,
            1800,
            0.15,
            2,
            "s_01a22b4ce3939009cb53717bc05e18d5",
            running=True,
            tokens_in=123_456,
            tokens_out=789,
            memory_on=True,
        )
    )
    assert "window 900/1,800 (50%)" in after
    assert "123.5k in / 789 out" in after
    assert "T 0.15" in after
    assert "level 2" in after
    assert "memory on" in after
    assert "session s_…c05e18d5" in after
    assert after.endswith("running (esc stops)")


def test_counts_stay_short() -> None:
    assert [count(n) for n in (0, 9_999, 10_000, 128_000, 1_234_567)] == [
        "0",
        "9,999",
        "10k",
        "128k",
        "1.2M",
    ]


def test_welcome_and_goodbye_say_where_and_how_to_come_back() -> None:
    welcome = welcome_line("~/code/app", "openai:gpt-4.1-mini")
    assert "~/code/app" in welcome and "openai:gpt-4.1-mini" in welcome and "/help" in welcome
    goodbye = goodbye_line("s_0123")
    assert "session s_0123" in goodbye
    assert "veil -c" in goodbye and "veil --session s_0123" in goodbye


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
