"""Reading the agents' own session files: Claude Code transcripts and Codex rollouts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.replay.transcript_lines import (
    A_PY,
    cc,
    cc_assistant,
    claude_session,
    codex_session,
    rollout,
    write_lines,
)
from veil.replay.calls import describe, shell_kind
from veil.replay.transcripts import TranscriptError, find_transcripts, read_transcript
from veil.tokens import estimate_tokens


def test_a_claude_code_transcript_is_its_requests_with_their_recorded_usage(
    tmp_path: Path,
) -> None:
    t = read_transcript(write_lines(tmp_path / "s.jsonl", claude_session()))
    assert (t.host, t.id, t.model) == ("claude", "sess-1", "claude-sonnet-4-5")
    steps = t.trajectory.steps
    # the reply split over two lines (text, then the call) is one request, counted once
    assert t.requests == 4 and len(steps) == 5
    assert [s.tool for s in steps] == ["Read", "Grep", "Bash", "Read", ""]
    assert [s.request for s in steps] == [True, True, False, True, True]
    assert t.recorded == (5_000, 5_200, None, 5_300, 5_500)
    first = steps[0]
    assert first.thought == "Reading it." and first.observation == A_PY
    assert (first.action, first.kind, first.paths) == ("cat -n a.py", "view", ("a.py",))
    assert steps[2].parallel and steps[2].observation == "a.py\nb.py"
    # the corrupt line was skipped and counted; the fixed part is what the first request
    # recorded beyond the prompt
    assert t.corrupt_lines == 1
    traj = t.trajectory
    assert traj.instance == "look at a.py"
    assert traj.fixed_tokens == 5_000
    assert traj.extra_fixed == 5_000 - estimate_tokens("look at a.py")


def test_a_rewound_branch_and_sub_agents_are_not_replayed(tmp_path: Path) -> None:
    lines = [
        cc("user", "u1", None, message={"role": "user", "content": "go"}),
        cc_assistant("a1", "u1", "abandoned", {"type": "text", "text": "First try."}, 3_000),
        # the user rewound: a new reply to the same prompt
        cc_assistant("b1", "u1", "kept", {"type": "text", "text": "Second try."}, 3_000),
        {
            **cc_assistant("s1", "b1", "side", {"type": "text", "text": "sub"}, 900),
            "isSidechain": True,
        },
    ]
    t = read_transcript(write_lines(tmp_path / "s.jsonl", lines))
    assert [s.thought for s in t.trajectory.steps] == ["Second try."]
    assert t.skipped_requests == 1


def test_claude_codes_own_compaction_is_marked(tmp_path: Path) -> None:
    lines = [
        cc("user", "u1", None, message={"role": "user", "content": "go"}),
        cc_assistant("a1", "u1", "m1", {"type": "text", "text": "One."}, 3_000),
        cc("system", "c1", None, subtype="compact_boundary", logicalParentUuid="a1"),
        cc(
            "user",
            "u2",
            "c1",
            isCompactSummary=True,
            message={"role": "user", "content": "Summary of the conversation"},
        ),
        cc_assistant("a2", "u2", "m2", {"type": "text", "text": "Two."}, 1_000),
        cc_assistant(
            "z", "a2", "m3", {"type": "text", "text": "API Error"}, 0, model="<synthetic>"
        ),
    ]
    t = read_transcript(write_lines(tmp_path / "s.jsonl", lines))
    assert [s.thought for s in t.trajectory.steps] == ["One.", "Two."]
    assert (t.compactions, t.compacted_at) == (1, 1)


def test_a_codex_rollout_is_its_requests_with_their_recorded_usage(tmp_path: Path) -> None:
    t = read_transcript(write_lines(tmp_path / "rollout-x.jsonl", codex_session()))
    assert (t.host, t.id, t.model) == ("codex", "codex-1", "gpt-5.5")
    steps = t.trajectory.steps
    assert [s.tool for s in steps] == ["exec_command", "apply_patch", ""]
    # a count repeated with nothing new is no request; OpenAI's input includes the cached
    assert t.recorded == (4_000, 4_100, 4_150)
    assert steps[0].thought == "Look first." and steps[0].observation == "x = 1\n"
    assert (steps[0].kind, steps[0].paths) == ("view", ("b.py",))
    assert (steps[1].kind, steps[1].paths) == ("edit", ("b.py",))
    assert steps[1].observation == "Success. Updated b.py"
    traj = t.trajectory
    assert traj.system == "You are Codex." and traj.instance == "fix b.py"
    assert traj.fixed_tokens == 4_000


def test_codex_compaction_is_marked(tmp_path: Path) -> None:
    lines = [
        *codex_session(),
        rollout("compacted", {"message": "summary"}),
        rollout(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "More."}],
            },
        ),
    ]
    t = read_transcript(write_lines(tmp_path / "rollout-x.jsonl", lines))
    assert (t.compactions, t.compacted_at) == (1, 3)
    assert t.recorded[-1] is None  # the last reply's usage never came


def test_files_that_are_not_sessions_are_named_errors(tmp_path: Path) -> None:
    other = write_lines(tmp_path / "other.jsonl", [{"name": "x"}, {"value": 1}])
    with pytest.raises(TranscriptError, match=r"other\.jsonl: neither a Claude Code"):
        read_transcript(other)
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not json at all\n{nor this\n")
    with pytest.raises(TranscriptError, match=r"junk\.jsonl: neither"):
        read_transcript(junk)
    binary = tmp_path / "image.jsonl"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    with pytest.raises(TranscriptError, match=r"image\.jsonl: not a text file"):
        read_transcript(binary)
    empty = write_lines(
        tmp_path / "empty.jsonl",
        [cc("user", "u1", None, message={"role": "user", "content": "hi"})],
    )
    with pytest.raises(TranscriptError, match=r"empty\.jsonl: no model request recorded"):
        read_transcript(empty)
    with pytest.raises(TranscriptError, match=r"missing\.jsonl: no such file or directory"):
        find_transcripts([tmp_path / "missing.jsonl"])


def test_a_directory_means_every_jsonl_under_it(tmp_path: Path) -> None:
    write_lines(tmp_path / "p1" / "a.jsonl", claude_session())
    write_lines(tmp_path / "p2" / "deep" / "b.jsonl", codex_session())
    (tmp_path / "p2" / "notes.txt").write_text("not a session")
    found = find_transcripts([tmp_path])
    assert [(p.name, named) for p, named in found] == [("a.jsonl", False), ("b.jsonl", False)]
    (tmp_path / "none").mkdir()
    with pytest.raises(TranscriptError, match=r"none: no \*\.jsonl file under"):
        find_transcripts([tmp_path / "none"])


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        (
            "Read",
            {"file_path": "/repo/a.py", "offset": 10, "limit": 5},
            ("sed -n '10,14p' a.py", "view", ("a.py",)),
        ),
        (
            "Edit",
            {"file_path": "/repo/a.py", "old_string": "x = 1", "new_string": "x = 2"},
            ("edit a.py\nx = 1\nx = 2", "edit", ("a.py",)),
        ),
        (
            "Bash",
            {"command": "cd /repo && python -m pytest -q"},
            ("cd /repo && python -m pytest -q", "test", ()),
        ),
        (
            "exec_command",
            {"cmd": "sed -n '1,40p' src/m.py"},
            ("sed -n '1,40p' src/m.py", "view", ("src/m.py",)),
        ),
        ("shell", {"command": ["bash", "-lc", "rg alpha"]}, ("rg alpha", "search", ())),
        ("TodoWrite", {"todos": []}, ('TodoWrite {"todos": []}', "other", ())),
    ],
)
def test_tool_calls_are_actions_the_need_detector_reads(
    name: str, args: dict[str, object], expected: tuple[str, str, tuple[str, ...]]
) -> None:
    assert describe(name, args, "/repo") == expected


def test_shell_commands_kinds() -> None:
    assert shell_kind("cat a.py b.py") == ("view", ("a.py", "b.py"))
    assert shell_kind("head -n 20 a.py") == ("view", ("a.py",))
    assert shell_kind("sed -i 's/a/b/' a.py") == ("edit", ("a.py",))
    assert shell_kind("echo hi > out.txt")[0] == "edit"
    assert shell_kind("grep -rn foo . 2>&1")[0] == "search"
    assert shell_kind("make")[0] == "run"
