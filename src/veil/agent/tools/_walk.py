"""Walking the project tree for grep and find: glob patterns and ignore rules.

Directories that are never worth searching (``ALWAYS_SKIPPED``: VCS metadata, virtualenvs,
``node_modules``, caches) are pruned by name. On top of that the ``.gitignore`` files from the
project root down are honoured — a pure-Python subset of git's rules that covers what projects
actually write: comments, ``!`` negation, trailing ``/`` for directories only, anchoring by a
leading or inner ``/``, and ``*``, ``?``, ``[...]``, ``**``. Not supported: ``.git/info/exclude``,
the global excludes file, and escaped trailing spaces. An ignored directory is pruned, so (as in
git) nothing below it can be re-included.

The starting directory itself is never filtered: asking for ``path=".venv/lib"`` searches it.
Hidden files are included (they are often configuration the model needs to see).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ALWAYS_SKIPPED = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)

_SET_SPECIALS = frozenset("\\[&~|")


def glob_to_regex(glob: str) -> str:
    """Translate a glob to a regex body (for ``fullmatch`` on a ``/``-separated path).

    ``*`` and ``?`` never cross ``/``; ``**/`` matches any number of directories (including
    none); a ``**`` elsewhere matches anything; ``[...]``/``[!...]`` are character classes and
    ``{a,b}`` alternatives (as in ripgrep and fd, which models expect).
    """
    out: list[str] = []
    i = 0
    while i < len(glob):
        char = glob[i]
        if char == "*":
            if glob.startswith("**/", i):
                out.append("(?:.*/)?")
                i += 3
                continue
            if glob.startswith("**", i):
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = glob.find("]", i + 2)
            if end == -1:
                out.append(re.escape(char))
            else:
                inner = glob[i + 1 : end]
                negate = inner[:1] in ("!", "^")
                if negate:
                    inner = inner[1:]
                body = "".join("\\" + c if c in _SET_SPECIALS else c for c in inner)
                out.append(f"[{'^' if negate else ''}{body}]")
                i = end + 1
                continue
        elif char == "{":
            end = glob.find("}", i + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                options = glob[i + 1 : end].split(",")
                out.append("(?:" + "|".join(glob_to_regex(o) for o in options) + ")")
                i = end + 1
                continue
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def compile_glob(glob: str) -> re.Pattern[str]:
    """A glob compiled for ``fullmatch``; a malformed one is a ``ValueError``."""
    try:
        return re.compile(glob_to_regex(glob))
    except re.error as exc:
        raise ValueError(f"invalid glob {glob!r}: {exc}") from None


@dataclass(frozen=True)
class _Rule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def parse_gitignore(text: str) -> list[_Rule]:
    """The rules of one ``.gitignore`` file, in order (the last matching rule wins)."""
    rules: list[_Rule] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:]
        if line.startswith("\\"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        body = glob_to_regex(line.lstrip("/"))
        if not anchored:
            body = "(?:.*/)?" + body
        try:
            rules.append(_Rule(re.compile(body), negate, dir_only))
        except re.error:
            continue  # git ignores patterns it cannot parse; so do we
    return rules


class Ignorer:
    """Decides whether a project-relative path is ignored; reads ``.gitignore`` files lazily."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, list[_Rule]] = {}

    def _rules(self, base: str) -> list[_Rule]:
        rules = self._cache.get(base)
        if rules is None:
            file = self.root / base / ".gitignore" if base else self.root / ".gitignore"
            try:
                rules = parse_gitignore(file.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                rules = []
            self._cache[base] = rules
        return rules

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """``rel`` is ``/``-separated and relative to the root. Rules of outer ``.gitignore``
        files apply first, inner ones override them, as in git."""
        if is_dir and rel.rsplit("/", 1)[-1] in ALWAYS_SKIPPED:
            return True
        parts = rel.split("/")
        verdict = False
        for depth in range(len(parts)):
            base = "/".join(parts[:depth])
            sub = "/".join(parts[depth:])
            for rule in self._rules(base):
                if rule.dir_only and not is_dir:
                    continue
                if rule.regex.fullmatch(sub):
                    verdict = not rule.negate
        return verdict


def relative(root: Path, path: Path) -> str:
    rel = path.relative_to(root).as_posix()
    return "" if rel == "." else rel


def iter_files(root: Path, start: Path) -> Iterator[tuple[Path, str]]:
    """Files under ``start`` (a directory inside ``root``) as ``(path, project-relative)``,
    skipping ignored directories and files; deterministic order (sorted within a directory,
    files before subdirectories). Symlinked directories are not followed (no cycles, no
    escaping the project); symlinked files are yielded — callers reading content must check
    where they point."""
    ignorer = Ignorer(root)
    for dirpath, dirnames, filenames in os.walk(start):
        here = Path(dirpath)
        rel_dir = relative(root, here)
        prefix = f"{rel_dir}/" if rel_dir else ""
        dirnames[:] = sorted(d for d in dirnames if not ignorer.ignored(prefix + d, True))
        for name in sorted(filenames):
            if not ignorer.ignored(prefix + name, False):
                yield here / name, prefix + name
