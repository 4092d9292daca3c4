"""Small hand-written session files in the two agents' formats, for the replay's tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Line = dict[str, Any] | str
"""A JSON object, or a raw line as it is written (a corrupt one)."""


def write_lines(path: Path, lines: Sequence[Line]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    )
    return path


def usage(total: int) -> dict[str, int]:
    """An Anthropic usage block whose input (uncached + written + read) is ``total``."""
    return {
        "input_tokens": 3,
        "cache_creation_input_tokens": total - 1003,
        "cache_read_input_tokens": 1000,
        "output_tokens": 12,
    }


def cc(kind: str, uuid: str, parent: str | None, **fields: Any) -> dict[str, Any]:
    """A Claude Code transcript line."""
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "sess-1",
        "cwd": "/repo",
        **fields,
    }


def cc_assistant(
    uuid: str,
    parent: str,
    msg: str,
    block: dict[str, Any],
    total: int,
    model: str = "claude-sonnet-4-5",
) -> dict[str, Any]:
    """One content block of the reply ``msg`` (Claude Code writes one line per block)."""
    message = {
        "id": msg,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block],
        "usage": usage(total),
    }
    return cc("assistant", uuid, parent, requestId=f"req-{msg}", message=message)


def cc_result(uuid: str, parent: str, call: str, text: str) -> dict[str, Any]:
    content = [{"type": "tool_result", "tool_use_id": call, "content": text}]
    return cc("user", uuid, parent, message={"role": "user", "content": content})


A_PY = "".join(f"{n}\tdef alpha_{n}(x):\n" for n in range(1, 41))
"""What Claude Code's Read shows of ``/repo/a.py``: numbered lines."""


def claude_session() -> list[Line]:
    """A prompt; a reply split over two lines (text, then a Read); a corrupt line; the
    result; a reply with two parallel calls; their results; a last reply re-reading a.py."""
    read = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/repo/a.py"}}
    grep = {
        "type": "tool_use",
        "id": "t2",
        "name": "Grep",
        "input": {"pattern": "alpha_7", "path": "/repo"},
    }
    bash = {"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "ls"}}
    again = {"type": "tool_use", "id": "t4", "name": "Read", "input": {"file_path": "/repo/a.py"}}
    return [
        {"type": "queue-operation", "operation": "enqueue", "sessionId": "sess-1"},
        cc("user", "u1", None, message={"role": "user", "content": "look at a.py"}),
        cc_assistant("a1", "u1", "m1", {"type": "text", "text": "Reading it."}, 5_000),
        cc_assistant("a2", "a1", "m1", read, 5_000),
        "{this line is cut sho",
        cc_result("u2", "a2", "t1", A_PY),
        cc_assistant("a3", "u2", "m2", grep, 5_200),
        cc_assistant("a4", "a3", "m2", bash, 5_200),
        cc_result("u3", "a4", "t2", "a.py:7:def alpha_7(x):"),
        cc_result("u4", "u3", "t3", "a.py\nb.py"),
        cc_assistant("a5", "u4", "m3", again, 5_300),
        cc_result("u5", "a5", "t4", A_PY),
        cc_assistant("a6", "u5", "m4", {"type": "text", "text": "Done."}, 5_500),
    ]


def rollout(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2026-01-01T00:00:00Z", "type": kind, "payload": payload}


def token_count(last: int, total: int) -> dict[str, Any]:
    info = {
        "total_token_usage": {"input_tokens": total},
        "last_token_usage": {"input_tokens": last, "cached_input_tokens": last // 2},
    }
    return rollout("event_msg", {"type": "token_count", "info": info})


def codex_session() -> list[Line]:
    """Instructions, a prompt, a reply with a command, its output and usage (then the same
    count again), a patch, its output and usage, a last reply."""
    patch = "*** Begin Patch\n*** Update File: b.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"
    return [
        rollout(
            "session_meta",
            {"id": "codex-1", "cwd": "/repo", "base_instructions": {"text": "You are Codex."}},
        ),
        rollout("turn_context", {"model": "gpt-5.5", "cwd": "/repo"}),
        rollout(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "fix b.py"}],
            },
        ),
        rollout("event_msg", {"type": "token_count", "info": None}),
        rollout(
            "response_item",
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Look first."}]},
        ),
        rollout(
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": json.dumps({"cmd": "cat b.py"}),
                "call_id": "c1",
            },
        ),
        rollout(
            "response_item", {"type": "function_call_output", "call_id": "c1", "output": "x = 1\n"}
        ),
        token_count(4_000, 4_000),
        token_count(4_000, 4_000),
        rollout(
            "response_item",
            {"type": "custom_tool_call", "name": "apply_patch", "input": patch, "call_id": "c2"},
        ),
        rollout(
            "response_item",
            {"type": "custom_tool_call_output", "call_id": "c2", "output": "Success. Updated b.py"},
        ),
        token_count(4_100, 8_100),
        rollout(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Fixed."}],
            },
        ),
        token_count(4_150, 12_250),
    ]
