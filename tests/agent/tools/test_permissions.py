from __future__ import annotations

from typing import Any

import pytest

from veil.agent.permissions import APPROVALS, Answer, PermissionPolicy, is_unattended
from veil.agent.tools import BashTool, ReadTool


def test_auto_allows() -> None:
    assert PermissionPolicy("auto").decide("bash", {"command": "rm -rf build"}) == (True, None)


def test_deny_refuses_with_a_reason() -> None:
    allowed, reason = PermissionPolicy("deny").decide("write", {"path": "a"})
    assert not allowed
    assert reason is not None and "write was not run" in reason and "--approve deny" in reason


def test_ask_without_a_callback_refuses_points_to_auto_and_counts_it() -> None:
    policy = PermissionPolicy("ask")
    allowed, reason = policy.decide("edit", {})
    assert not allowed
    assert reason is not None and "--approve auto" in reason and "nobody is at a terminal" in reason
    assert is_unattended(reason) and policy.unattended == ["edit"]


def test_always_allows_that_tool_for_the_rest_of_the_session() -> None:
    asked: list[str] = []

    def ask(name: str, arguments: dict[str, Any]) -> Answer:
        asked.append(name)
        return "always" if name == "bash" else False

    policy = PermissionPolicy("ask", ask)
    assert policy.decide("bash", {"command": "ls"}) == (True, None)
    assert policy.decide("bash", {"command": "make"}) == (True, None)
    assert policy.decide("write", {"path": "a"})[0] is False
    assert asked == ["bash", "write"] and policy.always == {"bash"}
    assert policy.declined == ["write"] and policy.unattended == []


def test_ask_calls_the_callback_with_the_call() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def ask(name: str, arguments: dict[str, Any]) -> bool:
        seen.append((name, arguments))
        return arguments["command"] == "ls"

    policy = PermissionPolicy("ask", ask)
    assert policy.decide("bash", {"command": "ls"}) == (True, None)
    allowed, reason = policy.decide("bash", {"command": "rm x"})
    assert not allowed and reason == "bash was not run: the user declined it."
    assert seen == [("bash", {"command": "ls"}), ("bash", {"command": "rm x"})]


def test_check_lets_non_mutating_tools_through() -> None:
    def never(name: str, arguments: dict[str, Any]) -> bool:
        raise AssertionError("must not ask for a read")

    assert PermissionPolicy("deny", never).check(ReadTool(), {"path": "a"}) == (True, None)
    assert PermissionPolicy("deny").check(BashTool(), {"command": "ls"})[0] is False


def test_default_is_ask_and_bad_modes_are_rejected() -> None:
    assert PermissionPolicy().mode == "ask"
    assert APPROVALS == ("ask", "auto", "deny")
    with pytest.raises(ValueError, match="unknown approval mode 'yes'"):
        PermissionPolicy("yes")  # type: ignore[arg-type]
