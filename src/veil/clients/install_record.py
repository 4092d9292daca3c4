"""What ``veil install`` changed, so that ``--uninstall`` gives every file back byte for byte.

An install computes each file's new bytes in memory first (nothing is written if any file
cannot be merged), then writes them and records, per file, the bytes it held before Veil's
first install (or that it did not exist) and a digest of the bytes Veil wrote last. An
uninstall then restores a file whose bytes are still the ones Veil wrote — the original bytes
back, or the file removed if Veil created it — and only for a file changed since (by the
person, or by the agent itself, as Claude Code does with ``~/.claude.json``) falls back to
taking Veil's entries out of what is there (:data:`Unmerge`).

The record is one JSON file outside the project (``$VEIL_STATE_DIR``, else
``$XDG_STATE_HOME/veil``, else ``~/.local/state/veil``): it never shows up in a repository,
and it holds file contents only of the agents' settings files Veil edited.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from veil.clients.settings import SettingsError

Unmerge = Callable[[bytes], bytes | None]
"""A file's bytes without Veil's entries (``None``: nothing of the file's own is left)."""


def state_dir(env: Mapping[str, str] = os.environ) -> Path:
    if env.get("VEIL_STATE_DIR"):
        return Path(env["VEIL_STATE_DIR"]).expanduser()
    base = env.get("XDG_STATE_HOME")
    root = (
        Path(base).expanduser() if base else Path(env.get("HOME") or Path.home()) / ".local/state"
    )
    return root / "veil"


def digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read it: {exc.strerror or exc}") from None


def write_bytes(path: Path, data: bytes | None) -> None:
    """Write atomically (a temporary file renamed over the old one); ``None`` removes it."""
    if data is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.veil-tmp")
    tmp.write_bytes(data)
    if path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o7777)
    os.replace(tmp, path)


@dataclass(frozen=True)
class Entry:
    original: bytes | None
    written: str | None


class InstallRecord:
    """The record file: path → :class:`Entry`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, Entry] = {}
        data = read_bytes(path)
        if data is None:
            return
        try:
            raw: Any = json.loads(data)
            files = cast(dict[str, dict[str, Any]], raw["files"])
            for name, entry in files.items():
                original = entry.get("original")
                self.entries[name] = Entry(
                    None if original is None else base64.b64decode(str(original)),
                    entry.get("written"),
                )
        except (ValueError, KeyError, TypeError, AttributeError):
            self.entries = {}  # a damaged record: uninstall falls back to unmerging

    @classmethod
    def default(cls, env: Mapping[str, str] = os.environ) -> InstallRecord:
        return cls(state_dir(env) / "installs.json")

    def save(self) -> None:
        files = {
            name: {
                "original": None
                if e.original is None
                else base64.b64encode(e.original).decode("ascii"),
                "written": e.written,
            }
            for name, e in sorted(self.entries.items())
        }
        if not files:
            self.path.unlink(missing_ok=True)
            return
        write_bytes(self.path, (json.dumps({"files": files}, indent=1) + "\n").encode())

    def wrote(self, path: Path, before: bytes | None, after: bytes | None) -> None:
        """Veil replaced ``before`` with ``after`` (keeps the first original it saw, unless
        the file was changed by someone else since Veil wrote it)."""
        key = str(path)
        known = self.entries.get(key)
        original = before if known is None or known.written != digest(before) else known.original
        self.entries[key] = Entry(original, digest(after))

    def restored(self, path: Path) -> None:
        self.entries.pop(str(path), None)

    def restoration(self, path: Path, current: bytes | None, unmerge: Unmerge) -> bytes | None:
        """What ``path`` should hold after an uninstall."""
        known = self.entries.get(str(path))
        if known is not None and known.written == digest(current):
            return known.original
        if current is None:
            return None
        left = unmerge(current)
        if left is None and known is not None and known.original is not None:
            return known.original  # the person emptied it; give back what was there
        return left


def apply(record: InstallRecord, changes: Mapping[Path, bytes | None]) -> list[Path]:
    """Write ``changes`` (path → new bytes, ``None`` to remove) and record them; the paths
    whose bytes changed."""
    changed: list[Path] = []
    for path, after in changes.items():
        before = read_bytes(path)
        if before == after:
            continue
        write_bytes(path, after)
        record.wrote(path, before, after)
        changed.append(path)
    record.save()
    return changed


def undo(record: InstallRecord, files: Mapping[Path, Unmerge]) -> list[Path]:
    """Give each of ``files`` back (see the module docstring); the paths that changed."""
    plan: list[tuple[Path, bytes | None, bytes | None]] = []
    for path, unmerge in files.items():  # every file is read and unmerged before any write
        current = read_bytes(path)
        plan.append((path, current, record.restoration(path, current, unmerge)))
    changed: list[Path] = []
    for path, current, after in plan:
        if after != current:
            write_bytes(path, after)
            changed.append(path)
        record.restored(path)
    record.save()
    return changed
