"""``find(pattern, path?)``: files whose names or paths match a glob.

A ``pattern`` without ``/`` matches file *names* at any depth (``*.py`` finds every Python file,
as ``fd`` does); one with ``/`` matches paths relative to ``path`` (``src/**/test_*.py``; ``**/``
spans any number of directories, ``*`` stays within one; ``{a,b}`` alternatives). Only files are
listed (not directories), relative to the project directory, sorted, at most ``MAX_RESULTS`` with a
note. Ignore rules are those of grep (``_walk``).
"""

from __future__ import annotations

from typing import Any

from veil.agent.tool import ToolContext, ToolError, ToolResult, Touches
from veil.agent.tools._common import (
    BaseTool,
    display,
    not_found,
    optional_str,
    project_root,
    require_str,
    resolve_path,
)
from veil.agent.tools._walk import compile_glob, iter_files
from veil.llm.messages import ToolSpec

MAX_RESULTS = 1000


class FindTool(BaseTool):
    spec = ToolSpec(
        name="find",
        description=(
            "Find files by glob pattern. A pattern without '/' matches file names anywhere "
            "('*.py'); with '/' it matches paths under path ('src/**/test_*.py'). Returns "
            f"sorted paths, at most {MAX_RESULTS}. Skips .git, node_modules, virtualenvs, "
            "caches and .gitignore'd files."
        ),
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Glob pattern, e.g. '**/*.py'."},
                "path": {
                    "type": "string",
                    "description": "Directory to search (default: the project).",
                },
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
    )
    mutates = False
    parallel_safe = True

    def touches(self, arguments: dict[str, Any]) -> Touches:
        where = str(arguments.get("path") or "")
        what = " ".join(p for p in (str(arguments.get("pattern") or ""), where) if p)
        return Touches(looks=True, target=f"find {what}".strip())

    def _run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = require_str(arguments, "pattern").strip()
        root = project_root(ctx)
        start = resolve_path(ctx, optional_str(arguments, "path") or ".")
        if not start.exists():
            raise not_found(root, start, "Directory")
        if not start.is_dir():
            raise ToolError(f"{display(root, start)} is not a directory")
        pattern = pattern.removeprefix("./").lstrip("/")
        by_path = "/" in pattern
        try:
            matcher = compile_glob(pattern)
        except ValueError as exc:
            raise ToolError(str(exc)) from None

        found: list[str] = []
        for file, rel in iter_files(root, start):
            subject = file.relative_to(start).as_posix() if by_path else file.name
            if matcher.fullmatch(subject):
                found.append(rel)
        found.sort()
        total = len(found)
        details: dict[str, Any] = {"count": total, "limit_reached": total > MAX_RESULTS}
        if not found:
            return ToolResult(
                f"No files matching {pattern!r} under {display(root, start)}.", details=details
            )
        content = "\n".join(found[:MAX_RESULTS])
        if total > MAX_RESULTS:
            content += f"\n[showing {MAX_RESULTS} of {total} files; narrow the pattern or path]"
        return ToolResult(
            content,
            full_output="\n".join(found) if total > MAX_RESULTS else None,
            details=details,
        )
