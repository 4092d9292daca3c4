"""Every parameter of every memory tool a model is offered has a description (issue 28, G): the
MCP server's tools as ``veil mcp --project`` lists them over stdio, and the harness's own
``veil_*`` tools with long-term memory on (every one of them offered)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from veil.agent.harness import VeilHarness
from veil.memory import Memory
from veil.tape.sqlite import SQLiteStore
from veil.testing import HashEmbedder, ScriptedModel


def undescribed(name: str, schema: dict[str, Any]) -> list[str]:
    return [
        f"{name}.{param}"
        for param, spec in schema.get("properties", {}).items()
        if not str(spec.get("description", "")).strip()
    ]


def test_every_mcp_tool_parameter_is_described(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ("VEIL_MODEL", "CLAUDE_PROJECT_DIR")}
    done = subprocess.run(
        [sys.executable, "-m", "veil.cli.main", "mcp", "--project", str(project),
         "--embedder", "hash"],
        input="".join(json.dumps(m) + "\n" for m in messages),
        capture_output=True, text=True, timeout=120, check=False, env=env, cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    tools = next(a for a in answers if a.get("id") == 2)["result"]["tools"]
    names = {t["name"] for t in tools}
    assert {"remember", "recall", "facts", "history", "confirm", "dispute"} <= names
    assert {"attempts", "record_attempt", "expand"} <= names
    missing = [m for t in tools for m in undescribed(t["name"], t["inputSchema"])]
    assert missing == []


def test_every_harness_memory_tool_parameter_is_described(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "m.db", complete=ScriptedModel([]), embedder=HashEmbedder())
    store = SQLiteStore(":memory:", embedder=HashEmbedder())
    try:
        harness = VeilHarness(store=store, memory=memory, embedder=HashEmbedder())
        specs = [t.spec for t in harness.tools()]
        assert len(specs) == 12 and "veil_remember" in {s.name for s in specs}
        missing = [m for s in specs for m in undescribed(s.name, s.parameters)]
        assert missing == []
    finally:
        store.close()
        memory.close()
