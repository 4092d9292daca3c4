"""``edit(path, old_text, new_text)``: replace the one occurrence of ``old_text``.

Exactly one match is required, so the model cannot change the wrong place by accident:

* 0 matches: nothing is changed; the error shows the most similar region of the file (when the
  file is small enough for that to be cheap) so the model can correct its ``old_text``.
* more than one: nothing is changed; the error gives the count and line numbers and asks for more
  surrounding context.
* one: the file is rewritten atomically and a unified diff is returned (also in
  ``details["diff"]``).

Line endings are preserved: in a file whose lines all end in CRLF, ``old_text`` and ``new_text``
are matched and inserted with LF and converted back, so a model that writes ``\\n`` edits a CRLF
file correctly. Files with mixed endings are matched byte for byte. A UTF-8 byte-order mark and
the presence or absence of a final newline are kept (only the matched text changes).
"""

from __future__ import annotations

import difflib
from typing import Any

from veil.agent.tool import ToolContext, ToolError, ToolResult, Touches
from veil.agent.tools._common import (
    BaseTool,
    atomic_write,
    display,
    encode,
    not_found,
    project_root,
    read_text,
    require_str,
    resolve_path,
    split_lines,
    truncate_head,
)
from veil.llm.messages import ToolSpec

SIMILARITY_BUDGET = 4_000_000
"""Upper bound on (file lines x old_text length) for the closest-region search; above it the
0-match error skips the suggestion rather than stall the loop."""
MIN_SIMILARITY = 0.5
"""Regions less similar than this are not worth showing."""
BOM = "\ufeff"


def _positions(text: str, needle: str, cap: int = 1000) -> list[int]:
    """Start offsets of ``needle`` in ``text``, overlapping ones included (an overlap is an
    ambiguity too), at most ``cap``."""
    found: list[int] = []
    start = text.find(needle)
    while start != -1 and len(found) < cap:
        found.append(start)
        start = text.find(needle, start + 1)
    return found


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def closest_region(text: str, needle: str) -> tuple[int, int, float, str] | None:
    """The window of the file (as many lines as ``needle``) most similar to ``needle``:
    ``(first_line, last_line, similarity, text)``, or None if nothing is similar enough or the
    search would be too costly."""
    lines = text.split("\n")
    width = len(needle.rstrip("\n").split("\n"))
    if len(lines) * max(len(needle), 1) > SIMILARITY_BUDGET:
        return None
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(needle.rstrip("\n"))
    best: tuple[int, int, float, str] | None = None
    best_ratio = MIN_SIMILARITY
    for first in range(max(1, len(lines) - width + 1)):
        window = "\n".join(lines[first : first + width])
        matcher.set_seq1(window)
        if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best_ratio = ratio
            best = (first + 1, min(first + width, len(lines)), ratio, window)
    return best


def unified_diff(before: str, after: str, shown: str) -> str:
    """A unified diff with 3 lines of context; every line ends with a newline."""
    out: list[str] = []
    for line in difflib.unified_diff(
        split_lines(before), split_lines(after), f"a/{shown}", f"b/{shown}", n=3
    ):
        out.append(line if line.endswith("\n") else line + "\n")
    return "".join(out)


class EditTool(BaseTool):
    spec = ToolSpec(
        name="edit",
        description=(
            "Replace text in a file: old_text must occur exactly once in the file (copy it "
            "exactly, including whitespace and indentation, with enough surrounding lines to be "
            "unique) and is replaced by new_text. Returns a diff. If old_text is not found or "
            "is ambiguous, nothing is changed."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File path, relative to the project directory.",
                },
                "old_text": {
                    "type": "string",
                    "description": "The exact text to replace; must occur exactly once.",
                },
                "new_text": {"type": "string", "description": "The replacement text."},
            },
            "required": ["path", "old_text", "new_text"],
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
        old = require_str(arguments, "old_text", allow_empty=True)
        new = require_str(arguments, "new_text", allow_empty=True)
        shown = display(root, path)
        if not old:
            raise ToolError("old_text must not be empty (use write to create or replace a file)")
        if not path.exists():
            raise not_found(root, path)
        if path.is_dir():
            raise ToolError(f"{shown} is a directory, not a file")
        raw = read_text(root, path)
        bom = BOM if raw.startswith(BOM) else ""
        text = raw.removeprefix(BOM)
        crlf = "\r\n" in text and text.count("\r\n") == text.count("\n")
        if crlf:
            text = text.replace("\r\n", "\n")
            old = old.replace("\r\n", "\n")
            new = new.replace("\r\n", "\n")
        if old == new:
            raise ToolError("old_text and new_text are identical; nothing to change")

        found = _positions(text, old)
        if not found:
            message = f"No change made: old_text was not found in {shown}."
            region = closest_region(text, old)
            if region is not None:
                first, last, ratio, window = region
                message += (
                    f"\nThe most similar region is lines {first}-{last} "
                    f"({ratio:.0%} similar):\n{window}"
                )
            message += (
                "\nold_text must match the file exactly, including whitespace and indentation; "
                "read the file again and retry."
            )
            raise ToolError(message)
        if len(found) > 1:
            lines = ", ".join(str(_line_of(text, at)) for at in found[:20])
            more = ", ..." if len(found) > 20 else ""
            raise ToolError(
                f"No change made: old_text occurs {len(found)} times in {shown} (starting at "
                f"lines {lines}{more}). Include more surrounding lines in old_text so that it "
                "matches exactly once."
            )

        at = found[0]
        updated = text[:at] + new + text[at + len(old) :]
        on_disk = updated.replace("\n", "\r\n") if crlf else updated
        atomic_write(path, encode(bom + on_disk))

        first_line = _line_of(text, at)
        diff = unified_diff(text, updated, shown)
        removed = len(split_lines(old)) if old else 0
        added = len(split_lines(new)) if new else 0
        cut = truncate_head(split_lines(diff))
        content = (
            f"Edited {shown} at line {first_line}: replaced {removed} line(s) with "
            f"{added} line(s).\n{cut.text}"
        )
        if cut.truncated:
            content += "[diff truncated]\n"
        return ToolResult(
            content,
            full_output=f"Edited {shown}.\n{diff}" if cut.truncated else None,
            details={"path": shown, "first_changed_line": first_line, "diff": diff},
        )
