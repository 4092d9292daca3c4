"""The coding tools the model can call: read, write, edit, bash, grep, find, ls.

Names and argument names are a contract (SPEC 7.1): ``read(path, offset?, limit?)``,
``write(path, content)``, ``edit(path, old_text, new_text)``, ``bash(command, timeout?)``,
``grep(pattern, path?, glob?)``, ``find(pattern, path?)``, ``ls(path?)``.

Shared behaviour (see ``_common``): every path resolves against ``ToolContext.cwd`` and must stay
inside it after following symlinks; failures come back as ``ToolResult(is_error=True)`` rather
than exceptions; long output is truncated for the model with the complete text in
``ToolResult.full_output``.
"""

from __future__ import annotations

from veil.agent.tool import Tool
from veil.agent.tools.bash import BashTool
from veil.agent.tools.edit import EditTool
from veil.agent.tools.find import FindTool
from veil.agent.tools.grep import GrepTool
from veil.agent.tools.ls import LsTool
from veil.agent.tools.read import ReadTool
from veil.agent.tools.write import WriteTool

TOOL_NAMES: tuple[str, ...] = ("read", "write", "edit", "bash", "grep", "find", "ls")


def coding_tools() -> list[Tool]:
    """Fresh instances of the seven coding tools, in ``TOOL_NAMES`` order. Tools hold no
    state, so one list may serve a whole session."""
    return [ReadTool(), WriteTool(), EditTool(), BashTool(), GrepTool(), FindTool(), LsTool()]


__all__ = [
    "TOOL_NAMES",
    "BashTool",
    "EditTool",
    "FindTool",
    "GrepTool",
    "LsTool",
    "ReadTool",
    "WriteTool",
    "coding_tools",
]
