"""``grep(pattern, path?, glob?)``: search file contents with a regular expression.

Pure Python (``re`` syntax, searched line by line; ``(?i)`` for case-insensitive), so results do
not depend on what is installed. ``path`` (default: the project directory) is a directory to
search recursively or a single file; ``glob`` filters file names (``*.py``) or, when it contains a
``/``, paths relative to ``path`` (``src/**/*.py``). Ignore rules are those of ``_walk``: VCS
metadata, virtualenvs, ``node_modules`` and caches are skipped, and ``.gitignore`` is honoured.
Binary files (a NUL byte near the start), files over ``MAX_FILE_BYTES`` and symlinks leading out
of the project are skipped. Non-UTF-8 bytes are replaced, not fatal.

Output: one ``path:line: text`` per matching line (path relative to the project directory, text
cut at ``MAX_LINE_CHARS``), in a stable order, at most ``MAX_MATCHES`` matches, then a note when
the limit was reached. No match is not an error.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from veil.agent.tool import ToolContext, ToolError, ToolResult, Touches
from veil.agent.tools._common import (
    BaseTool,
    display,
    is_binary,
    not_found,
    optional_str,
    project_root,
    require_str,
    resolve_path,
    split_lines,
    truncate_head,
)
from veil.agent.tools._walk import compile_glob, iter_files
from veil.llm.messages import ToolSpec

MAX_MATCHES = 200
MAX_LINE_CHARS = 500
MAX_FILE_BYTES = 5 * 1024 * 1024


def _prefilter(pattern: str, flags: int) -> re.Pattern[str] | None:
    """A whole-file regex that matches whenever some line matches, to skip files cheaply.
    Not usable with ``\\A``/``\\Z``, which mean line start/end in the per-line search."""
    if "\\A" in pattern or "\\Z" in pattern:
        return None
    try:
        return re.compile(pattern, flags | re.MULTILINE)
    except re.error:
        return None


class GrepTool(BaseTool):
    spec = ToolSpec(
        name="grep",
        description=(
            "Search file contents for a regular expression (Python re syntax; prefix (?i) to "
            "ignore case). Prints path:line: text for each matching line, at most "
            f"{MAX_MATCHES} matches. Skips .git, node_modules, virtualenvs, caches, "
            ".gitignore'd and binary files."
        ),
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regular expression to search for."},
                "path": {
                    "type": "string",
                    "description": "Directory or file to search (default: the project).",
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files matching this glob, e.g. '*.py' or "
                    "'src/**/*.ts'.",
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
        glob = str(arguments.get("glob") or "")
        what = " ".join(p for p in (str(arguments.get("pattern") or ""), where, glob) if p)
        return Touches(looks=True, target=f"grep {what}".strip())

    def _run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = require_str(arguments, "pattern")
        root = project_root(ctx)
        start = resolve_path(ctx, optional_str(arguments, "path") or ".")
        glob = optional_str(arguments, "glob")
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from None
        try:
            name_filter = compile_glob(glob) if glob else None
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        if not start.exists():
            raise not_found(root, start, "Path")

        if start.is_dir():
            candidates = iter_files(root, start)
            by_path = glob is not None and "/" in glob
        else:  # a single file: a glob can only be about its name
            candidates = iter([(start, display(root, start))])
            by_path = False
        quick = _prefilter(pattern, regex.flags)

        hits: list[str] = []
        searched = 0
        limited = False
        for file, rel in candidates:
            if name_filter is not None:
                subject = file.relative_to(start).as_posix() if by_path else file.name
                if not name_filter.fullmatch(subject):
                    continue
            text = self._text(root, file)
            if text is None:
                continue
            searched += 1
            if quick is not None and not quick.search(text):
                continue
            for number, line in enumerate(text.split("\n"), start=1):
                if regex.search(line):
                    if len(hits) >= MAX_MATCHES:
                        limited = True
                        break
                    if len(line) > MAX_LINE_CHARS:
                        hits.append(f"{rel}:{number}: {line[:MAX_LINE_CHARS]} [...]\n")
                    else:
                        hits.append(f"{rel}:{number}: {line}\n")
            if limited:
                break

        details: dict[str, Any] = {
            "matches": len(hits),
            "files_searched": searched,
            "limit_reached": limited,
        }
        if not hits:
            return ToolResult(
                f"No matches for {pattern!r} in {display(root, start)}.", details=details
            )
        listing = "".join(hits)
        cut = truncate_head(split_lines(listing))
        content = cut.text
        if limited:
            content += f"[match limit of {MAX_MATCHES} reached; narrow the pattern, path or glob]\n"
        elif cut.truncated:
            content += f"[output truncated: showing {len(cut.lines)} of {len(hits)} matches]\n"
        return ToolResult(
            content.rstrip("\n"),
            full_output=listing if cut.truncated else None,
            details=details | {"truncated": cut.truncated},
        )

    @staticmethod
    def _text(root: Path, file: Path) -> str | None:
        """The file's text, or None when it must be skipped (outside the project through a
        symlink, unreadable, too large or binary)."""
        try:
            if not file.resolve().is_relative_to(root):
                return None
            if file.stat().st_size > MAX_FILE_BYTES or not file.is_file():
                return None
            data = file.read_bytes()
        except (OSError, RuntimeError):
            return None
        if is_binary(data):
            return None
        # CRLF to LF so that "$" means end of line in the prefilter as in the per-line search.
        return data.decode("utf-8", "replace").replace("\r\n", "\n")
