"""The ``veil`` command, run as a real subprocess."""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

from veil import __version__
from veil.embed import default_embedder
from veil.memory import Memory
from veil.tape.sqlite import SQLiteStore
from veil.testing import HashEmbedder, NotesProjection, ScriptedModel, note_event


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


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _recorded(db: Path) -> tuple[int, list[tuple[str, str]]]:
    """The tape's head and the projection signature table, read without touching the file
    (``immutable=1``: no locks, no -wal/-shm files)."""
    with contextlib.closing(sqlite3.connect(f"file:{db}?immutable=1", uri=True)) as conn:
        head = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM tape_events").fetchone()[0]
        signatures = conn.execute("SELECT name, signature FROM tape_projections ORDER BY name")
        return int(head), [(str(n), str(s)) for n, s in signatures.fetchall()]


def test_admin_check_never_writes(tmp_path: Path) -> None:
    """A store built with the default (static) embedder: `check --embedder hash` refuses in one
    line instead of re-embedding; `check` with the right embedder passes; neither changes a byte
    of the file, the tape's head or the signature table. `rebuild` is what changes them."""
    db = tmp_path / "m.db"
    extraction = {
        "facts": [
            {"subject": "user", "relation": "prefers", "object": "vim",
             "statement": "The user prefers vim.", "volatility": "durable", "claimant": "user"}
        ],
        "episodes": [],
    }  # fmt: skip
    with Memory(db, complete=ScriptedModel([extraction]), embedder=default_embedder()) as memory:
        memory.remember("I prefer vim.", user_id="u1")
    files = sorted(p.name for p in tmp_path.iterdir())
    digest, recorded = _digest(db), _recorded(db)
    assert recorded[0] > 0 and "m2v-minilm-l6-v2-256d@" in dict(recorded[1])["memory"]

    refused = veil("admin", "check", "--db", str(db), "--embedder", "hash")
    assert refused.returncode == 2 and refused.stdout == ""
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("veil admin check: the store's vector indexes were built with embedder")
    assert "m2v-minilm-l6-v2-256d@" in line and "hash-256 (256-d)" in line
    assert "check with --embedder static" in line
    assert "`veil admin rebuild --embedder hash`" in line
    assert (_digest(db), _recorded(db)) == (digest, recorded)

    passed = veil("admin", "check", "--db", str(db))
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.splitlines()[0] == f"store: {db}" and passed.stdout.strip().endswith("ok")
    assert (_digest(db), _recorded(db)) == (digest, recorded)
    assert sorted(p.name for p in tmp_path.iterdir()) == files

    rebuilt = veil("admin", "rebuild", "--db", str(db), "--embedder", "hash")
    assert rebuilt.returncode == 0, rebuilt.stderr
    head, signatures = _recorded(db)
    assert head == recorded[0] and "hash-256:256" in dict(signatures)["memory"]
    assert veil("admin", "check", "--db", str(db), "--embedder", "hash").returncode == 0


def _notes_store(path: Path) -> None:
    store = SQLiteStore(path, embedder=HashEmbedder())
    store.register(NotesProjection())
    store.append([note_event("u1", "note.added", note="a", body="alpha")])
    store.close()


def test_admin_defaults_to_the_project_store(tmp_path: Path) -> None:
    """No --db: the project's .veil/context.db, else its .veil/memory.db, else one line."""
    project = tmp_path / "project"
    (project / ".veil").mkdir(parents=True)
    missing = veil("admin", "check", "--embedder", "hash", cwd=project)
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.strip() == (
        f"veil admin check: no store at {project.resolve() / '.veil' / 'context.db'} or "
        f"{project.resolve() / '.veil' / 'memory.db'} (pass --db PATH_OR_URL)"
    )
    _notes_store(project / ".veil" / "memory.db")
    fallback = veil("admin", "check", "--embedder", "hash", cwd=project)
    assert fallback.returncode == 0, fallback.stderr
    assert fallback.stdout.splitlines()[0].endswith(str(Path(".veil") / "memory.db"))
    _notes_store(project / ".veil" / "context.db")
    preferred = veil("admin", "check", "--embedder", "hash", cwd=project)
    assert preferred.returncode == 0, preferred.stderr
    assert preferred.stdout.splitlines()[0].endswith(str(Path(".veil") / "context.db"))


def test_demo_runs_offline() -> None:
    result = veil("demo")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "SCRIPTED: the model's replies and the tool outputs are the recording." in out
    assert "↳ to warm ×" in out and "byte-identical" in out
    assert "attempt log: 18 attempts" in out
    assert "<veil-manifest>" in out
    assert "emacs" in out and "[superseded]" in out
    assert "Unverified third-party claims" in out
