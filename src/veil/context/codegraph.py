"""The code graph of a project: which files a file imports and is imported by.

Python files are parsed with ``ast``; other languages get a regex scan of import/require lines.
Used by the structure signal: an item that points at a file the task touched, or at one of its
neighbours in this graph, is worth more. Parsed files are cached by modification time.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

_OTHER_IMPORT = re.compile(
    r"""(?:import\s+.*?from\s+['"]([^'"]+)['"]|require\(\s*['"]([^'"]+)['"]\s*\)|"""
    r"""^\s*import\s+['"]([^'"]+)['"]|^\s*#include\s+["<]([^">]+)[">])""",
    re.MULTILINE,
)


class CodeGraph:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._cache: dict[str, tuple[float, frozenset[str]]] = {}
        self._fresh: set[str] = set()
        """Files whose imports :meth:`neighbours` read since they last changed (as far as
        :meth:`changed` was told): not looked at on disk again."""

    def rel(self, path: str) -> str | None:
        """``path`` relative to the root, or None when it is outside the project."""
        try:
            candidate = (self.root / path).resolve()
            return candidate.relative_to(self.root).as_posix()
        except (ValueError, OSError):
            return None

    def imports(self, rel_path: str) -> frozenset[str]:
        path = self.root / rel_path
        try:
            mtime = path.stat().st_mtime
        except OSError:  # not there (yet): nothing imported
            self._cache[rel_path] = (-1.0, frozenset())
            return frozenset()
        cached = self._cache.get(rel_path)
        if cached and cached[0] == mtime:
            return cached[1]
        found = self._scan(path, rel_path)
        self._cache[rel_path] = (mtime, found)
        return found

    def changed(self, rel_path: str) -> None:
        """``rel_path`` was written: the next :meth:`neighbours` reads its imports again."""
        self._fresh.discard(rel_path)

    def neighbours(self, rel_paths: frozenset[str]) -> frozenset[str]:
        """Files imported by ``rel_paths`` and, among files seen so far, files importing them.
        A file is looked at on disk once, then again only after :meth:`changed` (a session
        touches hundreds of files, and this runs each time it touches a new one)."""
        out: set[str] = set()
        for rel_path in rel_paths:
            cached = self._cache.get(rel_path)
            if rel_path in self._fresh and cached is not None:
                out |= cached[1]
                continue
            out |= self.imports(rel_path)
            self._fresh.add(rel_path)
        for other, (_, deps) in list(self._cache.items()):
            if deps & rel_paths:
                out.add(other)
        return frozenset(out - rel_paths)

    def _scan(self, path: Path, rel_path: str) -> frozenset[str]:
        try:
            text = path.read_text(errors="replace")[:200_000]
        except OSError:
            return frozenset()
        if path.suffix == ".py":
            return self._python(text, rel_path)
        found: set[str] = set()
        for match in _OTHER_IMPORT.finditer(text):
            target = next(g for g in match.groups() if g)
            if target.startswith("."):
                resolved = self.rel(str(Path(rel_path).parent / target))
                if resolved:
                    found.update(self._existing(resolved))
            else:
                found.update(self._existing(target))
        return frozenset(found)

    def _python(self, text: str, rel_path: str) -> frozenset[str]:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return frozenset()
        modules: list[str] = []
        package = Path(rel_path).parent
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package
                    for _ in range(node.level - 1):
                        parent = parent.parent
                    prefix = ".".join(p for p in parent.parts if p)
                    base = f"{prefix}.{base}".strip(".")
                modules.append(base)
                modules.extend(f"{base}.{a.name}".strip(".") for a in node.names)
        found: set[str] = set()
        for module in modules:
            parts = module.split(".")
            for root in ("", "src/"):
                found.update(self._existing(f"{root}{'/'.join(parts)}.py"))
                found.update(self._existing(f"{root}{'/'.join(parts)}/__init__.py"))
        return frozenset(found)

    def _existing(self, rel_path: str) -> set[str]:
        path = self.root / rel_path
        return {rel_path} if path.is_file() else set()
