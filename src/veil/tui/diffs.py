"""What a write or an edit changes, as a unified diff: shown in the approval modal before the
call runs and under the call's line in the transcript after it ran.

An edit's result carries its diff (``details["diff"]``, made by the tool); a write's does not,
so the TUI reads the file just before the write runs (on ``ToolStart``, while the agent waits
for the UI) and diffs that against the written content. Before a call runs,
:func:`proposed_diff` computes the same from the file on disk and the call's arguments; it
never raises and returns None when there is nothing sensible to show (a path outside the
project, a binary or huge file, an edit whose ``old_text`` is not there exactly once — the tool
will say so itself).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from rich.text import Text

MAX_FILE_BYTES = 1_000_000
"""Files larger than this are not read for a diff."""
DIFF_LINES = 60
"""Lines of a diff shown in the transcript (the whole diff is one click or key away)."""


def unified(before: str, after: str, path: str) -> str:
    """``git diff``-style unified diff of ``before`` → ``after`` (3 lines of context); empty
    when they are equal. Every line ends with a newline."""
    out: list[str] = []
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        "/dev/null" if not before else f"a/{path}",
        f"b/{path}",
        n=3,
    )
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def read_before(root: Path, raw: object) -> str | None:
    """The text of the file ``raw`` names inside ``root`` ("" when it does not exist yet);
    None when it cannot or should not be shown (outside the project, a directory, binary,
    not UTF-8, larger than :data:`MAX_FILE_BYTES`)."""
    if not isinstance(raw, str) or not raw or "\0" in raw:
        return None
    try:
        base = root.resolve()
        path = (base / raw).resolve()
        if not path.is_relative_to(base):
            return None
        if not path.exists():
            return ""
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        data = path.read_bytes()
    except (OSError, RuntimeError, ValueError):
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8").removeprefix("\ufeff").replace("\r\n", "\n")
    except UnicodeDecodeError:
        return None


def proposed_diff(root: Path, tool_name: str, arguments: dict[str, Any]) -> str | None:
    """The diff a ``write`` or ``edit`` call would make, from the file as it is now."""
    path = arguments.get("path")
    if tool_name not in ("write", "edit") or not isinstance(path, str):
        return None
    before = read_before(root, path)
    if before is None:
        return None
    if tool_name == "write":
        content = arguments.get("content")
        return unified(before, content, path) if isinstance(content, str) else None
    old, new = arguments.get("old_text"), arguments.get("new_text")
    if not isinstance(old, str) or not isinstance(new, str) or not old:
        return None
    old, new = old.replace("\r\n", "\n"), new.replace("\r\n", "\n")
    if before.count(old) != 1:
        return None
    return unified(before, before.replace(old, new, 1), path)


def cut(diff: str, lines: int = DIFF_LINES) -> str:
    """The first ``lines`` lines of ``diff``, and how many more there are."""
    kept = diff.splitlines()
    if len(kept) <= lines:
        return "\n".join(kept)
    return "\n".join([*kept[:lines], f"… {len(kept) - lines} more lines"])


def styled(diff: str) -> Text:
    """A diff coloured as ``git diff`` does: additions green, removals red, hunks cyan."""
    text = Text(no_wrap=False)
    for n, line in enumerate(diff.splitlines()):
        if n:
            text.append("\n")
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        else:
            style = "dim"
        text.append(line, style=style)
    return text
