"""One convergence feedback text (:mod:`veil.convergence.feedback`): for the same record, what
``veil``'s harness puts in its model's request is what Claude Code's and Codex's hooks give
theirs — at level 1, at level 2, and the stop at level 3.

A real harness run (the loop, a scripted model, the bash tool) circles on one failure in a git
project; before each of its requests the hooks are asked, through the ``hook`` tool's service
over the same project store, what they would tell an agent starting on the same task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import git_project
from veil.agent.events import AgentEnd
from veil.agent.harness import VeilHarness
from veil.agent.loop import AgentLoopConfig, run_agent
from veil.agent.project import project_scope, veil_dir
from veil.agent.tool import ToolContext
from veil.agent.tools import coding_tools
from veil.clients import hook_service
from veil.clients.hook_service import Client, HookService
from veil.context import ContextConfig
from veil.convergence.feedback import STOPPED
from veil.embed import default_embedder
from veil.llm.messages import Message, UserMessage
from veil.llm.scripted import ScriptedProvider

TASK = "make test_total pass"
CLIENTS: tuple[Client, ...] = ("claude-code", "codex")


def failing(n: int) -> str:
    """A different command each time, failing the same way: circling, and no stuck pattern."""
    return f"echo 'FAILED test_total: assert 4 == 5'; exit 1  # try {n}"


def ask(service: HookService, client: Client, event: str, **fields: Any) -> dict[str, Any]:
    text = service.answer({"client": client, "event": event, "hook_event_name": event, **fields})
    return json.loads(text) if text else {}


def context(answer: dict[str, Any]) -> str:
    return str(answer.get("hookSpecificOutput", {}).get("additionalContext", ""))


def test_the_harness_and_both_hooks_give_the_same_feedback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hook_service, "DEADLINES_S", {})  # a loaded machine: no deadline
    root = git_project(tmp_path / "proj")
    harness = VeilHarness(
        veil_dir(root) / "context.db",
        scope=project_scope(root),
        embedder=default_embedder(),
        config=ContextConfig(window_tokens=50_000),
    )
    calls = [{"name": "bash", "arguments": {"command": failing(n)}} for n in range(14)]
    turns = [{"content": "", "tool_calls": [c]} for c in calls] + [{"content": "Giving up."}]
    tools = [*coding_tools(), *harness.tools()]
    harness.use_tools(tools, system_prompt="test")
    hooks = harness.hooks()
    service = HookService(env={}, deadline_s=60.0)
    where = {"cwd": str(root), "transcript_path": str(root / "transcript.jsonl")}
    seen: list[tuple[int, Client, str, str, str]] = []
    """(level, client, what the hook said, the harness's feedback, the harness's tail)."""

    def transform(messages: list[Message]) -> list[Message]:
        """The harness's turn boundary, then the hooks asked about the same record (a new
        session of each agent starting on the same task)."""
        out = harness.transform_context(messages)
        assert harness.rendered is not None
        tail = "".join(p.text for p in harness.rendered.parts if p.kind == "tail")
        for client in CLIENTS:
            session = f"{client}-{len(messages)}"
            said = context(ask(service, client, "UserPromptSubmit", session_id=session,
                               prompt=TASK, **where))  # fmt: skip
            seen.append((harness.level, client, said, harness.outcomes.note(), tail))
        return out

    config = AgentLoopConfig(
        provider=ScriptedProvider({"turns": turns}),
        tools=tools,
        system_prompt="test",
        tool_context=ToolContext(cwd=root),
        **{**hooks, "transform_context": transform},
    )
    messages: list[Message] = [UserMessage(TASK)]
    harness.start(TASK, messages)
    try:
        end = list(run_agent(config, messages))[-1]
        assert {level for level, *_ in seen} == {0, 1, 2}
        for level, client, said, note, tail in seen:
            if level == 0:  # nothing for the harness's model; for a new session, the record
                assert note == "" and (said == "" or "convergence level 0 of 3" in said)
            else:
                assert said == note and note in tail, (level, client, said, tail)
        # Level 3: the harness stops its run; a hook session on the task is stopped with the
        # same text (Claude Code: the denial and the stop reason; Codex: the denial).
        assert isinstance(end, AgentEnd) and end.reason == "stopped" and harness.level == 3
        stop = end.message
        assert stop.startswith(STOPPED)
        for client in CLIENTS:
            session = f"{client}-1"  # its goal is the task (its first prompt)
            bash = {"tool_name": "Bash", "tool_input": {"command": failing(99)}}
            answer = ask(service, client, "PreToolUse", session_id=session, **bash, **where)
            specific = answer["hookSpecificOutput"]
            assert specific["permissionDecision"] == "deny"
            assert specific["permissionDecisionReason"] == stop, client
            if client == "claude-code":
                assert answer["continue"] is False and answer["stopReason"] == stop
    finally:
        service.close()
        harness.engine.close()
        harness.store.close()
