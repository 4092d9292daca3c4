"""``veil hook gemini EVENT``: Gemini CLI 0.61's hook payloads mapped onto Veil's handlers and
their answers back into its output shape (:mod:`veil.clients.gemini_hooks`). The payloads are
the shapes its bundle builds (``createBaseInput`` and each event's fields; ``run_shell_command``'s
``llmContent``); the real binary runs them in ``tests/hosts/test_gemini_hooks.py``."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import VEIL, Ran, hook_env
from veil.cli.hook import run_hook
from veil.clients import gemini_hooks
from veil.clients.claude_code_input import HookInputError
from veil.launch.gemini_cli import run_settings


def base(project: Path, event: str, session: str = "g1", **fields: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": str(project / "chat.jsonl"),
        "cwd": str(project),
        "hook_event_name": event,
        "timestamp": "2026-01-01T00:00:00.000Z",
        **fields,
    }


def shell_output(text: str, code: int = 0, pgid: int = 4242) -> str:
    """``run_shell_command``'s ``llmContent`` as Gemini CLI 0.61 builds it."""
    parts = [f"Output: {text or '(empty)'}"]
    if code:
        parts.append(f"Exit Code: {code}")
    parts.append(f"Process Group PGID: {pgid}")
    return "<untrusted_context>\n" + "\n".join(parts) + "\n</untrusted_context>"


def after_shell(project: Path, command: str, text: str, code: int, pgid: int) -> dict[str, Any]:
    return base(
        project, "AfterTool", tool_name="run_shell_command",
        tool_input={"command": command, "description": "run the tests"},
        tool_response={"llmContent": shell_output(text, code, pgid), "returnDisplay": text},
    )  # fmt: skip


def run(event: str, data: dict[str, Any] | str) -> Ran:
    out, err = io.StringIO(), io.StringIO()
    stdin = data if isinstance(data, str) else json.dumps(data)
    code = run_hook("gemini", event, stdin=io.StringIO(stdin), stdout=out, stderr=err)
    return Ran(code, out.getvalue(), err.getvalue())


def test_a_shell_result_gives_its_output_and_exit_status_without_the_process_group() -> None:
    assert gemini_hooks.shell_response(shell_output("FAILED x\nmore", 1, 77)) == {
        "stdout": "FAILED x\nmore",
        "exit_code": 1,
    }
    assert gemini_hooks.shell_response(shell_output("", 0)) == {"stdout": "", "exit_code": 0}
    # an output line that looks like a trailer, before the real trailers, stays output
    content = shell_output("Exit Code: 9\nreal", 2)
    assert gemini_hooks.shell_response(content) == {"stdout": "Exit Code: 9\nreal", "exit_code": 2}
    signalled = "<untrusted_context>\nOutput: x\nSignal: 15\n</untrusted_context>"
    assert gemini_hooks.shell_response(signalled)["interrupted"] is True


def test_events_map_onto_the_handlers(tmp_path: Path) -> None:
    prompt = gemini_hooks.parse_payload_of(base(tmp_path, "BeforeAgent", prompt="fix it"),
                                           "BeforeAgent")  # fmt: skip
    assert (prompt.event, prompt.prompt) == ("UserPromptSubmit", "fix it")
    assert prompt.cwd == str(tmp_path)
    resume = gemini_hooks.parse_payload_of(base(tmp_path, "SessionStart", source="resume"),
                                           "SessionStart")  # fmt: skip
    assert (resume.event, resume.source) == ("SessionStart", "resume")
    edit = {"file_path": "calc.py", "old_string": "a", "new_string": "b", "instruction": "why"}
    before = gemini_hooks.parse_payload_of(
        base(tmp_path, "BeforeTool", tool_name="replace", tool_input=edit), "BeforeTool"
    )
    assert before.event == "PreToolUse"
    assert before.tool_input == {"file_path": "calc.py", "old_string": "a", "new_string": "b",
                                 "allow_multiple": False}  # fmt: skip
    failed = gemini_hooks.parse_payload_of(
        base(tmp_path, "AfterTool", tool_name="replace", tool_input=edit,
             tool_response={"llmContent": "Error: no match", "returnDisplay": "",
                            "error": {"message": "0 occurrences found", "type": "no_match"}}),
        "AfterTool",
    )  # fmt: skip
    assert (failed.event, failed.error) == ("PostToolUseFailure", "0 occurrences found")
    assert failed.tool_input == before.tool_input  # the same call, the same digest
    shell = gemini_hooks.parse_payload_of(after_shell(tmp_path, "make", "boom", 2, 1), "AfterTool")
    assert shell.event == "PostToolUse"
    assert shell.tool_response == {"stdout": "boom", "exit_code": 2}
    with pytest.raises(HookInputError, match="unknown event"):
        gemini_hooks.parse_payload_of({}, "PreToolUse")
    with pytest.raises(HookInputError, match="'AfterTool' event"):
        gemini_hooks.parse_payload_of(base(tmp_path, "AfterTool"), "BeforeTool")


def test_answers_in_gemini_cli_s_shape() -> None:
    assert gemini_hooks.answer("BeforeTool", None) == {}
    reason = "Veil blocked this call: x"
    deny = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": reason}}  # fmt: skip
    assert gemini_hooks.answer("BeforeTool", deny) == {
        "decision": "deny",
        "reason": "Veil blocked this call: x",
    }
    specific = {"hookEventName": "PostToolUse", "additionalContext": "Veil stopped"}
    stop = {"continue": False, "stopReason": "Veil stopped", "systemMessage": "Veil: stopped",
            "hookSpecificOutput": specific}  # fmt: skip
    assert gemini_hooks.answer("AfterTool", stop) == {
        "continue": False,
        "stopReason": "Veil stopped",
        "systemMessage": "Veil: stopped",
    }
    note = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "level 2"},
            "systemMessage": "Veil: Claude was shown every failure"}  # fmt: skip
    assert gemini_hooks.answer("AfterTool", note) == {
        "hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": "level 2"},
        "systemMessage": "Veil: the model was shown every failure",
    }


def test_the_run_s_settings_carry_veil_s_hooks_after_the_user_s(tmp_path: Path) -> None:
    own = {"matcher": "write_file", "hooks": [{"type": "command", "command": "lint"}]}
    user = {"hooks": {"BeforeTool": [own]}, "hooksConfig": {"notifications": False}}
    merged = run_settings(user, ("/opt/veil",), tmp_path)
    hooks = merged["hooks"]
    assert set(hooks) == {"SessionStart", "BeforeAgent", "BeforeTool", "AfterTool"}
    assert hooks["BeforeTool"][0] == own and len(hooks["BeforeTool"]) == 2
    mine = hooks["BeforeTool"][1]
    assert mine["matcher"] == "^(run_shell_command|replace|write_file)$"
    assert hooks["AfterTool"][0]["matcher"] == gemini_hooks.TOOL_MATCHER
    assert "read_file" in gemini_hooks.TOOL_MATCHER
    assert mine["hooks"] == [{"name": "veil", "type": "command", "timeout": 5000,
                              "command": "/opt/veil hook gemini BeforeTool"}]  # fmt: skip
    assert hooks["SessionStart"][0]["matcher"] == "resume"
    assert "matcher" not in hooks["BeforeAgent"][0]
    assert merged["hooksConfig"] == {"notifications": False}
    assert user["hooks"]["BeforeTool"] == [own]  # the user's own settings untouched
    assert "veil" in merged["mcpServers"]
    # a "hooks" Veil cannot read is left alone, without Veil's
    assert run_settings({"hooks": "odd"}, ("veil",), tmp_path)["hooks"] == "odd"
    # nor are hooks of the user's that already run Veil's
    already = run_settings({}, ("veil",), tmp_path)["hooks"]
    assert run_settings({"hooks": already}, ("/opt/veil",), tmp_path)["hooks"] == already


def test_repeated_failures_are_recorded_as_one_fingerprint_and_noted(project: Path) -> None:
    first = run("BeforeAgent", base(project, "BeforeAgent", prompt="make test_add pass"))
    assert first.stdout == "{}\n"  # no memory yet: nothing to brief
    answers = [run("AfterTool", after_shell(project, "pytest -q", "FAILED test_add", 1, 100 + i))
               for i in range(5)]  # fmt: skip
    assert all(a.code == 0 for a in answers)
    noted = [a.answer for a in answers if a.answer]
    assert noted, [a.stdout for a in answers]
    context = noted[-1]["hookSpecificOutput"]["additionalContext"]
    assert "level 2 of 3" in context and context.count("fp1:") >= 1
    fingerprints = {line.split("[")[-1] for line in context.splitlines() if line.startswith("- #")}
    assert len(fingerprints) == 1, context  # the process group is not part of the failure


def test_no_opinion_is_an_empty_object_and_exit_0(project: Path) -> None:
    for stdin in ("not json", "[]", json.dumps(base(project, "AfterTool"))):
        ran = run("BeforeTool", stdin)
        assert (ran.code, ran.stdout) == (0, "{}\n") and ran.stderr.count("\n") == 1
    unknown = run("PreToolUse", json.dumps(base(project, "PreToolUse")))
    assert unknown.stdout == "{}\n" and "unknown event" in unknown.stderr
    # a tool Veil does not track: nothing to say
    other = base(project, "BeforeTool", tool_name="google_web_search", tool_input={"query": "x"})
    assert run("BeforeTool", other).stdout == "{}\n"


def test_the_command_answers_as_gemini_cli_runs_it(project: Path) -> None:
    """``veil hook gemini EVENT`` as a process: stdin in, one JSON object out, exit 0."""
    data = base(project, "BeforeTool", tool_name="run_shell_command", tool_input={"command": "ls"})
    done = subprocess.run([*VEIL, "hook", "gemini", "BeforeTool"], input=json.dumps(data),
                          capture_output=True, text=True, timeout=60, check=False,
                          env=hook_env(), cwd=project)  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "{}\n", "")
