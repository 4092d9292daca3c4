"""The tool list, its contract with SPEC 7.1, and the project-directory jail shared by all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from veil.agent.tool import Tool, ToolContext
from veil.agent.tools import TOOL_NAMES, coding_tools

from .conftest import RunTool

CONTRACT = {
    "read": ({"path"}, {"offset", "limit"}),
    "write": ({"path", "content"}, set[str]()),
    "edit": ({"path", "old_text", "new_text"}, set[str]()),
    "bash": ({"command"}, {"timeout"}),
    "grep": ({"pattern"}, {"path", "glob"}),
    "find": ({"pattern"}, {"path"}),
    "ls": (set[str](), {"path"}),
}


def test_tools_are_listed_in_order_and_satisfy_the_protocol() -> None:
    tools = coding_tools()
    assert [t.spec.name for t in tools] == list(TOOL_NAMES)
    assert list(TOOL_NAMES) == ["read", "write", "edit", "bash", "grep", "find", "ls"]
    assert all(isinstance(t, Tool) for t in tools)


def test_argument_names_follow_the_contract() -> None:
    for tool in coding_tools():
        required, optional = CONTRACT[tool.spec.name]
        params = tool.spec.parameters
        assert params["type"] == "object"
        assert set(params["required"]) == required
        assert set(params["properties"]) == required | optional
        assert tool.spec.description


def test_mutation_and_parallel_flags() -> None:
    flags = {t.spec.name: (t.mutates, t.parallel_safe) for t in coding_tools()}
    assert flags == {
        "read": (False, True),
        "write": (True, False),
        "edit": (True, False),
        "bash": (True, False),
        "grep": (False, True),
        "find": (False, True),
        "ls": (False, True),
    }


ESCAPES = ["../outside.txt", "sub/../../outside.txt", "/etc/passwd", "link_out/secret.txt"]


@pytest.fixture
def outside(project: Path) -> Path:
    secret = project.parent / "outside.txt"
    secret.write_text("s3cr3t-content\n")
    (project.parent / "elsewhere").mkdir()
    (project.parent / "elsewhere" / "secret.txt").write_text("s3cr3t-content\n")
    (project / "sub").mkdir()
    os.symlink(project.parent / "elsewhere", project / "link_out")
    os.symlink(secret, project / "file_link_out")
    return secret


@pytest.mark.parametrize("path", [*ESCAPES, "file_link_out"])
def test_read_refuses_paths_outside_the_project(run: RunTool, outside: Path, path: str) -> None:
    result = run("read", path=path)
    assert result.is_error
    assert "outside the project" in result.content
    assert "s3cr3t-content" not in result.content


@pytest.mark.parametrize("path", [*ESCAPES, "file_link_out", "link_out/new.txt"])
def test_write_refuses_paths_outside_the_project(run: RunTool, outside: Path, path: str) -> None:
    result = run("write", path=path, content="pwned\n")
    assert result.is_error
    assert "outside the project" in result.content
    assert outside.read_text() == "s3cr3t-content\n"
    assert not (outside.parent / "elsewhere" / "new.txt").exists()


@pytest.mark.parametrize("path", ["../outside.txt", "file_link_out"])
def test_edit_refuses_paths_outside_the_project(run: RunTool, outside: Path, path: str) -> None:
    result = run("edit", path=path, old_text="secret", new_text="pwned")
    assert result.is_error
    assert outside.read_text() == "s3cr3t-content\n"


def test_dangling_symlink_out_is_refused_for_writing(run: RunTool, project: Path) -> None:
    target = project.parent / "not_yet.txt"
    os.symlink(target, project / "dangling")
    result = run("write", path="dangling", content="x")
    assert result.is_error
    assert not target.exists()


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("ls", {"path": ".."}),
        ("ls", {"path": "link_out"}),
        ("grep", {"pattern": "secret", "path": ".."}),
        ("find", {"pattern": "*.txt", "path": "/etc"}),
    ],
)
def test_listing_tools_refuse_paths_outside(
    run: RunTool, outside: Path, tool: str, args: dict[str, str]
) -> None:
    result = run(tool, **args)
    assert result.is_error
    assert "outside the project" in result.content


def test_absolute_paths_inside_the_project_are_fine(run: RunTool, project: Path) -> None:
    (project / "a.txt").write_text("hello\n")
    assert run("read", path=str(project / "a.txt")).content == "hello\n"


def test_relative_cwd_is_resolved(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "a.txt").write_text("hello\n")
    monkeypatch.chdir(project.parent)
    ctx = ToolContext(cwd=Path("project"))
    read = coding_tools()[0]
    assert read.run({"path": "a.txt"}, ctx).content == "hello\n"
    assert read.run({"path": "../outside.txt"}, ctx).is_error


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("read", {}, "'path' must be a string (got missing)"),
        ("read", {"path": 3}, "'path' must be a string (got a int)"),
        ("read", {"path": "a", "offset": 0}, "'offset' must be at least 1"),
        ("read", {"path": "a", "offset": 1.5}, "'offset' must be a whole number"),
        ("read", {"path": "a", "limit": True}, "'limit' must be a number"),
        ("bash", {"command": "true", "timeout": "soon"}, "'timeout' must be a number"),
        ("bash", {"command": "true", "timeout": 0}, "greater than 0"),
        ("write", {"path": "a"}, "'content' must be a string"),
        ("grep", {"pattern": ""}, "'pattern' must not be empty"),
    ],
)
def test_bad_arguments_are_error_results(
    run: RunTool, tool: str, args: dict[str, object], message: str
) -> None:
    result = run(tool, **args)
    assert result.is_error
    assert message in result.content


def test_numeric_strings_are_accepted(run: RunTool, project: Path) -> None:
    (project / "a.txt").write_text("1\n2\n3\n")
    assert run("read", path="a.txt", offset="2", limit=1.0).content.startswith("2\n")
