"""``veil keys``, ``veil serve`` and ``veil mcp`` as real subprocesses."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.server.conftest import fact
from veil.memory import Memory
from veil.testing import HashEmbedder

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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_veil_serve_subprocess(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    token = veil("keys", "create", "--db", db, "--scope", "user:a").stdout.strip()
    model = script(
        tmp_path / "model.json",
        {"facts": [fact("user", "prefers", "vim", "The user prefers vim.")], "episodes": []},
    )
    port = free_port()
    proc = subprocess.Popen(
        [
            *VEIL,
            "serve",
            "--db",
            db,
            "--model",
            f"scripted:{model}",
            "--port",
            str(port),
            "--embedder",
            "hash",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/v1/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "veil serve did not come up"
            time.sleep(0.1)
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url, headers=headers) as c:
            r = c.post("/v1/scopes/user:a/remember", json={"text": "I prefer vim"})
            assert r.status_code == 200 and len(r.json()["facts"]) == 1
            assert "vim" in c.post("/v1/scopes/user:a/recall", json={"query": "vim"}).text
            assert c.get("/v1/scopes/user:b/facts").status_code == 403
            assert c.get("/openapi.json").json()["info"]["title"] == "Veil memory API"
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0


def test_veil_serve_without_a_model_says_how_to_configure(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "VEIL_MODEL"}
    result = subprocess.run(
        [*VEIL, "serve", "--db", str(tmp_path / "m.db"), "--embedder", "hash"],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip
    assert result.returncode == 2 and "VEIL_MODEL" in result.stderr


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
            out["smuggled"] = smuggled.structured_content
        return out

    out = asyncio.run(asyncio.wait_for(session(), 60))
    assert set(out["schemas"]) == {"remember", "recall", "history", "confirm", "dispute"}
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
    with Memory(db, embedder=HashEmbedder()) as memory:
        evidence = memory.store.read("user:mcp", kinds=["memory.evidence"])
        # three remembers; the smuggled user_id/author arguments were ignored by the SDK's
        # argument model: the third write still landed in user:mcp, authored by assistant
        assert [e.actor for e in evidence] == ["assistant"] * 3
        assert [e.payload["author"] for e in evidence] == ["assistant"] * 3
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
