"""The machine a result was measured on, its load, and the source revision measured."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from benchmarks.lib.paths import REPO


def describe(**extra: Any) -> dict[str, Any]:
    """Python version, platform and CPU count (what the report's machine line shows), then
    ``extra`` (e.g. ``sqlite=sqlite_version()``, ``load_average=...``)."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        **extra,
    }


def load_average() -> list[float]:
    """``os.getloadavg()`` (1, 5, 15 min) rounded to 0.01; empty where there is none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def load_text() -> str:
    """The load average as text: ``"0.76, 1.11, 1.21"``."""
    return ", ".join(f"{x:.2f}" for x in load_average())


def git(*args: str) -> str:
    """``git ARGS`` in the repository: its output, stripped (raises when git fails)."""
    done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def source_state() -> dict[str, Any]:
    """The commit measured and whether ``src/`` had uncommitted changes (``None``: no git)."""
    try:
        commit = git("rev-parse", "HEAD")
        status = git("status", "--porcelain", "--", "src")
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "src_dirty": None}
    return {"commit": commit, "src_dirty": bool(status)}


def filesystem_of(path: Path) -> str:
    """The file system type holding ``path`` (Linux ``/proc/mounts``), else ``unknown``."""
    mounts = Path("/proc/mounts")
    if not mounts.exists():
        return "unknown"
    best, fs = "", "unknown"
    target = str(path.resolve())
    for line in mounts.read_text().splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        point = parts[1]
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best):
            best, fs = point, parts[2]
    return fs


def sqlite_version() -> str:
    """The SQLite library version the store's driver uses."""
    from veil.tape.sqlite_driver import connect

    conn: Any = connect(":memory:", timeout_s=1.0)
    try:
        return str(conn.execute("select sqlite_version()").fetchone()[0])
    finally:
        conn.close()
