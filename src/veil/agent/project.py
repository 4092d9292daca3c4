"""The project's identity: the memory scope of a repository, stable when the repo moves.

A git repository is identified by its root commit (``git rev-list --max-parents=0 HEAD``), so
cloning it elsewhere or moving the directory keeps the same scope. Outside git (or before the
first commit) a random id is created once in ``.veil/project-id``, which moves with the folder.
"""

from __future__ import annotations

import hashlib
import subprocess
import uuid
from pathlib import Path


def git_root(cwd: Path) -> Path | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def project_root(cwd: Path) -> Path:
    return git_root(cwd) or cwd.resolve()


def veil_dir(root: Path) -> Path:
    """The project's ``.veil/``, created on first use with a ``.gitignore`` that ignores it
    (its stores hold file contents and command output: never committed by accident)."""
    path = root / ".veil"
    path.mkdir(exist_ok=True)
    ignore = path / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# Veil's stores hold file contents and command output.\n*\n")
    return path


def project_scope(root: Path) -> str:
    """``project:<id>`` for the repository at ``root``."""
    try:
        out = subprocess.run(
            ["git", "rev-list", "--max-parents=0", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        commits = sorted(out.stdout.split()) if out.returncode == 0 else []
    except (OSError, subprocess.SubprocessError):
        commits = []
    if commits:
        return "project:" + hashlib.sha256(commits[0].encode()).hexdigest()[:16]
    marker = root / ".veil" / "project-id"
    if marker.exists():
        return "project:" + marker.read_text().strip()
    marker.parent.mkdir(parents=True, exist_ok=True)
    ident = uuid.uuid4().hex[:16]
    marker.write_text(ident + "\n")
    return f"project:{ident}"
