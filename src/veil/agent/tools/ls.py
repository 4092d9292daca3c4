"""``ls(path?)``: the entries of one directory.

Sorted case-insensitively, directories (and symlinks to directories) with a trailing ``/``,
hidden entries included and no ignore rules (``ls`` is how the model sees what is really there),
at most ``MAX_ENTRIES`` with a note.
"""

from __future__ import annotations

import os
from typing import Any

from veil.agent.tool import ToolContext, ToolError, ToolResult, Touches
from veil.agent.tools._common import (
    BaseTool,
    display,
    not_found,
    optional_str,
    project_root,
    resolve_path,
)
from veil.llm.messages import ToolSpec

MAX_ENTRIES = 500


class LsTool(BaseTool):
    spec = ToolSpec(
        name="ls",
        description=(
            "List a directory's entries (default: the project directory), sorted, directories "
            f"marked with a trailing '/', hidden files included, at most {MAX_ENTRIES}."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Directory to list, relative to the project directory.",
                },
            },
            "required": [],
            "additionalProperties": False,
        },
    )
    mutates = False
    parallel_safe = True

    def touches(self, arguments: dict[str, Any]) -> Touches:
        return Touches(looks=True, target=f"ls {arguments.get('path') or '.'}")

    def _run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        root = project_root(ctx)
        path = resolve_path(ctx, optional_str(arguments, "path") or ".")
        shown = display(root, path)
        if not path.exists():
            raise not_found(root, path, "Directory")
        if not path.is_dir():
            raise ToolError(f"{shown} is a file, not a directory; use read to see it")
        entries: list[str] = []
        with os.scandir(path) as listing:
            for entry in listing:
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                entries.append(entry.name + "/" if is_dir else entry.name)
        entries.sort(key=lambda name: (name.lower(), name))
        total = len(entries)
        details: dict[str, Any] = {"path": shown, "count": total}
        if not entries:
            return ToolResult(f"{shown} is empty.", details=details)
        content = "\n".join(entries[:MAX_ENTRIES])
        if total > MAX_ENTRIES:
            content += f"\n[showing {MAX_ENTRIES} of {total} entries]"
        return ToolResult(
            content,
            full_output="\n".join(entries) if total > MAX_ENTRIES else None,
            details=details,
        )
