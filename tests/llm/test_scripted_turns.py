"""A script's entries as the scripted server replays them (``veil.llm.scripted_turns``): loaded
and validated at once, a callable's turn resolved per request. The server itself is tested
against the real SDKs in test_scripted_server.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from veil.llm.scripted import ScriptError
from veil.llm.scripted_turns import (
    ModelRequest,
    default_side_call,
    load_script,
    resolve_turn,
    turn_from_mapping,
)
from veil.llm.scripted_wire import ToolUse, Turn

REQUEST = ModelRequest("chat", "/v1/chat/completions", {}, {"tools": [{"type": "function"}]})


def test_turn_objects_become_turns_and_a_bad_one_is_refused_naming_the_field() -> None:
    entries = load_script(
        {"turns": [{"content": "hi", "tool_calls": [{"name": "ls", "arguments": {"p": "."}}]}]}
    )
    assert entries == [Turn("hi", (ToolUse("ls", {"p": "."}),))]
    with pytest.raises(ScriptError, match="tool_calls"):
        load_script({"turns": [{"content": "hi", "tool_calls": "ls"}]})


def test_a_callable_entry_sees_the_request_and_may_answer_a_turn_object() -> None:
    seen: list[ModelRequest] = []

    def entry(request: ModelRequest) -> Mapping[str, Any]:
        seen.append(request)
        return {"content": f"turn {request.turn}"}

    (loaded,) = load_script([entry])
    assert resolve_turn(loaded, REQUEST) == turn_from_mapping({"content": "turn 0"})
    assert seen == [REQUEST]
    with pytest.raises(TypeError, match="not a Turn or dict"):
        resolve_turn(lambda _: 42, REQUEST)  # type: ignore[arg-type,return-value]


def test_by_default_a_request_without_tools_is_a_side_call() -> None:
    assert not default_side_call(REQUEST)
    assert default_side_call(ModelRequest("chat", "/v1/chat/completions", {}, {}))
