"""The prompt's history: what was sent, recalled with up/down, kept across sessions of a project.

Stored in the project's ``.veil/history`` (``.veil/`` ignores itself, so it is never
committed): one JSON string per line, oldest first, so an entry may hold several lines. The
file is bounded: at most :data:`HISTORY_MAX` entries are kept (when it holds twice that, it is
rewritten with the newest ones), and an entry longer than :data:`ENTRY_MAX_CHARS` is not kept
at all (a pasted log is not worth recalling, and a cut one would be wrong to resend).

No secret is written: every entry passes the project's redactor first (the ``[redaction]``
settings of ``.veil/config.toml``, as for everything Veil writes; redaction is on here even
when those settings turn it off), and what is recalled is what was written — a key pasted into
the prompt comes back as ``[secret:KIND …last4]``, in this session as in the next.

Not thread-safe: the TUI uses one :class:`History` on its UI thread. Two ``veil`` processes on
one project append to the same file; a line is written with one ``write`` in append mode, so
their entries interleave but are not torn.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
from pathlib import Path

from veil.agent.project import project_root, veil_dir
from veil.tape.redacting import Redactor, redaction_for

HISTORY_MAX = 1000
"""Entries kept; the file is rewritten down to this many when it holds twice as many."""
ENTRY_MAX_CHARS = 10_000
"""Longer messages are sent but not kept in the history."""
FILE_NAME = "history"


class History:
    """The entries of one project (oldest first) and a cursor for up/down.

    Navigation: :meth:`older` from the draft being typed steps back one entry at a time (the
    draft is kept), :meth:`newer` steps forward and, past the newest, gives the draft back;
    :meth:`add` appends an entry and puts the cursor back on a fresh draft.
    """

    def __init__(self, root: Path | None, redactor: Redactor, *, limit: int = HISTORY_MAX) -> None:
        """``root``: the project's root (None: nothing is read or written, for tests and for a
        project whose ``.veil/`` cannot be used)."""
        self.root = root
        self.redactor = redactor
        self.limit = limit
        self.entries: list[str] = []
        self._lines_on_disk = 0
        self._at = 0
        self._draft = ""
        if self.path is not None and self.path.is_file():
            self._load(self.path)
        self._at = len(self.entries)

    @classmethod
    def for_project(cls, cwd: Path) -> History:
        """The history of the project ``cwd`` is in (its git root, else ``cwd``)."""
        root = project_root(cwd)
        config = None
        with contextlib.suppress(Exception):  # a broken config.toml: the defaults still redact
            config = redaction_for(root / ".veil" / FILE_NAME)
        redactor = (
            Redactor() if config is None else Redactor(dataclasses.replace(config, enabled=True))
        )
        return cls(root, redactor)

    @property
    def path(self) -> Path | None:
        return None if self.root is None else self.root / ".veil" / FILE_NAME

    # ---- navigation -----------------------------------------------------------------

    def older(self, current: str) -> str | None:
        """The entry before the cursor (None at the oldest). ``current`` is the prompt's text:
        kept as the draft when leaving it."""
        if self._at == 0:
            return None
        if self._at == len(self.entries):
            self._draft = current
        self._at -= 1
        return self.entries[self._at]

    def newer(self) -> str | None:
        """The entry after the cursor, the draft past the newest, None on the draft."""
        if self._at >= len(self.entries):
            return None
        self._at += 1
        return self._draft if self._at == len(self.entries) else self.entries[self._at]

    # ---- recording ------------------------------------------------------------------

    def add(self, text: str) -> str | None:
        """Record a sent message (redacted; blank, over-long and repeated ones are skipped)
        and write it to the project's file. Returns what was recorded, or None."""
        self._at = len(self.entries)
        self._draft = ""
        if not text.strip() or len(text) > ENTRY_MAX_CHARS:
            return None
        entry = self.redactor.redact(text).text
        if self.entries and self.entries[-1] == entry:
            return None
        self.entries.append(entry)
        del self.entries[: -self.limit]
        self._at = len(self.entries)
        with contextlib.suppress(OSError):  # a read-only project: the history stays in memory
            self._write(entry)
        return entry

    def _load(self, path: Path) -> None:
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        self._lines_on_disk = len(lines)
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, str) and entry and (not self.entries or self.entries[-1] != entry):
                self.entries.append(entry)
        del self.entries[: -self.limit]

    def _write(self, entry: str) -> None:
        if self.root is None:
            return
        path = veil_dir(self.root) / FILE_NAME
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
        self._lines_on_disk += 1
        if self._lines_on_disk > 2 * self.limit:
            self._rewrite(path)

    def _rewrite(self, path: Path) -> None:
        """The file down to the entries in memory (the newest ``limit``), atomically."""
        data = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in self.entries)
        fd, tmp = tempfile.mkstemp(prefix=".history.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self._lines_on_disk = len(self.entries)
