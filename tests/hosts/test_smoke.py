"""The real Claude Code and Codex, offline, against the scripted model server: the harness
works end to end. Each test is one real run (about 2-4 s once the binaries are cached).

The server validates tool-call pairing, so every request the agents sent is also a well-formed
conversation by the APIs' own rules.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.hosts.runners import ClaudeRunner, CodexRunner
from veil.llm.scripted_server import ModelRequest, RecordedRequest, ScriptedServer, ToolUse, Turn


def summary(requests: list[RecordedRequest]) -> str:
    return "\n".join(
        f"{r.index} {r.method} {r.path} {r.kind} {r.status} {r.error or ''}" for r in requests
    )


def test_claude_code_runs_bash_and_gets_its_output(
    run_claude: ClaudeRunner, agent_repo: Path
) -> None:
    script = [
        Turn("Running it.", (ToolUse("Bash", {"command": "echo hello", "description": "Greet"}),)),
        Turn("It printed hello."),
    ]
    with ScriptedServer(script, pairing=True) as server:
        run = run_claude("Say hello with the shell.", cwd=agent_repo, base_url=server.url)
    requests = server.model_requests
    assert run.returncode == 0, run.describe()
    assert len(requests) == 2, summary(server.requests)
    assert "Bash" in requests[0].tool_names
    results = requests[1].tool_results
    assert [(r.call_id, r.text.strip(), r.is_error) for r in results] == [
        ("toolu_scripted_1_1", "hello", False)
    ]
    assert run.result is not None and run.result.get("subtype") == "success", run.describe()
    assert run.result.get("result") == "It printed hello."
    assert run.transcript is not None and run.transcript.is_file(), run.describe()
    assert "toolu_scripted_1_1" in run.transcript.read_text()


def test_codex_runs_its_shell_tool_and_gets_its_output(
    run_codex: CodexRunner, agent_repo: Path
) -> None:
    script = [
        Turn("Running it.", (ToolUse("exec_command", {"cmd": "echo hello"}),)),
        Turn("It printed hello."),
    ]
    with ScriptedServer(script, pairing=True) as server:
        run = run_codex("Say hello with the shell.", cwd=agent_repo, base_url=server.url)
    requests = server.model_requests
    assert run.returncode == 0, run.describe()
    assert len(requests) == 2, summary(server.requests)
    assert {"exec_command", "apply_patch"} <= set(requests[0].tool_names)
    results = requests[1].tool_results
    assert [r.call_id for r in results] == ["call_scripted_1_1"], results
    assert "hello" in results[0].text
    commands = run.items("command_execution")
    assert [(c["exit_code"], c["aggregated_output"].strip()) for c in commands] == [(0, "hello")]
    assert [m["text"] for m in run.items("agent_message")][-1] == "It printed hello."
    assert run.rollout is not None and "call_scripted_1_1" in run.rollout.read_text()


def test_claude_code_reads_a_file(run_claude: ClaudeRunner, agent_repo: Path) -> None:
    notes = agent_repo / "notes.txt"
    notes.write_text("the answer is 42\n")
    script = [
        Turn("", (ToolUse("Read", {"file_path": str(notes)}),)),
        Turn("The file says 42."),
    ]
    with ScriptedServer(script, pairing=True) as server:
        run = run_claude("What does notes.txt say?", cwd=agent_repo, base_url=server.url)
    requests = server.model_requests
    assert run.returncode == 0, run.describe()
    assert len(requests) == 2, summary(server.requests)
    (result,) = requests[1].tool_results
    assert result.call_id == "toolu_scripted_1_1" and not result.is_error
    assert "the answer is 42" in result.text


def test_claude_code_offers_an_allowed_project_mcp_server(
    run_claude: ClaudeRunner, agent_repo: Path
) -> None:
    """A project ``.mcp.json`` server (``veil mcp``) allowed with ``--allowedTools mcp__veil``:
    its tools are in the request's ``tools`` and a call to one comes back as a result, not a
    permission refusal.

    Claude Code does not wait for MCP servers in ``-p`` mode: a request sent while the server
    is still starting offers ``WaitForMcpServers`` instead, so the scripted model calls that
    first when it has to. (By default Claude Code also defers MCP tools behind ToolSearch;
    ``ENABLE_TOOL_SEARCH=false`` lists them up front.)"""
    veil = [sys.executable, "-m", "veil.cli.main"]
    server_config = {
        "command": veil[0],
        "args": [*veil[1:], "mcp", "--scope", "smoke", "--db", str(agent_repo / "memory.db")],
    }
    (agent_repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"veil": server_config}}))

    def step(request: ModelRequest) -> Turn:
        if any(c.name == "mcp__veil__recall" for c in request.tool_calls()):
            return Turn("Nothing is remembered yet.")
        if "mcp__veil__recall" in request.tool_names():
            return Turn("", (ToolUse("mcp__veil__recall", {"query": "favourite editor"}),))
        return Turn("", (ToolUse("WaitForMcpServers", {"servers": ["veil"]}),))

    with ScriptedServer([step, step, step], pairing=True) as server:
        run = run_claude(
            "What is my favourite editor?",
            cwd=agent_repo,
            base_url=server.url,
            allowed_tools=("Bash", "Read", "Edit", "Write", "mcp__veil"),
            env={"ENABLE_TOOL_SEARCH": "false"},
        )
    requests = server.model_requests
    assert run.returncode == 0, run.describe()
    calling = [r for r in requests if r.reply and r.reply.tool_calls]
    recall = [r for r in calling if r.reply and r.reply.tool_calls[0].name == "mcp__veil__recall"]
    assert len(recall) == 1, summary(server.requests)
    assert {"mcp__veil__recall", "mcp__veil__remember"} <= set(recall[0].tool_names)
    answered = requests[requests.index(recall[0]) + 1]
    (result,) = [
        r
        for r in answered.tool_results
        if r.call_id.startswith(f"toolu_scripted_{recall[0].turn}_")
    ]
    assert not result.is_error, result.text
    assert "permission" not in result.text.lower(), result.text
    assert json.loads(result.text)["facts"] == []
