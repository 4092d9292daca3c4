"""Every request is a valid one that fits (issue 24), through `veil -p` as a user runs it against
model servers on 127.0.0.1 that answer each provider's real errors:

- a context overflow (OpenAI/compatible `context_length_exceeded`, Anthropic `prompt is too long`,
  llama.cpp's `exceed_context_size_error`) is recovered once: Veil evicts to the limit the error
  states and the retried request fits it — the server refuses *every* request over its limit;
  a second overflow ends the run with a message naming --window;
- Ctrl-C while a command runs records a result for the pending call, and `veil -c` against a
  server that enforces OpenAI's or Anthropic's pairing rule (a result for every call) works."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.agent.test_cli_use import GIT_ENV, repo
from veil.llm.scripted_requests import OverflowStyle
from veil.llm.scripted_server import ScriptedServer

__all__ = ["repo"]

VEIL = [sys.executable, "-m", "veil.cli.main"]


def model_env(api: str, url: str) -> tuple[str, dict[str, str]]:
    """The --model spec and environment that point veil at the server."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("VEIL_", "ANTHROPIC_"))}
    base |= GIT_ENV
    if api == "anthropic":
        return "anthropic:claude-test", base | {
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "test-key",
        }
    return "openai-compatible:test-model", base | {
        "VEIL_BASE_URL": f"{url}/v1",
        "VEIL_API_KEY": "test-key",
    }


def read_files(repo: Path, count: int) -> list[dict[str, Any]]:
    for n in range(count):
        body = "".join(f"def f{n}_{i}(value):\n    return value + {i}\n" for i in range(160))
        (repo / f"m{n}.py").write_text(body)
    turns = [
        {"content": "", "tool_calls": [{"name": "read", "arguments": {"path": f"m{n}.py"}}]}
        for n in range(count)
    ]
    return [*turns, {"content": "Read them all."}]


def run_veil(
    repo: Path, model: str, env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*VEIL, "-p", "read every module", "--model", model, "--approve", "auto", *args],
        cwd=repo, env=env, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("api", "style"),
    [("openai", "native"), ("anthropic", "native"), ("openai", "llama.cpp"), ("openai", "ollama")],
    ids=["openai", "anthropic", "llama.cpp", "ollama"],
)
def test_an_overflow_is_recovered_once_and_the_retry_fits(
    repo: Path, api: str, style: OverflowStyle
) -> None:
    limit = 9_000
    with ScriptedServer(read_files(repo, 8), context_limit=limit, overflow=style) as server:
        model, env = model_env(api, server.url)
        done = run_veil(repo, model, env, "--window", "60000")
    assert done.returncode == 0, done.stderr
    kinds = [r.kind for r in server.requests]
    assert kinds.count("rejected") == 1, kinds  # calibrated by the error: no second overflow
    rejected = kinds.index("rejected")
    assert kinds[rejected + 1] == "script"  # the retry fitted the limit the error stated
    assert all(r.usage is None or r.usage.prompt_tokens <= limit for r in server.model_requests)
    assert "too long" in done.stderr


def test_a_second_overflow_ends_the_run_naming_the_window(repo: Path) -> None:
    with ScriptedServer(read_files(repo, 3), context_limit=900) as server:  # < the tool schemas
        model, env = model_env("openai", server.url)
        done = run_veil(repo, model, env, "--window", "60000")
    assert done.returncode == 1
    assert "--window" in done.stderr and "Traceback" not in done.stderr
    assert [r.kind for r in server.requests].count("rejected") == 2


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_ctrl_c_during_a_command_then_continue(repo: Path, api: str) -> None:
    marker = repo / "started"
    first = [
        {"content": "", "tool_calls": [
            {"name": "bash", "arguments": {"command": f"touch {marker} && sleep 60"}},
        ]},
        {"content": "not reached"},
    ]  # fmt: skip
    with ScriptedServer(first, pairing=True) as server:
        model, env = model_env(api, server.url)
        proc = subprocess.Popen(
            [*VEIL, "-p", "run the slow thing", "--model", model, "--approve", "auto"],
            cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)  # what Ctrl-C in a terminal does
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
    later = [{"content": "Resumed."}]
    with ScriptedServer(later, pairing=True) as server:
        model, env = model_env(api, server.url)
        done = subprocess.run(
            [*VEIL, "-c", "-p", "go on", "--model", model, "--approve", "auto"],
            cwd=repo, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [r.kind for r in server.requests] == ["script"]  # accepted: a valid conversation
    sent = json.dumps(server.requests[0].body)
    assert "interrupted" in sent and "not reached" not in sent


def test_budgets_are_in_the_providers_tokens_once_it_reports_usage(repo: Path) -> None:
    """A provider whose tokens are denser than chars/4 (code, JSON): after its first response
    every request stays within the window as the provider counts it."""
    window = 12_000

    def dense(text: str) -> int:
        return -(-len(text) * 10 // 25)  # 2.5 characters a token

    trace = repo / "trace.jsonl"
    with ScriptedServer(read_files(repo, 10), counter=dense) as server:
        model, env = model_env("openai", server.url)
        done = run_veil(repo, model, env, "--window", str(window), "--trace", str(trace))
    assert done.returncode == 0, done.stderr
    counted = [r.usage.prompt_tokens for r in server.model_requests if r.usage is not None]
    assert len(counted) == 11
    assert all(tokens <= window for tokens in counted[1:]), counted
    ratios = [json.loads(line)["veil"]["ratio"] for line in trace.read_text().splitlines()]
    assert ratios[-1] > 1.4  # calibrated: the provider's tokens per estimated token
    # the budget really binds: without the calibration the conversation would not fit
    assert sum(len((repo / f"m{n}.py").read_text()) for n in range(10)) / 2.5 > window
