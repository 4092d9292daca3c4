"""End to end: ``veil -p`` as a subprocess, in a temporary git repository with a failing pytest
test, the real tools, and a scripted model behind a loopback OpenAI-compatible server. All
assertions are made from the ``--trace`` output and the project's ``.veil`` stores."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from veil.agent.project import project_scope
from veil.agent.sessions import Sessions
from veil.context import ContextEngine
from veil.context.manifest import MANIFEST_OPEN
from veil.convergence.record import AttemptLog
from veil.tape import open_store
from veil.testing import HashEmbedder, ScriptedOpenAIServer

BUGGY = "def add(a, b):\n    return a - b\n\n\n" + "".join(
    f"def helper_{i}(x):\n    '''Helper number {i}, padding so reads are large.'''\n"
    f"    return x * {i} + {i}\n\n\n"
    for i in range(40)
)
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
POINTER = re.compile(r"veil://(?:warm|cold)/ci_[0-9a-f]+")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "calc.py").write_text(BUGGY)
    (root / "test_calc.py").write_text(TEST)
    (root / "NOTES.md").write_text("Release checklist\n" + "- item\n" * 200)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "init"]):
        subprocess.run(cmd, cwd=root, check=True, env=env)
    return root


def veil(
    repo: Path, server: ScriptedOpenAIServer, task: str, trace: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VEIL_BASE_URL": server.base_url, "VEIL_API_KEY": "test"}
    env.pop("VEIL_MODEL", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "veil.cli.main",
            "-p",
            task,
            "--model",
            "openai-compatible:scripted",
            "--approve",
            "auto",
            "--trace",
            str(trace),
            *extra,
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def read_trace(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def size(record: dict[str, Any]) -> int:
    return sum(len(str(m.get("content") or "")) for m in record["messages"])


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def test_requests_shrink_stubs_resolve_and_memory_rides_along(repo: Path, tmp_path: Path) -> None:
    first = {
        "turns": [
            {"content": "Let me look at the code.", "tool_calls": [call("read", path="calc.py")]},
            {
                "content": "Pinning the test, it defines done.",
                "tool_calls": [call("read", path="test_calc.py")],
            },
            {"content": "", "tool_calls": [call("veil_pin", id="call_2_1")]},
            {"content": "Reading the notes too.", "tool_calls": [call("read", path="NOTES.md")]},
            {
                "content": "Run the tests.",
                "tool_calls": [call("bash", command="python -m pytest -q")],
            },
            {
                "content": "Fix the sign.",
                "tool_calls": [
                    call("edit", path="calc.py", old_text="return a - b", new_text="return a + b")
                ],
            },
            {"content": "Run again.", "tool_calls": [call("bash", command="python -m pytest -q")]},
            {"content": "Fixed: add() returned a - b; it now returns a + b and the test passes."},
        ]
    }
    trace = tmp_path / "trace.jsonl"
    with ScriptedOpenAIServer(first) as server:
        result = veil(repo, server, "Make test_calc pass", trace, "--window", "4300")
    assert result.returncode == 0, result.stderr
    assert "it now returns a + b" in result.stdout
    records = read_trace(trace)
    assert len(records) == len(first["turns"])
    # Once something was evicted the manifest ends every request (a system message after the
    # conversation, so that the prefix before it stays cacheable), as of the last batch: it
    # changes only when a batch changed the conversation. The system prompt itself is the same
    # every turn.
    tails = [
        r["messages"][-1]["content"]
        if r["messages"][-1]["role"] == "system" and MANIFEST_OPEN in r["messages"][-1]["content"]
        else None
        for r in records
    ]
    assert tails[0] is None and tails[-1] is not None
    shown = [t for t in tails if t is not None]
    assert len(set(shown)) < len(shown)  # the same manifest over several requests
    assert len({r["system"] for r in records}) == 1
    assert all(
        any(m["role"] == "user" and m["content"] == "Make test_calc pass" for m in r["messages"])
        for r in records
    )
    # The pinned test file stays in full in every request after it was pinned.
    for r in records[3:]:
        pinned = [m for m in r["messages"] if m.get("tool_call_id") == "call_2_1"]
        assert pinned and "def test_add" in pinned[0]["content"]
    # Eviction really shrinks what the provider receives, and leaves stubs with pointers: a
    # result's own stub, or the note standing for a run of whole steps that left.
    stubs = [
        (i, m)
        for i, r in enumerate(records)
        for m in r["messages"]
        if m["role"] == "tool" and POINTER.search(m["content"] or "")
    ]
    notes = [
        m["content"]
        for r in records
        for m in r["messages"]
        if m["role"] == "system" and "earlier step" in (m["content"] or "")
    ]
    assert stubs or notes, "no tool result was ever replaced by a stub"
    assert any(size(records[i]) < size(records[i - 1]) for i in range(1, len(records)))
    # The requests the server received are the ones in the trace (exactly as sent).
    assert len(server.requests) == len(records)
    # Every pointer in a stub resolves to the original output, byte-identical.
    scope = project_scope(repo)
    store = open_store(f"sqlite:///{repo / '.veil' / 'context.db'}", embedder=HashEmbedder())
    engine = ContextEngine(store, session_id="verify", scope=scope, embedder=HashEmbedder())
    for _, message in stubs:
        pointer = POINTER.search(message["content"]).group(0)  # type: ignore[union-attr]
        restored = engine.expand(pointer).content
        original = next(
            m["content"]
            for r in records
            for m in r["messages"]
            if m.get("tool_call_id") == message["tool_call_id"]
            and not POINTER.search(m["content"] or "")
        )
        assert restored == original
    originals = {
        m["content"]
        for r in records
        for m in r["messages"]
        if m["role"] == "tool" and not POINTER.search(m["content"] or "")
    }
    for note in notes:
        for pointer in POINTER.findall(note):
            assert engine.expand(pointer).content in originals
    # Attempts were recorded: the failing test run, the edit, the passing run.
    log = AttemptLog(store, scope, "verify")
    log.begin("Make test_calc pass")
    outcomes = [(a.action, a.outcome) for a in log.attempts()]
    assert ("test", "fail") in outcomes and ("test", "pass") in outcomes
    assert any(action == "edit" for action, _ in outcomes)
    sessions = Sessions(store, scope=scope)
    (session,) = sessions.list()
    store.close()

    # Resume: a correction continues the same session; pinned, intent and correction ride along.
    second = {
        "turns": [
            {"content": "Understood.", "tool_calls": [call("read", path="NOTES.md")]},
            {"content": "", "tool_calls": [call("bash", command="python -m pytest -q")]},
            {"content": "Tests still pass; calc.py was the only change."},
        ]
    }
    trace2 = tmp_path / "trace2.jsonl"
    with ScriptedOpenAIServer(second) as server:
        resumed = veil(
            repo,
            server,
            "No, do not touch the tests; only calc.py",
            trace2,
            "-c",
            "--window",
            "4400",  # about 1,000 tokens of conversation beside the prompt (its manifest too)
        )
    assert resumed.returncode == 0, resumed.stderr
    for r in read_trace(trace2):
        contents = [m["content"] for m in r["messages"]]
        assert "Make test_calc pass" in contents
        assert "No, do not touch the tests; only calc.py" in contents
        assert any(
            "def test_add" in (m["content"] or "")
            for m in r["messages"]
            if m.get("tool_call_id") == "call_2_1"
        )
    store = open_store(f"sqlite:///{repo / '.veil' / 'context.db'}", embedder=HashEmbedder())
    (again,) = Sessions(store, scope=scope).list()
    assert again.id == session.id and again.messages > session.messages
    store.close()

    # Branch: a new session whose parent is the first, starting from its transcript.
    with ScriptedOpenAIServer({"turns": [{"content": "Branched."}]}) as server:
        forked = veil(
            repo,
            server,
            "Try it another way",
            tmp_path / "trace3.jsonl",
            "--session",
            session.id,
            "--fork",
        )
    assert forked.returncode == 0, forked.stderr
    store = open_store(f"sqlite:///{repo / '.veil' / 'context.db'}", embedder=HashEmbedder())
    listed = Sessions(store, scope=scope).list()
    branch = next(s for s in listed if s.id != session.id)
    assert branch.parent_id == session.id and branch.messages > again.messages
    store.close()


def test_a_circling_model_is_stopped_at_level_three(repo: Path, tmp_path: Path) -> None:
    turns: list[dict[str, Any]] = [{"content": "", "tool_calls": [call("read", path="calc.py")]}]
    for _ in range(14):
        turns.append(
            {
                "content": "Try this fix.",
                "tool_calls": [
                    call(
                        "edit",
                        path="calc.py",
                        old_text="return a - b",
                        new_text="return a - b  # fix",
                    )
                ],
            }
        )
        turns.append(
            {"content": "Test it.", "tool_calls": [call("bash", command="python -m pytest -q")]}
        )
    turns.append({"content": "Giving up."})
    trace = tmp_path / "trace.jsonl"
    with ScriptedOpenAIServer({"turns": turns}) as server:
        result = veil(repo, server, "Make test_calc pass", trace)
    assert result.returncode == 3, (result.stdout, result.stderr)
    assert "Stopped:" in result.stderr and "Over to you" in result.stderr
    records = read_trace(trace)
    assert len(records) < len(turns)  # it really stopped before the script ran out
    tool_results = [m for r in records for m in r["messages"] if m["role"] == "tool"]
    blocked = "Veil blocked this call: this exact edit (calc.py)"
    assert any(blocked in (m["content"] or "") for m in tool_results)  # level 2 blocked
    # The convergence feedback rides with the manifest at the end of the request.
    tails = [r["messages"][-1]["content"] for r in records[-3:]]
    header = "Veil records every attempt at the current task ('Make test_calc pass')"
    assert all(header in t and "level 2 of 3" in t and "You are circling" in t for t in tails)


def test_without_a_model_veil_says_how_to_configure_one(repo: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("VEIL_MODEL", "OPENAI_API_KEY")}
    result = subprocess.run(
        [sys.executable, "-m", "veil.cli.main", "-p", "hello"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "VEIL_MODEL" in result.stderr
