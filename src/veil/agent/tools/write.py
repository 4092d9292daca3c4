"""``write(path, content)``: create or overwrite a file with exactly ``content``.

Parent directories are created. The write is atomic (temporary file in the same directory, then a
rename), so nobody ever sees half a file; an existing file keeps its permission bits. The text is
written as UTF-8 byte for byte — no newline translation, no added final newline. Refused: paths
outside the project, and directories.
"""

from __future__ import annotations

from typing import Any

from veil.agent.tool import ToolContext, ToolError, ToolResult, Touches
from veil.agent.tools._common import (
    BaseTool,
    atomic_write,
    display,
    encode,
    project_root,
    require_str,
    resolve_path,
    split_lines,
)
from veil.llm.messages import ToolSpec


class WriteTool(BaseTool):
    spec = ToolSpec(
        name="write",
        description=(
            "Create a file, or overwrite it entirely, with the given content (parent "
            "directories are created). To change part of an existing file use edit instead."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File path, relative to the project directory.",
                },
                "content": {"type": "string", "description": "The complete new file content."},
            },
            "required": ["path", "content"],
            "additionalProperties": False,
        },
    )
    mutates = True
    parallel_safe = False

    def touches(self, arguments: dict[str, Any]) -> Touches:
        return Touches(writes=str(arguments.get("path") or "") or None)

    def _run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        root = project_root(ctx)
        path = resolve_path(ctx, require_str(arguments, "path"))
        content = require_str(arguments, "content", allow_empty=True)
        shown = display(root, path)
        if path.is_dir():
            raise ToolError(f"{shown} is a directory; cannot write a file there")
        created = not path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        data = encode(content)
        atomic_write(path, data)
        lines = len(split_lines(content))
        verb = "Created" if created else "Overwrote"
        return ToolResult(
            f"{verb} {shown}: {len(data)} bytes, {lines} lines.",
            details={"path": shown, "bytes": len(data), "lines": lines, "created": created},
        )
