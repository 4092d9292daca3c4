"""``veil keys``, ``veil serve`` and ``veil mcp`` as real subprocesses."""

from __future__ import annotations

import asyncio
import json
import os
import re
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.server.conftest import fact
from veil import __version__
from veil.llm.configure import HOW_TO_CONFIGURE
from veil.memory import Memory
from veil.testing import HashEmbedder, ScriptedModel

VEIL = [sys.executable, "-m", "veil.cli.main"]


def veil(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*VEIL, *args], capture_output=True, text=True, timeout=60, check=False)


def script(path: Path, *extractions: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"turns": [{"content": json.dumps(e)} for e in extractions]}))
    return path


def test_keys_cli_prints_the_key_alone(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    created = veil("keys", "create", "--db", db, "--scope", "user:a", "--scope", "team:x",
                   "--authority", "assistant", "--admin")  # fmt: skip
    assert created.returncode == 0, created.stderr
    token = created.stdout
    assert token.endswith("\n") and token.count("\n") == 1
    token = token.strip()
    assert token.startswith("vk_") and " " not in token
    listed = veil("keys", "list", "--db", db)
    key_id = token.split("_")[1]
    assert key_id in listed.stdout and "assistant,admin" in listed.stdout
    assert token.split("_")[2] not in listed.stdout + created.stderr  # the secret is shown once
    refused = veil("keys", "create", "--db", db, "--scope", "veil:keys")
    assert refused.returncode == 2 and refused.stdout == "" and "reserved" in refused.stderr
    assert veil("keys", "revoke", key_id, "--db", db).returncode == 0
    assert "revoked" in veil("keys", "list", "--db", db).stdout


def test_keys_list_shows_a_header_and_labels(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    labelled = veil("keys", "create", "--db", db, "--scope", "user:a", "--label", "ci bot")
    plain = veil("keys", "create", "--db", db, "--scope", "user:b", "--scope", "team:x")
    assert labelled.returncode == 0 and plain.returncode == 0, labelled.stderr + plain.stderr
    revoked_id = plain.stdout.strip().split("_")[1]
    assert veil("keys", "revoke", revoked_id, "--db", db).returncode == 0
    listed = veil("keys", "list", "--db", db)
    assert listed.returncode == 0, listed.stderr
    header, first, second = listed.stdout.splitlines()
    assert header.split() == ["KEY", "ID", "GRANT", "CREATED", "(UTC)", "LABEL", "SCOPES"]
    labelled_id = labelled.stdout.strip().split("_")[1]
    assert first.startswith(labelled_id) and "  ci bot  " in first and first.endswith("user:a")
    assert second.startswith(revoked_id) and "user,revoked" in second
    assert second.endswith("team:x user:b")
    # the label column: "-" when a key has none, and the columns line up under the header
    label_at = header.index("LABEL")
    assert first[label_at:].startswith("ci bot") and second[label_at:].startswith("- ")
    for token in (labelled.stdout, plain.stdout):
        assert token.strip().split("_")[2] not in listed.stdout


def test_keys_mistakes_are_one_line(tmp_path: Path) -> None:
    missing = str(tmp_path / "typo.db")
    for args in (["list", "--db", missing], ["revoke", "abc", "--db", missing]):
        result = veil("keys", *args)
        assert (
            result.returncode == 2
            and result.stderr.strip() == f"veil keys: no store at {missing} (pass --db PATH_OR_URL)"
        )
    assert not Path(missing).exists()
    db = str(tmp_path / "m.db")
    bad = veil("keys", "create", "--db", db, "--scope", "user:a", "--label", "two\nlines")
    assert bad.returncode == 2 and bad.stdout == "" and "--label" in bad.stderr


def start_serve(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """``veil serve --port 0 ARGS`` as a subprocess; returns it and the URL from the line it
    prints once it listens (the port the system chose). No polling: connections made after
    the line are queued by the listening socket until uvicorn accepts them."""
    proc = subprocess.Popen(
        [*VEIL, "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stderr is not None
    ready, _, _ = select.select([proc.stderr], [], [], 120)  # a guard against a hang only
    line = proc.stderr.readline() if ready else ""
    match = re.match(r"veil serve: (http://127\.0\.0\.1:\d+) ", line)
    if match is None:
        stop_serve(proc)
        raise AssertionError(f"veil serve did not start: {line}{proc.communicate()[1]}")
    return proc, match.group(1)


def stop_serve(proc: subprocess.Popen[str]) -> int:
    proc.send_signal(signal.SIGINT)
    try:
        proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
    return proc.returncode


def without_model_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "VEIL_MODEL"}


def test_veil_serve_subprocess(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    token = veil("keys", "create", "--db", db, "--scope", "user:a").stdout.strip()
    model = script(
        tmp_path / "model.json",
        {"facts": [fact("user", "prefers", "vim", "The user prefers vim.")], "episodes": []},
    )
    proc, url = start_serve("--db", db, "--model", f"scripted:{model}", "--embedder", "hash")
    try:
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url, headers=headers) as c:
            assert c.get("/v1/health").status_code == 200
            r = c.post("/v1/scopes/user:a/remember", json={"text": "I prefer vim"})
            assert r.status_code == 200 and len(r.json()["facts"]) == 1
            assert "vim" in c.post("/v1/scopes/user:a/recall", json={"query": "vim"}).text
            assert c.get("/v1/scopes/user:b/facts").status_code == 403
            assert c.get("/openapi.json").json()["info"]["title"] == "Veil memory API"
    finally:
        returncode = stop_serve(proc)
    assert returncode == 0


def seed(db: str, scope: str) -> str:
    """A store with one fact (user prefers vim) in ``scope``; returns the fact id."""
    extraction = {
        "facts": [fact("user", "prefers", "vim", "The user prefers vim.")],
        "episodes": [],
    }
    with Memory(db, complete=ScriptedModel([extraction]), embedder=HashEmbedder()) as memory:
        return memory.remember("I prefer vim", user_id=scope).facts[0]


def evidence_texts(db: str, scope: str) -> list[str]:
    with Memory(db, embedder=HashEmbedder()) as memory:
        events = memory.store.read(scope, kinds=["memory.evidence"])
        return [str(e.payload["text"]) for e in events]


def test_veil_serve_without_a_model_serves_reads_and_answers_remember_with_503(
    tmp_path: Path,
) -> None:
    db = str(tmp_path / "m.db")
    fact_id = seed(db, "user:a")
    created = veil("keys", "create", "--db", db, "--scope", "user:a", "--label", "reader")
    assert created.returncode == 0, created.stderr
    proc, url = start_serve("--db", db, "--embedder", "hash", env=without_model_env())
    try:
        headers = {"Authorization": f"Bearer {created.stdout.strip()}"}
        with httpx.Client(base_url=url, headers=headers) as c:
            recall = c.post("/v1/scopes/user:a/recall", json={"query": "vim"})
            assert recall.status_code == 200 and "vim" in recall.json()["text"]
            facts = c.get("/v1/scopes/user:a/facts")
            assert facts.status_code == 200 and [f["id"] for f in facts.json()["facts"]] == [
                fact_id
            ]
            history = c.get("/v1/scopes/user:a/history?subject=user&relation=prefers")
            assert history.status_code == 200 and len(history.json()["facts"]) == 1
            exported = c.get("/v1/scopes/user:a/export")
            assert exported.status_code == 200 and "I prefer vim" in exported.text
            disputed = c.post(f"/v1/scopes/user:a/facts/{fact_id}/dispute", json={"reason": "typo"})
            assert disputed.status_code == 200 and disputed.json()["status"] == "disputed"
            confirmed = c.post(f"/v1/scopes/user:a/facts/{fact_id}/confirm")
            assert confirmed.status_code == 200 and confirmed.json()["status"] == "current"
            refused = c.post("/v1/scopes/user:a/remember", json={"text": "I prefer emacs"})
            assert refused.status_code == 503
            body = refused.json()
            assert body["error"] == "no_model"
            assert body["message"].startswith("no model is configured")
            assert HOW_TO_CONFIGURE in body["message"]
            # the order of checks holds: a key without the scope is still a 403
            assert c.post("/v1/scopes/user:b/remember", json={"text": "x"}).status_code == 403
    finally:
        returncode = stop_serve(proc)
    assert returncode == 0
    assert evidence_texts(db, "user:a") == ["I prefer vim"]  # the refused remember wrote nothing


BAD_MODELS = [
    ("unknown-provider", ["--model", "bogus:x"], "unknown provider"),
    ("missing-key", ["--model", "openai:gpt-4.1-mini"], "OPENAI_API_KEY"),
    ("missing-script", ["--model", "scripted:/nonexistent/script.json"], "not found"),
    ("bad-embedder", ["--embedder", "bogus"], "embedder spec"),
]


@pytest.mark.parametrize("command", ["serve", "mcp"])
@pytest.mark.parametrize(
    ("args", "says"), [b[1:] for b in BAD_MODELS], ids=[b[0] for b in BAD_MODELS]
)
def test_a_named_but_unusable_model_is_a_one_line_startup_error(
    tmp_path: Path, command: str, args: list[str], says: str
) -> None:
    env = {k: v for k, v in without_model_env().items() if k != "OPENAI_API_KEY"}
    db = tmp_path / "m.db"
    scope = ["--scope", "user:a"] if command == "mcp" else ["--port", "0"]
    result = subprocess.run(
        [*VEIL, command, "--db", str(db), *scope, *args],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"veil {command}: "), result.stderr
    assert says in lines[0]
    assert not db.exists()  # refused before the store was opened


def test_veil_mcp_without_a_model_reads_and_refuses_remember(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    seed(db, "user:mcp")
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "veil.cli.main",
            "mcp",
            "--db",
            db,
            "--scope",
            "user:mcp",
            "--embedder",
            "hash",
        ],
        env=without_model_env(),
    )

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(params) as client:
            out["info"] = client.server_info
            recall = await client.call_tool("recall", {"query": "vim"})
            out["recall"] = (recall.is_error, recall.structured_content)
            history = await client.call_tool("history", {"subject": "user", "relation": "prefers"})
            out["history"] = history.structured_content
            remember = await client.call_tool("remember", {"text": "I prefer emacs"})
            out["remember"] = (
                remember.is_error,
                [getattr(c, "text", "") for c in remember.content],
            )
        return out

    out = asyncio.run(asyncio.wait_for(session(), 60))
    assert out["info"] is not None
    assert out["info"].name == "veil" and out["info"].version == __version__
    is_error, recall = out["recall"]
    assert is_error is False and "vim" in recall["text"]
    assert [f["object"] for f in out["history"]["facts"]] == ["vim"]
    is_error, texts = out["remember"]
    assert is_error is True
    assert any("no model is configured" in t and HOW_TO_CONFIGURE in t for t in texts), texts
    assert evidence_texts(db, "user:mcp") == ["I prefer vim"]


def test_veil_mcp_subprocess_binds_scope_and_authority(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    model = script(
        tmp_path / "model.json",
        {"facts": [fact("user", "prefers", "vim", "The user prefers vim.")], "episodes": []},
        {"facts": [fact("user", "prefers", "emacs", "The user prefers emacs.")], "episodes": []},
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "veil.cli.main", "mcp", "--db", db, "--scope", "user:mcp",
              "--authority", "assistant", "--model", f"scripted:{model}", "--embedder", "hash"],
    )  # fmt: skip

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(params) as client:
            tools = (await client.list_tools()).tools
            out["schemas"] = {t.name: t.input_schema for t in tools}
            first = await client.call_tool("remember", {"text": "I prefer vim"})
            out["first"] = first.structured_content
            await client.call_tool("remember", {"text": "Now I prefer emacs"})
            recall = await client.call_tool("recall", {"query": "editor"})
            out["recall"] = recall.structured_content
            history = await client.call_tool("history", {"subject": "user", "relation": "prefers"})
            out["history"] = history.structured_content
            current = out["history"]["facts"][-1]["id"]
            disputed = await client.call_tool("dispute", {"fact_id": current, "reason": "typo"})
            out["disputed"] = disputed.structured_content
            confirmed = await client.call_tool("confirm", {"fact_id": current})
            out["confirmed"] = confirmed.structured_content
            bad = await client.call_tool("confirm", {"fact_id": "nope"})
            out["bad"] = bad.is_error
            smuggled = await client.call_tool(
                "remember", {"text": "I prefer nano", "user_id": "user:other", "author": "user"}
            )
            out["smuggled"] = (
                smuggled.is_error,
                [getattr(c, "text", "") for c in smuggled.content],
            )
        return out

    out = asyncio.run(asyncio.wait_for(session(), 60))
    assert set(out["schemas"]) == {
        "remember", "recall", "facts", "history", "confirm", "dispute",
        "attempts", "record_attempt",
    }  # fmt: skip
    for name, schema in out["schemas"].items():
        props = set(schema.get("properties", {}))
        assert not props & {"user_id", "author", "scope", "actor", "authority"}, name
    assert len(out["first"]["facts"]) == 1
    assert "emacs" in out["recall"]["text"]
    versions = out["history"]["facts"]
    assert [f["object"] for f in versions] == ["vim", "emacs"]
    assert {f["provenance"]["author_of_evidence"] for f in versions} == {"assistant"}
    assert out["disputed"]["status"] == "disputed"
    assert out["confirmed"]["status"] == "current"
    assert out["bad"] is True
    is_error, texts = out["smuggled"]
    assert is_error and "unexpected" in texts[0] and "user_id" in texts[0], texts
    with Memory(db, embedder=HashEmbedder()) as memory:
        evidence = memory.store.read("user:mcp", kinds=["memory.evidence"])
        # two remembers: the third, smuggling user_id/author arguments, was refused with an
        # error naming them (not silently dropped), and nothing reached another scope
        assert [e.actor for e in evidence] == ["assistant"] * 2
        assert [e.payload["author"] for e in evidence] == ["assistant"] * 2
        confirms = memory.store.read("user:mcp", kinds=["memory.confirmed", "memory.disputed"])
        assert {e.actor for e in confirms} == {"assistant"}
        assert memory.store.scopes() == ["user:mcp"]


def test_malloc_arenas_are_capped_unless_the_environment_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`veil serve` caps glibc malloc arenas (the steady soak's RSS creep); an explicit
    MALLOC_ARENA_MAX is left alone."""
    from veil.server.commands import limit_malloc_arenas

    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert limit_malloc_arenas() is False
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    assert limit_malloc_arenas() is sys.platform.startswith("linux")
