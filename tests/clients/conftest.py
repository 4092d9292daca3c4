"""Claude Code hook payloads (tests/data/claude_code) filled in for a temporary git project,
and the two ways to run a hook: ``veil hook claude-code EVENT`` as a subprocess (what Claude
Code runs) and the same entry point in-process (:func:`veil.cli.hook.run_hook`), which the
tests use to lay down earlier calls quickly."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from veil.cli.hook import run_hook

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "claude_code"
VEIL = [sys.executable, "-m", "veil.cli.main"]


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str

    @property
    def answer(self) -> dict[str, Any] | None:
        return json.loads(self.stdout) if self.stdout.strip() else None

    @property
    def context(self) -> str:
        answer = self.answer or {}
        return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


def git_project(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (path / "tests").mkdir()
    (path / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "root"],
    ):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    return git_project(tmp_path / "proj")


def payload(name: str, project: Path, session: str = "s1", **fields: Any) -> str:
    """The fixture ``name`` for ``project``; ``fields`` replace top-level fields or, for
    ``tool_input`` / ``tool_response``, are merged into them."""
    text = (FIXTURES / f"{name}.json").read_text()
    text = text.replace("{project}", str(project)).replace("{session}", session)
    text = text.replace("{transcript}", str(project / "transcript.jsonl"))
    data: dict[str, Any] = json.loads(text)
    for key, value in fields.items():
        if key in ("tool_input", "tool_response") and isinstance(value, dict):
            data[key] = {**data.get(key, {}), **value}
        else:
            data[key] = value
    return json.dumps(data)


def hook_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    env.update(extra)
    return env


def run_subprocess(event: str, stdin: str, *, env: dict[str, str] | None = None) -> Ran:
    """``veil hook claude-code EVENT`` exactly as Claude Code runs a command hook."""
    done = subprocess.run(
        [*VEIL, "hook", "claude-code", event],
        input=stdin, capture_output=True, text=True, timeout=60, check=False,
        env=env or hook_env(),
    )  # fmt: skip
    return Ran(done.returncode, done.stdout, done.stderr)


def run_inprocess(event: str, stdin: str) -> Ran:
    out, err = io.StringIO(), io.StringIO()
    code = run_hook("claude-code", event, stdin=io.StringIO(stdin), stdout=out, stderr=err)
    return Ran(code, out.getvalue(), err.getvalue())


class McpProcess:
    """A stdio MCP server run the way the agents run it (a subprocess, JSON-RPC lines), with a
    blocking ``call``: enough to drive the ``hook`` tool as Claude Code and Codex do."""

    def __init__(self, command: list[str], *, cwd: Path, env: dict[str, str] | None = None):
        self.process = subprocess.Popen(
            command, cwd=cwd, env=env or hook_env(), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self._id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "test", "version": "0"}})  # fmt: skip
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        self._send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise AssertionError(f"the server closed: {self.stderr()}")
            message = json.loads(line)
            if message.get("id") == self._id:
                assert "error" not in message, message
                return dict(message["result"])

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The tool's structured result (its JSON text parsed)."""
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert not result.get("isError"), result
        structured = result.get("structuredContent")
        if structured is not None:
            return dict(structured)
        text = "".join(c.get("text", "") for c in result.get("content", []))
        return dict(json.loads(text)) if text.strip() else {}

    def tools(self) -> list[str]:
        return [t["name"] for t in self.request("tools/list", {})["tools"]]

    def stderr(self) -> str:
        """Everything the server wrote on stderr (it is stopped first)."""
        self.close()
        return self._stderr

    _stderr: str = ""

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None and not stream.closed:
                if stream is self.process.stderr:
                    self._stderr += stream.read()
                stream.close()


def hook_arguments(template: dict[str, Any], body: str, *, codex: bool = False) -> dict[str, Any]:
    """An installed ``mcp_tool`` hook's ``input`` filled in from a hook payload the way the
    agent fills it: ``${field}`` → the field (objects as JSON text in Claude Code, as objects
    in Codex; a missing field as ``""`` in Claude Code)."""
    data = json.loads(body)
    out: dict[str, Any] = {}
    for key, value in template.items():
        if isinstance(value, str) and value.startswith("${") and value.endswith("}"):
            field = data.get(value[2:-1], "")
            is_text = isinstance(field, str)
            out[key] = field if is_text or codex else json.dumps(field)
        else:
            out[key] = value
    return out
