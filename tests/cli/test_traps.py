"""The traps a new user hit (issue 36), each run as a person runs it: ``python -m veil.cli.main``
as a subprocess in a temporary git repository, with a private ``HOME`` and no ``VEIL_*``
settings. Every mistake ends with exactly one line on stderr that names what was wrong and the
fix, the right exit status (2 for usage, 1 for a failure at run time), never a traceback, and
nothing lost: no store written or deleted by the command that failed."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import select
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from veil.llm.scripted_server import ScriptedServer


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def env(home: Path, **extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith(("VEIL_", "ANTHROPIC_"))}
    out.update(HOME=str(home), VEIL_STATE_DIR=str(home / "state"), **extra)
    return out


def veil(repo: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "veil.cli.main", *args], cwd=repo,
                          env=env(repo.parent, **extra), capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip


def on_terminal(repo: Path, *args: str, typed: str = "", **extra: str) -> tuple[int, str]:
    """``veil ARGS`` with a terminal on stdin and stdout (``typed`` is typed into it once the
    process asks); stderr apart. Returns the status and stderr."""
    master, slave = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "veil.cli.main", *args], cwd=repo,
                               env=env(repo.parent, TERM="dumb", **extra), stdin=slave,
                               stdout=slave, stderr=subprocess.PIPE, text=True)  # fmt: skip
    os.close(slave)
    try:
        if typed:
            assert process.stderr is not None
            ready, _, _ = select.select([process.stderr], [], [], 60)
            assert ready, "veil asked nothing"
            os.write(master, typed.encode())
        deadline = time.monotonic() + 60
        while process.poll() is None and time.monotonic() < deadline:
            if select.select([master], [], [], 0.1)[0]:
                try:
                    os.read(master, 4096)
                except OSError:
                    break
        _, err = process.communicate(timeout=60)
    finally:
        os.close(master)
    return process.returncode, err


def one_line(done: subprocess.CompletedProcess[str] | tuple[int, str], status: int) -> str:
    code, err = (done.returncode, done.stderr) if not isinstance(done, tuple) else done
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert code == status, err
    return lines[0]


def script(path: Path, *turns: dict[str, Any]) -> str:
    path.write_text(json.dumps({"turns": list(turns)}))
    return f"scripted:{path}"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def a_session(repo: Path, task: str = "look at the file") -> str:
    """One session of the scripted model: a call of ``bash`` (``cat notes.txt``), then done."""
    (repo / "notes.txt").write_text("the notes say SECRET-7f3a9 and nothing else\n")
    model = script(
        repo.parent / f"{task.replace(' ', '-')}.json",
        {"content": "Let me look.", "tool_calls": [
            {"name": "bash", "arguments": {"command": "cat notes.txt"}}]},
        {"content": "Done."},
    )  # fmt: skip
    done = veil(repo, "-p", task, "--model", model, "--approve", "auto")
    assert done.returncode == 0, done.stderr
    return model


def session_ids(repo: Path) -> list[str]:
    listing = veil(repo, "sessions").stdout.splitlines()[1:]
    return [line.split()[0] for line in listing]


# ---- 1: an unknown option before the command -------------------------------------------------


def test_trap_unknown_option_is_named(repo: Path) -> None:
    line = one_line(veil(repo, "--windw", "5000", "-p", "x"), 2)
    assert "--windw" in line and "--window" in line, line
    assert "COMMAND" not in line
    line = one_line(veil(repo, "--foo"), 2)
    assert "--foo" in line, line
    line = one_line(veil(repo, "--foo", "sessions"), 2)
    assert "--foo" in line, line
    assert not (repo / ".veil").exists()


# ---- 2: a corrupt store, a missing extra, VEIL_CLAUDE ----------------------------------------


@pytest.mark.parametrize("name", ["context.db", "memory.db"])
def test_trap_corrupt_store_names_the_path(repo: Path, name: str) -> None:
    model = a_session(repo)
    store = repo / ".veil" / name
    store.write_bytes(b"not a database at all " * 300)
    before = digest(store)
    line = one_line(veil(repo, "-c", "-p", "again", "--model", model), 1)
    assert str(store) in line and "move it aside" in line, line
    assert digest(store) == before
    if name == "context.db":
        line = one_line(veil(repo, "sessions"), 1)
        assert str(store) in line, line
    else:
        line = one_line(veil(repo, "memory", "recall", "notes"), 1)
        assert str(store) in line, line
    assert digest(store) == before


def test_trap_a_directory_where_the_store_should_be(repo: Path) -> None:
    (repo / ".veil" / "context.db").mkdir(parents=True)
    line = one_line(veil(repo, "sessions"), 1)
    assert str(repo / ".veil" / "context.db") in line and "directory" in line, line


def hidden(tmp_path: Path, *modules: str) -> str:
    """A directory for ``PYTHONPATH`` where importing each of ``modules`` fails as it does when
    the package is not installed."""
    where = tmp_path / "hidden"
    where.mkdir(exist_ok=True)
    for module in modules:
        (where / f"{module}.py").write_text(
            f"raise ModuleNotFoundError(\"No module named '{module}'\", name={module!r})\n"
        )
    return str(where)


def test_trap_missing_server_extra_names_the_install(repo: Path, tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    done = veil(repo, "serve", "--db", str(db), PYTHONPATH=hidden(tmp_path, "uvicorn"))
    line = one_line(done, 1)
    assert "uvicorn" in line and "-m pip install" in line and "uvicorn>=" in line, line
    assert "veil[" not in line
    assert not db.exists()


def test_trap_missing_tui_extra_names_the_install(repo: Path, tmp_path: Path) -> None:
    line = one_line(on_terminal(repo, PYTHONPATH=hidden(tmp_path, "textual")), 1)
    assert "textual" in line and "-m pip install" in line and "veil -p" in line, line
    assert "veil[" not in line


def test_trap_veil_claude_names_a_missing_binary(repo: Path) -> None:
    line = one_line(veil(repo, "claude", VEIL_CLAUDE="/nonexistent"), 2)
    assert "/nonexistent" in line and "VEIL_CLAUDE" in line, line


def test_no_text_suggests_installing_veil_from_pypi() -> None:
    """Veil is not on PyPI: ``pip install 'veil[…]'`` finds nothing."""
    root = Path(__file__).resolve().parents[2]
    texts = [root / "README.md", *(root / "docs").glob("*.md"), *(root / "src").rglob("*.py")]
    offenders = [str(p) for p in texts if "install 'veil[" in p.read_text(encoding="utf-8")]
    assert offenders == []


# ---- 3: a bare veil proxy --------------------------------------------------------------------


@pytest.fixture
def bare_proxy(repo: Path) -> Iterator[tuple[str, ScriptedServer]]:
    """``veil proxy --window 8000`` in front of a scripted Anthropic server."""
    with ScriptedServer(final_text="ok") as upstream:
        process = subprocess.Popen(
            [sys.executable, "-m", "veil.cli.main", "proxy", "--upstream", upstream.url,
             "--window", "8000"],
            cwd=repo, env=env(repo.parent), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            assert process.stdout is not None
            first = process.stdout.readline()
            assert first.startswith("veil proxy: http://127.0.0.1:"), first
            yield first.split()[2], upstream
        finally:
            process.terminate()
            process.communicate(timeout=30)


HEADERS = {"content-type": "application/json", "x-api-key": "k", "anthropic-version": "2023-06-01"}


def test_trap_bare_proxy_stubs_name_no_missing_tool(
    bare_proxy: tuple[str, ScriptedServer],
) -> None:
    base, upstream = bare_proxy
    messages: list[dict[str, Any]] = [{"role": "user", "content": "read the files"}]
    for i in range(20):
        call = f"toolu_{i:02d}"
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": call,
                         "name": "Read", "input": {"file_path": f"/src/m{i}.py"}}]})  # fmt: skip
        body = "".join(f"line {i}.{j}: {'x' * 60}\n" for j in range(40))
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": body}]})  # fmt: skip
        request = urllib.request.Request(
            f"{base}/v1/messages",
            data=json.dumps(
                {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": messages}
            ).encode(),
            headers=HEADERS,
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            reply = json.loads(response.read())
        messages.append({"role": "assistant", "content": reply["content"]})
        messages.append({"role": "user", "content": "go on"})
    sent = [r for r in upstream.requests if r.path.startswith("/v1/messages")]
    stubbed = [json.dumps(r.body) for r in sent if "veil://" in json.dumps(r.body)]
    assert stubbed, "the conversation outgrew --window 8000 but nothing was stubbed"
    for text in stubbed:
        assert "mcp__veil__expand" not in text and "veil_expand" not in text, text
        assert "restores it" not in text, text  # "TOOL POINTER restores it": a tool it lacks


# ---- 4: sessions rm takes the prefix sessions show takes ---------------------------------------


def test_trap_sessions_rm_accepts_the_prefix_show_accepts(repo: Path) -> None:
    a_session(repo, "first task")
    a_session(repo, "second task")
    ids = session_ids(repo)
    assert len(ids) == 2
    common = os.path.commonprefix(ids)  # noqa: RUF071 (ids, not paths)
    line = one_line(veil(repo, "sessions", "rm", common), 2)
    assert "match" in line and common in line, line
    assert len(session_ids(repo)) == 2
    prefix = ids[0][: len(common) + 2]
    assert veil(repo, "sessions", "show", prefix).returncode == 0
    done = veil(repo, "sessions", "rm", prefix)
    assert done.returncode == 0, done.stderr
    assert session_ids(repo) == ids[1:]


# ---- 5: admin purge says what matches before asking --------------------------------------------


def test_trap_admin_purge_says_how_many_match_before_asking(repo: Path) -> None:
    a_session(repo)
    store = repo / ".veil" / "context.db"
    before = digest(store)
    code, err = on_terminal(repo, "admin", "purge", "--match", "SECRET-7f3a9", typed="n\n")
    assert code == 1, err
    asked = err[: err.index("[y/N]")]
    assert "event(s)" in asked and any(c.isdigit() and c != "0" for c in asked), err
    assert "nothing deleted" in err
    assert digest(store) == before
    piped = veil(repo, "admin", "purge", "--match", "SECRET-7f3a9")
    line = one_line(piped, 2)
    assert "event(s)" in line and "--yes" in line, line
    assert digest(store) == before


# ---- 6: a purged result comes back as purged ------------------------------------------------


def test_trap_purged_result_is_said_to_be_purged_on_continue(repo: Path) -> None:
    a_session(repo)
    done = veil(repo, "admin", "purge", "--match", "SECRET-7f3a9", "--yes")
    assert done.returncode == 0, done.stderr
    model = script(repo.parent / "again.json", {"content": "Again."})
    trace = repo.parent / "trace.jsonl"
    done = veil(repo, "-c", "-p", "again", "--model", model, "--trace", str(trace))
    assert done.returncode == 0, done.stderr
    sent = json.loads(trace.read_text().splitlines()[0])["messages"]
    results = [m for m in sent if m["role"] == "tool"]
    assert len(results) == 1, sent
    assert "purged" in results[0]["content"], results
    assert "interrupted" not in results[0]["content"], results
    assert "SECRET" not in trace.read_text()


# ---- 7: veil -c keeps the session's model ---------------------------------------------------


def test_trap_continue_uses_the_recorded_model(repo: Path) -> None:
    model = script(repo.parent / "chat.json", {"content": "Hello there."})
    assert veil(repo, "-p", "hi", "--model", model).returncode == 0
    done = veil(repo, "-c", "-p", "again")
    assert done.returncode == 0, done.stderr
    assert "Hello there." in done.stdout
    assert "continuing with the session's model scripted:" in done.stderr


# ---- 8: remember that stores nothing fails -------------------------------------------------


def extraction(path: Path, facts: list[dict[str, Any]]) -> str:
    content = json.dumps({"facts": facts, "episodes": []})
    return script(path, {"content": content})


def test_trap_remember_that_stores_nothing_exits_1(repo: Path) -> None:
    model = extraction(repo.parent / "bad.json", [{"subject": "user"}, {"subject": "user"}])
    done = veil(repo, "memory", "remember", "I prefer emacs.", "--model", model)
    line = one_line(done, 1)
    assert "nothing stored" in line and "2" in line, line
    good = {"subject": "user", "relation": "prefers", "object": "emacs",
            "statement": "The user prefers emacs.", "claimant": "user"}  # fmt: skip
    model = extraction(repo.parent / "half.json", [good, {"subject": "user"}])
    done = veil(repo, "memory", "remember", "I prefer emacs.", "--model", model)
    line = one_line(done, 0)
    assert "1" in line and "not stored" in line, line
    assert "The user prefers emacs." in done.stdout
