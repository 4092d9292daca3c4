"""``read(path, offset?, limit?)``: a text file's lines, as plain text.

Output is the file's text itself (no line numbers: the model copies from it into ``edit``'s
``old_text``, and numbers would get copied too). ``offset`` is a 1-based line number and
``limit`` a number of lines. When the model does not see the whole file — because of ``limit``
or because the output was truncated at ``MAX_LINES`` lines / ``MAX_BYTES`` bytes (head kept) — a
last line says so: ``[showing lines a-b of N; call read with offset=b+1 to continue]``. When *we*
truncated, ``full_output`` holds the whole file so it can be stored and addressed.

Refused: paths outside the project, directories (use ``ls``), binary or non-UTF-8 files, and files
over ``MAX_FILE_BYTES`` (use ``grep`` or ``bash``). A missing file's error names similar files.
"""

from __future__ import annotations

from typing import Any

from veil.agent.tool import ToolContext, ToolError, ToolResult, Touches
from veil.agent.tools._common import (
    MAX_BYTES,
    MAX_LINES,
    BaseTool,
    display,
    not_found,
    optional_int,
    project_root,
    read_text,
    require_str,
    resolve_path,
    split_lines,
    truncate_head,
)
from veil.llm.messages import ToolSpec

MAX_FILE_BYTES = 10 * 1024 * 1024
"""Files larger than this are refused: they would not fit any context, and ``full_output`` keeps
the whole file in memory and on the tape."""


class ReadTool(BaseTool):
    spec = ToolSpec(
        name="read",
        description=(
            "Read a text file inside the project. Returns the file's lines as plain text. "
            f"Output stops after {MAX_LINES} lines or {MAX_BYTES // 1024} KB; a final "
            "[showing lines a-b of N ...] note then tells you the offset to continue from. "
            "Use offset/limit to read part of a large file."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File path, relative to the project directory.",
                },
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "First line to return, 1-based (default 1).",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Maximum number of lines to return.",
                },
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    )
    mutates = False
    parallel_safe = True

    def touches(self, arguments: dict[str, Any]) -> Touches:
        offset, limit = arguments.get("offset"), arguments.get("limit")
        partial = bool(offset or limit)
        return Touches(
            reads=str(arguments.get("path") or "") or None,
            partial=partial,
            range=f"{offset or 0}+{limit or ''}" if partial else None,
        )

    def _run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        root = project_root(ctx)
        path = resolve_path(ctx, require_str(arguments, "path"))
        offset = optional_int(arguments, "offset", minimum=1) or 1
        limit = optional_int(arguments, "limit", minimum=1)
        shown = display(root, path)
        if not path.exists():
            raise not_found(root, path)
        if path.is_dir():
            raise ToolError(f"{shown} is a directory; use ls to list it")
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ToolError(
                f"{shown} is {size} bytes, over the {MAX_FILE_BYTES // (1024 * 1024)} MB read "
                "limit; use grep to find the part you need, or bash (e.g. sed -n '100,200p')."
            )
        text = read_text(root, path).removeprefix("\ufeff")
        lines = split_lines(text)
        total = len(lines)
        details: dict[str, Any] = {"path": shown, "total_lines": total}
        if total == 0:
            return ToolResult("[empty file]", details=details | {"truncated": False})
        if offset > total:
            raise ToolError(f"offset {offset} is past the end of {shown} ({total} lines)")
        stop = total if limit is None else min(total, offset - 1 + limit)
        cut = truncate_head(lines[offset - 1 : stop])
        end = offset - 1 + len(cut.lines)
        body = cut.text
        notes: list[str] = []
        if cut.partial:
            notes.append(
                f"[line {offset} is longer than {MAX_BYTES // 1024} KB; showing its beginning. "
                "Use bash (e.g. cut -c or fold) to see the rest]"
            )
        if end < total:
            notes.append(
                f"[showing lines {offset}-{end} of {total}; "
                f"call read with offset={end + 1} to continue]"
            )
        content = body
        if notes:
            content = (body if body.endswith("\n") else body + "\n") + "\n" + "\n".join(notes)
        details |= {"start_line": offset, "end_line": end, "truncated": cut.truncated}
        return ToolResult(content, full_output=text if cut.truncated else None, details=details)
