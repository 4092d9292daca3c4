"""The ``veil`` command, run as a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from veil import __version__
from veil.tape.sqlite import SQLiteStore
from veil.testing import HashEmbedder, NotesProjection, note_event


def veil(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "veil.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_version() -> None:
    result = veil("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"veil {__version__}"


def test_admin_check_and_rebuild(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = SQLiteStore(db, embedder=HashEmbedder())
    store.register(NotesProjection())
    store.append([note_event("u1", "note.added", note="a", body="alpha")])
    store.close()
    check = veil("admin", "check", "--db", str(db), "--embedder", "hash")
    assert check.returncode == 0, check.stderr
    assert "events: 1" in check.stdout and check.stdout.strip().endswith("ok")
    rebuild = veil("admin", "rebuild", "--db", f"sqlite:///{db}", "--embedder", "hash")
    assert rebuild.returncode == 0, rebuild.stderr
    assert "from 1 events" in rebuild.stdout and "table:notes: 1 rows" in rebuild.stdout


def test_admin_check_reports_a_tampered_projection(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    store = SQLiteStore(db, embedder=HashEmbedder())
    store.register(NotesProjection())
    store.append([note_event("u1", "note.added", note="a", body="alpha")])
    with store._write() as cur:  # pyright: ignore[reportPrivateUsage]
        cur.execute("DELETE FROM notes")
    store.close()
    check = veil("admin", "check", "--db", str(db), "--embedder", "hash")
    assert check.returncode == 1
    assert "differs from a rebuild" in check.stderr


def test_admin_on_a_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    result = veil("admin", "check", "--db", str(tmp_path / "nope.db"))
    assert result.returncode != 0
    assert "no store at" in result.stderr


def test_demo_runs_offline() -> None:
    result = veil("demo")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "SCRIPTED: the model's replies and the tool outputs are the recording." in out
    assert "→ warm (stage" in out and "byte-identical" in out
    assert "<veil-manifest>" in out
    assert "emacs" in out and "[superseded]" in out
    assert "Unverified third-party claims" in out
