"""The real local model's agent replies, replayed: ``veil -p`` as a subprocess in a fresh git
copy of each benchmark repo, the small profile and the real tools, the recorded replies served
verbatim by a loopback OpenAI-compatible server. The recorded model (Qwen2.5-Coder-1.5B, see
``recorded_with``) wrote most of its tool calls as JSON in the message text; these tests check
that the real provider recovers exactly the calls the benchmark saw, that the loop runs them,
and that their results reach the next request.

Recorded by ``python -m benchmarks.real_model --agent --save-fixtures`` (docs/local-model.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from veil.testing import ScriptedOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "data" / "recorded" / "agent.json"
REPOS = ROOT / "benchmarks" / "real_model_data" / "repos"


def recording() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())


def runs() -> list[dict[str, Any]]:
    return list(recording()["runs"])


def git_copy(repo: str, tmp: Path) -> Path:
    root = tmp / repo
    shutil.copytree(REPOS / repo, root)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "x"]):
        subprocess.run(cmd, cwd=root, check=True, env=env, capture_output=True)
    return root


def test_the_recording_names_its_model_and_holds_calls_written_as_text() -> None:
    data = recording()
    assert "qwen2.5-coder-1.5b" in data["recorded_with"]["model"].lower()
    recovered = [c for r in data["runs"] for t in r["turns"] for c in t["recovered"]]
    assert recovered, "the recording holds no tool call written in the message text"
    for run in data["runs"]:
        assert (REPOS / run["repo"]).is_dir()
        assert sum(len(t["recovered"]) for t in run["turns"]) == run["row"]["from_text"]


@pytest.mark.parametrize("index", range(len(runs())), ids=lambda i: f"{runs()[i]['repo']}")
def test_recorded_replies_drive_the_real_loop(tmp_path: Path, index: int) -> None:
    run = runs()[index]
    root = git_copy(run["repo"], tmp_path)
    trace = tmp_path / "trace.jsonl"
    script = {
        "turns": [{"content": t["content"], "tool_calls": t["tool_calls"]} for t in run["turns"]]
    }
    env = {**os.environ, "VEIL_API_KEY": "test"}
    env.pop("VEIL_MODEL", None)
    with ScriptedOpenAIServer(script) as server:
        env["VEIL_BASE_URL"] = server.base_url
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "veil.cli.main",
                "-p",
                recording()["task"],
                "--model",
                "openai-compatible:recorded",
                "--approve",
                "auto",
                "--profile",
                "small",
                "--window",
                str(recording()["window"]),
                "--max-turns",
                str(len(run["turns"])),
                "--trace",
                str(trace),
                "--json",
            ],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
    assert "Traceback" not in done.stderr, done.stderr
    assert len(server.requests) == len(run["turns"]), done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    started = [e for e in events if e.get("kind") == "tool_start"]
    expected = [c for t in run["turns"] for c in (t["recovered"] or t["tool_calls"])]
    # Every call the benchmark saw (recovered from the text or native) ran, same tool and
    # arguments, in order.
    assert [(e["call"]["name"], e["call"]["arguments"]) for e in started] == [
        (c["name"], c["arguments"]) for c in expected
    ]
    # Each call's result is in the next request, answering the call's id.
    for turn, request in zip(run["turns"][:-1], server.requests[1:], strict=False):
        calls = turn["recovered"] or turn["tool_calls"]
        if not calls:
            continue
        assistant = [m for m in request["messages"] if m["role"] == "assistant"][-1]
        ids = [c["id"] for c in assistant.get("tool_calls") or []]
        assert [c["function"]["name"] for c in assistant["tool_calls"]] == [
            c["name"] for c in calls
        ]
        answered = {m["tool_call_id"] for m in request["messages"] if m["role"] == "tool"}
        assert set(ids) <= answered
