"""The MCP tools coding agents need (facts, attempts, record_attempt) and their descriptions.

In-process through :class:`DirectMcp` for the tool logic; one subprocess test drives
``veil mcp --project`` in a real git repository with the ``mcp`` SDK's client, the way Claude
Code or Codex start it.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.server.conftest import fact
from tests.server.mcp_direct import DirectMcp
from veil import __version__
from veil.agent.project import project_scope
from veil.convergence.record import AttemptLog
from veil.memory import Memory
from veil.server.mcp_server import Binding, build_server
from veil.testing import HashEmbedder, ScriptedModel

FAILED_TEST = (
    "FAILED tests/test_a.py::test_one - AssertionError: assert 1 == 2\n"
    "========================= 1 failed in 0.12s =========================\n"
)
RST = re.compile(r"``|:(class|func|meth|mod|data):|\.\. ")


def server(tmp_path: Path, scope: str = "project:t") -> tuple[DirectMcp, Memory]:
    vim = {"facts": [fact("user", "prefers", "vim", "The user prefers vim.")], "episodes": []}
    emacs = {"facts": [fact("user", "prefers", "emacs", "The user prefers emacs.")], "episodes": []}
    memory = Memory(
        tmp_path / "m.db", complete=ScriptedModel([vim, emacs]), embedder=HashEmbedder()
    )
    log = AttemptLog(memory.store, scope, "mcp-test")
    return DirectMcp(build_server(memory, Binding(scope, "user"), log)), memory


def test_every_tool_and_argument_is_described_for_a_model_without_markup(tmp_path: Path) -> None:
    mcp, memory = server(tmp_path)
    with memory:
        tools = mcp._request("tools/list", {})["tools"]
    names = {t["name"] for t in tools}
    assert {"facts", "recall", "attempts", "record_attempt"} <= names
    for tool in tools:
        assert len(tool["description"]) > 40 and not RST.search(tool["description"]), tool
        for prop, spec in tool["inputSchema"]["properties"].items():
            assert spec.get("description"), (tool["name"], prop)
            assert not RST.search(spec["description"]), (tool["name"], prop)
    recall = next(t for t in tools if t["name"] == "recall")
    assert "token_budget" in recall["inputSchema"]["properties"]


def test_facts_lists_current_facts_and_history_on_request(tmp_path: Path) -> None:
    mcp, memory = server(tmp_path)
    with memory:
        assert mcp.call_tool("facts", {}).structured_content == {
            "facts": [],
            "total": 0,
            "truncated": False,
        }
        mcp.call_tool("remember", {"text": "I use vim"})
        mcp.call_tool("remember", {"text": "I switched to emacs"})
        current = mcp.call_tool("facts", {}).structured_content
        assert current is not None
        assert [f["object"] for f in current["facts"]] == ["emacs"]
        every = mcp.call_tool("facts", {"relation": "prefers", "include_history": True})
        assert every.structured_content is not None
        assert [f["object"] for f in every.structured_content["facts"]] == ["vim", "emacs"]
        assert [f["status"] for f in every.structured_content["facts"]] == [
            "superseded",
            "current",
        ]
        newest = mcp.call_tool("facts", {"include_history": True, "limit": 1})
        assert newest.structured_content is not None and newest.structured_content["truncated"]
        bad = mcp.call_tool("facts", {"subject": 3})
        assert bad.is_error and "'subject' must be string" in bad.texts[0]


def test_record_attempt_detects_outcomes_and_escalates_to_a_different_approach(
    tmp_path: Path,
) -> None:
    mcp, memory = server(tmp_path)
    goal = "make test_one pass"
    with memory:
        first = mcp.call_tool(
            "record_attempt",
            {"goal": goal, "action": "test", "target": "tests/test_a.py", "output": FAILED_TEST,
             "exit_code": 1},
        )  # fmt: skip
        assert not first.is_error and first.structured_content is not None
        attempt = first.structured_content["attempt"]
        assert attempt["outcome"] == "fail" and attempt["fingerprint"].startswith("fp1:")
        assert first.structured_content["level"] == 0
        levels: list[int] = []
        again = first
        for _ in range(5):
            edit = {"goal": goal, "action": "edit", "target": "src/a.py", "outcome": "unknown",
                    "files": ["src/a.py"]}  # fmt: skip
            mcp.call_tool("record_attempt", edit)
            again = mcp.call_tool(
                "record_attempt",
                {"goal": goal, "action": "test", "target": "tests/test_a.py",
                 "output": FAILED_TEST, "exit_code": 1},
            )  # fmt: skip
            assert again.structured_content is not None
            levels.append(again.structured_content["level"])
        assert levels[-1] == 2, levels
        assert again.structured_content is not None
        note = again.structured_content["note"]
        assert "take a different approach" in note and attempt["fingerprint"] in note
        record = mcp.call_tool("attempts", {"goal": goal}).structured_content
        assert record is not None
        assert record["level"] == 2 and record["attempts_total"] == 11
        assert record["intent"] == goal and record["fingerprints"] == [attempt["fingerprint"]]
        listed = mcp.call_tool("attempts", {}).structured_content
        assert listed is not None
        assert [(g["goal"], g["attempts"], g["level"]) for g in listed["goals"]] == [(goal, 11, 2)]
        # a pass resets the count
        passed = mcp.call_tool(
            "record_attempt",
            {"goal": goal, "action": "test", "target": "tests/test_a.py",
             "output": "1 passed in 0.05s", "exit_code": 0},
        ).structured_content  # fmt: skip
        assert passed is not None
        assert passed["attempt"]["outcome"] == "pass" and passed["level"] == 0


def test_record_attempt_refuses_what_it_cannot_use(tmp_path: Path) -> None:
    mcp, memory = server(tmp_path)
    with memory:
        cases = [
            ({"goal": "g", "action": "edit", "target": "a.py"}, "say how it came out"),
            ({"goal": " ", "action": "edit", "target": "a.py", "outcome": "fail"}, "goal"),
            ({"goal": "g", "action": "guess", "target": "a.py", "outcome": "fail"}, "action"),
            ({"goal": "g", "action": "edit", "target": "a.py", "outcome": "maybe"}, "outcome"),
            ({"goal": "g", "action": "edit", "target": "a", "outcome": "fail", "files": "a"},
             "files"),
            ({"goal": "g", "action": "edit", "target": "a.py", "scope": "project:other",
              "outcome": "fail"}, "unexpected 'scope'"),
        ]  # fmt: skip
        for arguments, says in cases:
            result = mcp.call_tool("record_attempt", arguments)
            assert result.is_error and says in result.texts[0], (arguments, result.texts)
        assert mcp.call_tool("attempts", {}).structured_content == {"goals": []}


def git_repo(path: Path) -> Path:
    path.mkdir()
    for args in (
        ["init", "-q"],
        ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q",
         "--allow-empty", "-m", "root"],
    ):  # fmt: skip
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)
    return path


def test_veil_mcp_project_serves_the_projects_memory_and_attempt_record(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    (repo / "src").mkdir()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "veil.cli.main", "mcp", "--project", "--embedder", "hash"],
        cwd=str(repo / "src"),
    )

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(params) as client:
            out["info"] = client.server_info
            out["instructions"] = client.instructions
            recorded = await client.call_tool(
                "record_attempt",
                {"goal": "fix the parser", "action": "test", "target": "pytest",
                 "output": FAILED_TEST, "exit_code": 1},
            )  # fmt: skip
            out["recorded"] = recorded.structured_content
            out["attempts"] = (await client.call_tool("attempts", {})).structured_content
            out["facts"] = (await client.call_tool("facts", {})).structured_content
        return out

    out = asyncio.run(asyncio.wait_for(session(), 60))
    assert out["info"].name == "veil" and out["info"].version == __version__
    assert "record_attempt" in out["instructions"]
    assert out["recorded"]["attempt"]["outcome"] == "fail"
    assert out["attempts"]["goals"][0]["goal"] == "fix the parser"
    assert out["facts"]["facts"] == []
    # the project's stores, at the repository root (not the subdirectory it started in)
    assert (repo / ".veil" / "memory.db").exists() and (repo / ".veil" / "context.db").exists()
    assert (repo / ".veil" / ".gitignore").read_text().strip().endswith("*")
    with Memory(repo / ".veil" / "context.db", embedder=HashEmbedder()) as memory:
        log = AttemptLog(memory.store, project_scope(repo), "check")
        attempts = log.attempts(out["recorded"]["attempt"]["goal_id"])
        assert [a.target for a in attempts] == ["pytest"]


def test_veil_mcp_needs_a_scope_or_a_project(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "veil.cli.main", "mcp", "--db", str(tmp_path / "m.db")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip() == (
        "veil mcp: --scope is required (or --project to serve this project's memory)"
    )
    missing = subprocess.run(
        [sys.executable, "-m", "veil.cli.main", "mcp", "--project", str(tmp_path / "nope")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert missing.returncode == 2 and "no such directory" in missing.stderr
