from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from veil.agent.tool import ToolContext, ToolResult
from veil.agent.tools import coding_tools

RunTool = Callable[..., ToolResult]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The project directory, one level below tmp_path so that tmp_path can hold 'outside'."""
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def ctx(project: Path) -> ToolContext:
    return ToolContext(cwd=project, default_timeout_s=10.0)


@pytest.fixture
def run(ctx: ToolContext) -> RunTool:
    """``run("read", path="a.txt")`` calls the named tool with keyword arguments."""
    tools = {tool.spec.name: tool for tool in coding_tools()}

    def call(name: str, **arguments: Any) -> ToolResult:
        return tools[name].run(arguments, ctx)

    return call
