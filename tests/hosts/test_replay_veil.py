"""``veil replay`` on session files written by the REAL Claude Code and Codex: each agent runs a
short session (eight reads of ~1,800-token files, a re-read, a search) against the scripted model
server on 127.0.0.1, which reports every request's input tokens (its own count: a quarter of
the request's characters as compact JSON) and the agent writes them into its own file. Then
``veil replay FILE --json`` (a subprocess, as a person runs it) rebuilds every request: keep-all
must come within 5% of what the agent recorded, the agent's own rule and Veil get a row, and
under ``--window`` Veil keeps less than keep-all."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

from tests.hosts.runners import ClaudeRunner, CodexRunner
from tests.hosts.veil_setup import VEIL_BIN
from veil.llm.scripted_server import RecordedRequest, ScriptedServer, ToolUse, Turn

FILES = 8
WINDOW = 30_000
"""``--window``: a budget of 24,000 tokens, below the ~28,000 these sessions reach."""


def modules(repo: Path) -> list[Path]:
    """Files of about 7 KB each, every line unique."""
    rnd = random.Random(7)
    paths = []
    for i in range(FILES):
        lines = [
            f"def function_{i}_{j}(x):\n"
            f"    return x * {rnd.randint(1, 10**6)}  # {rnd.random():.12f}\n"
            for j in range(100)
        ]
        path = repo / f"module_{i}.py"
        path.write_text(f"MARKER = 'module-{i}-marker'\n" + "".join(lines))
        paths.append(path)
    return paths


def veil_replay(path: Path, cwd: Path) -> tuple[dict[str, Any], str]:
    """``veil replay PATH --json --window N`` and the same as text."""
    args = [str(VEIL_BIN), "replay", str(path), "--window", str(WINDOW)]
    done = subprocess.run(
        [*args, "--json"], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    text = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    assert text.returncode == 0, text.stderr
    return json.loads(done.stdout), text.stdout


def check(data: dict[str, Any], requests: list[RecordedRequest], agent: str) -> dict[str, Any]:
    (session,) = data["sessions"]
    assert session["agent"] == agent and session["corrupt_lines"] == 0
    # the file holds what the server reported for every request of the conversation
    reported = [r.usage.prompt_tokens for r in requests if r.usage is not None]
    assert session["requests"] == len(requests)
    assert session["recorded_tokens"] == sum(reported)
    # keep-all, rebuilt from the file, comes within 5% of it
    keep, host, veil = session["keep_all"], session["host"], session["veil"]
    assert abs(keep["tokens"] - sum(reported)) <= 0.05 * sum(reported), session
    assert 0.95 <= session["fit"] <= 1.05
    # the agent's own rule (never reached in so short a session) and Veil, which must evict
    assert host["tokens"] == keep["tokens"] and host["rule"].startswith("compaction at")
    assert veil["tokens"] < keep["tokens"] and veil["peak"] < keep["peak"]
    assert session["veil_budget"] == 24_000 and session["needs"] >= 1
    assert data["total"]["veil"]["tokens"] == veil["tokens"]
    return session


def script(read: Any, search: Any, files: list[Path]) -> list[Turn]:
    turns = [Turn(f"Reading {p.name}.", (read(p),)) for p in files]
    return [*turns, Turn("Again.", (read(files[0]),)), Turn("Searching.", (search,)), Turn("Done.")]


def test_veil_replay_rebuilds_a_real_claude_code_transcript(
    run_claude: ClaudeRunner, agent_repo: Path
) -> None:
    files = modules(agent_repo)
    turns = script(
        lambda p: ToolUse("Read", {"file_path": str(p)}),
        ToolUse("Bash", {"command": "grep -n function_3_7 module_3.py"}),
        files,
    )
    with ScriptedServer(turns, cache=True, pairing=True) as server:
        run = run_claude("read the modules", cwd=agent_repo, base_url=server.url, timeout=60)
    assert run.returncode == 0, run.describe()
    assert run.transcript is not None
    data, text = veil_replay(run.transcript, agent_repo)
    session = check(data, server.model_requests, "claude")
    assert session["model"] == "claude-opus-5-5" and session["cost_unit"] == "usd"
    assert session["id"] == run.session_id
    assert "Claude Code · claude-opus-5-5" in text and "\n  Veil " in text


def test_veil_replay_rebuilds_a_real_codex_rollout(
    run_codex: CodexRunner, agent_repo: Path
) -> None:
    files = modules(agent_repo)
    turns = script(
        lambda p: ToolUse("exec_command", {"cmd": f"cat {p.name}"}),
        ToolUse("exec_command", {"cmd": "grep -n function_3_7 module_3.py"}),
        files,
    )
    with ScriptedServer(turns, cache=True) as server:
        run = run_codex("read the modules", cwd=agent_repo, base_url=server.url, timeout=60)
    assert run.returncode == 0, run.describe()
    assert run.rollout is not None
    data, text = veil_replay(run.rollout, agent_repo)
    session = check(data, server.model_requests, "codex")
    assert session["model"] == "gpt-5.5" and session["cost_unit"] == "usd"
    assert "Codex · gpt-5.5" in text and "\n  Veil " in text


def test_veil_replay_of_a_session_run_through_veil_claude_says_it_was_changed(
    run_claude: ClaudeRunner, agent_repo: Path
) -> None:
    """A session through ``veil claude --window 36000``: what Claude Code recorded after the
    proxy's first batch is smaller than keep-all. The replay says where the conversation was
    changed on the way and checks the fit on the requests before it."""
    files = modules(agent_repo)
    turns = script(
        lambda p: ToolUse("Read", {"file_path": str(p)}),
        ToolUse("Bash", {"command": "grep -n function_3_7 module_3.py"}),
        files,
    )
    wrapper = [str(VEIL_BIN), "claude", "--window", "36000"]
    no_search = {"ENABLE_TOOL_SEARCH": "false"}
    with ScriptedServer(turns, cache=True, pairing=True) as server:
        run = run_claude("read the modules", cwd=agent_repo, base_url=server.url,
                         env=no_search, wrapper=wrapper, timeout=90)  # fmt: skip
    assert run.returncode == 0, run.describe()
    assert run.transcript is not None
    data, text = veil_replay(run.transcript, agent_repo)
    (session,) = data["sessions"]
    assert session["changed_on_the_way_at_request"] is not None, session
    assert 0.95 <= session["fit"] <= 1.05 and session["fit_requests"] >= 2
    assert "recorded less input than the one before" in text
    assert session["veil"]["tokens"] < session["keep_all"]["tokens"]
