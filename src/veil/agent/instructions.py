"""Project instructions for the system prompt: the AGENTS.md / CLAUDE.md files that apply.

``project_instructions(cwd)`` collects those files from ``cwd`` and each parent directory, up to
the user's home directory when ``cwd`` is inside it (home included: ``~/AGENTS.md`` holds
personal conventions), else up to the filesystem root. They are returned outermost first, so the
most specific (the project's own) comes last and wins where they disagree; each is prefixed by
its path (``--- /path/AGENTS.md ---``) so the model knows where a rule comes from.

The files' text is capped at ``max_bytes`` in total (20 KB by default; the path headers and
notes come on top) so that instructions cannot crowd out the task. The budget goes to the
innermost files first; a file cut short or left out is noted in place. A file present under both
names (or reached twice through a symlink) appears once; empty files are skipped. Unreadable
files are skipped; invalid UTF-8 is replaced.
"""

from __future__ import annotations

from pathlib import Path

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
MAX_INSTRUCTION_BYTES = 20 * 1024
MIN_FRAGMENT_BYTES = 1024


def _directories(cwd: Path, home: Path | None) -> list[Path]:
    """``cwd`` and its parents, innermost first, stopping at ``home`` if ``cwd`` is under it."""
    chain: list[Path] = []
    for directory in (cwd, *cwd.parents):
        chain.append(directory)
        if home is not None and directory == home:
            break
    return chain


def _files(cwd: Path, home: Path | None) -> list[list[tuple[Path, str]]]:
    """``(path, text)`` of the instruction files per directory, innermost directory first
    (names in ``INSTRUCTION_FILES`` order within one), without duplicates."""
    seen: set[Path] = set()
    texts: set[str] = set()
    groups: list[list[tuple[Path, str]]] = []
    for directory in _directories(cwd, home):
        group: list[tuple[Path, str]] = []
        for name in INSTRUCTION_FILES:
            path = directory / name
            try:
                real = path.resolve()
                if real in seen or not path.is_file():
                    continue
                text = path.read_bytes().decode("utf-8", "replace")
            except (OSError, RuntimeError):
                continue
            seen.add(real)
            if not text.strip() or text.strip() in texts:  # empty, or a copy of the other
                continue
            texts.add(text.strip())
            group.append((path, text))
        groups.append(group)
    return groups


def _cut(text: str, budget: int) -> str:
    """At most ``budget`` UTF-8 bytes of ``text``, ending at a line end. Only when no line
    fits and the budget is still worth using (``MIN_FRAGMENT_BYTES``) is a line cut."""
    head = text.encode("utf-8")[:budget].decode("utf-8", "ignore")
    line_end = head.rfind("\n")
    if line_end >= 0:
        return head[: line_end + 1]
    return head if budget >= MIN_FRAGMENT_BYTES else ""


def _header(path: Path) -> str:
    return f"--- {path} ---\n"


def project_instructions(
    cwd: Path, *, home: Path | None = None, max_bytes: int = MAX_INSTRUCTION_BYTES
) -> str:
    """The instruction files that apply to ``cwd`` as one text ("" when there are none).

    ``home`` defaults to the user's home directory; tests pass their own to bound the search.
    """
    cwd = cwd.resolve()
    if home is None:
        try:
            home = Path.home().resolve()
        except (RuntimeError, KeyError, OSError):
            home = None
    if home is not None and not cwd.is_relative_to(home):
        home = None

    remaining = max_bytes
    rendered: list[list[str]] = []
    for group in _files(cwd, home):  # innermost first: the project's own files win the budget
        sections: list[str] = []
        for path, text in group:
            size = len(text.encode("utf-8"))
            body = text if size <= remaining else _cut(text, remaining)
            if not body:
                sections.append(
                    f"{_header(path)}[omitted: {size} bytes; the instruction budget of "
                    f"{max_bytes} bytes is used by more specific files]\n"
                )
                continue
            shown = len(body.encode("utf-8"))
            remaining -= shown
            if not body.endswith("\n"):
                body += "\n"
            if shown < size:
                body += f"[truncated: showing {shown} of {size} bytes]\n"
            sections.append(f"{_header(path)}{body}")
        rendered.append(sections)
    rendered.reverse()  # outermost directory first
    return "\n".join(section for sections in rendered for section in sections)
