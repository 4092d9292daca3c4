"""docs/claude-code.md quotes what the REAL Claude Code handed its model: the session the docs
describe is run here (Veil installed, a task circling on a failing test), and the level-2 note
and the stop must appear in the docs exactly as Claude Code sent them to the model and
recorded them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.hosts.runners import ClaudeRunner
from tests.hosts.veil_setup import FAILING_TEST, install, trust_workspace
from veil.llm.scripted_server import ScriptedServer, ToolUse, Turn

DOCS = Path(__file__).resolve().parents[2] / "docs" / "claude-code.md"


def texts(value: Any) -> list[str]:
    """Every string in a request body."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in texts(v)]
    return []


def documented(heading: str) -> str:
    """The first code block after ``heading`` in the docs."""
    docs = DOCS.read_text()
    start = docs.index(heading)
    found = re.search(r"```[a-z]*\n(.*?)\n```", docs[start:], re.DOTALL)
    assert found is not None, f"no code block after {heading!r}"
    return found.group(1)


def test_the_documented_notes_are_what_claude_code_sent(
    run_claude: ClaudeRunner, agent_repo: Path, tmp_path: Path
) -> None:
    install("claude-code", agent_repo, run_claude.home, tmp_path / "state")
    trust_workspace(run_claude.home, agent_repo)
    bash = ToolUse("Bash", {"command": FAILING_TEST, "description": "run the tests"})
    script = [Turn("Running the tests.", (bash,)) for _ in range(14)] + [Turn("Giving up.")]
    with ScriptedServer(script) as server:
        run = run_claude("make test_total pass", cwd=agent_repo, base_url=server.url)
    assert run.returncode == 0, run.describe()
    seen = [t for r in server.model_requests for t in texts(r.body)]
    note = documented("## What the model receives at level 2")
    assert any(note in t for t in seen), "\n---\n".join(t for t in seen if "level 2" in t)
    stop = documented("## The stop")
    assert (run.result or {}).get("terminal_reason") == "hook_stopped", run.describe()
    assert len(run.hook_stops) == 1 and run.hook_stops[0].startswith(stop), run.hook_stops
