"""Signals the harness feeds from what the agent does, through the real loop and ``VeilHarness``
(issue 14): cognitive weight from checks that pass or fail, procedural outcome tracking from
facts the agent used, and the monologue stuck pattern. Before, the first two were called only
by tests and the third was never fed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from veil.agent.events import AgentEvent, LevelChanged
from veil.agent.harness import VeilHarness
from veil.agent.loop import AgentLoopConfig, run_agent
from veil.agent.tool import ToolContext
from veil.agent.tools import coding_tools
from veil.context import ContextConfig
from veil.llm.messages import Message, UserMessage
from veil.llm.scripted import ScriptedProvider
from veil.memory import Memory
from veil.tape.sqlite import SQLiteStore
from veil.testing import FakeClock, HashEmbedder, ScriptedModel

TEST_FILE = """import unittest

from calc import add


class T(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)
"""
CHECK = "python -m unittest -q"


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def run(
    tmp_path: Path,
    turns: list[dict[str, Any]],
    task: str,
    *,
    memory: Memory | None = None,
    follow_up: Callable[[], list[UserMessage]] | None = None,
) -> tuple[VeilHarness, list[AgentEvent]]:
    clock = FakeClock()
    store = SQLiteStore(tmp_path / "context.db", embedder=HashEmbedder(), clock=clock)
    harness = VeilHarness(
        store=store,
        scope="project:signals",
        memory=memory,
        embedder=HashEmbedder(),
        clock=clock,
        config=ContextConfig(window_tokens=50_000),
    )
    tools = [*coding_tools(), *harness.tools()]
    harness.use_tools(tools, system_prompt="test")
    config = AgentLoopConfig(
        provider=ScriptedProvider({"turns": turns}),
        tools=tools,
        system_prompt="test",
        tool_context=ToolContext(cwd=tmp_path),
        follow_up=follow_up,
        **harness.hooks(),
    )
    messages: list[Message] = [UserMessage(task)]
    harness.start(task, messages)
    return harness, list(run_agent(config, messages))


def fix_turns() -> list[dict[str, Any]]:
    return [
        {"content": "", "tool_calls": [call("read", path="calc.py")]},
        {"content": "", "tool_calls": [call("bash", command=CHECK)]},
        {
            "content": "",
            "tool_calls": [
                call("edit", path="calc.py", old_text="return a - b", new_text="return a + b")
            ],
        },
        {"content": "", "tool_calls": [call("read", path="calc.py")]},
        {"content": "", "tool_calls": [call("bash", command=CHECK)]},
        {"content": "Fixed."},
    ]


def repo(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "test_calc.py").write_text(TEST_FILE)


def test_checks_move_the_cognitive_weight_of_the_items_used_since_the_last_check(
    tmp_path: Path,
) -> None:
    repo(tmp_path)
    harness, _ = run(tmp_path, fix_turns(), "make test_calc pass")
    engine = harness.engine
    first_read, failed_run, edit, second_read, passed_run = (
        engine.item(f"call_{n}_1") for n in range(1, 6)
    )
    # The failing run blames what was used before it; the passing run credits what came after.
    assert first_read.cognitive_weight == -0.25
    assert edit.cognitive_weight == 0.25 and second_read.cognitive_weight == 0.25
    # A check's own result is not "used" by that check, nor later unless it is touched again.
    assert failed_run.cognitive_weight == 0.0 and passed_run.cognitive_weight == 0.0
    scores = engine.scores()
    assert scores[second_read.id] > scores[first_read.id]
    outcomes = [a.outcome for a in harness.attempts.attempts()]
    assert outcomes == ["fail", "unknown", "pass"]


def test_a_procedural_fact_the_agent_used_records_its_outcome(tmp_path: Path) -> None:
    repo(tmp_path)
    clock = FakeClock()
    memory = Memory(
        tmp_path / "memory.db",
        complete=ScriptedModel(
            [
                {
                    "facts": [
                        {
                            "subject": "project",
                            "relation": "uses_tool",
                            "object": "unittest",
                            "statement": "The project's tests run with unittest.",
                            "claimant": "user",
                        }
                    ],
                    "episodes": [],
                }
            ]
        ),
        embedder=HashEmbedder(),
        clock=clock,
    )
    memory.remember("We run the tests with unittest.", user_id="project:signals")
    (fact,) = memory.facts("project:signals")
    assert (fact.times_used, fact.last_outcome) == (0, None)
    run(tmp_path, fix_turns(), "make the unittest suite pass", memory=memory)
    (after,) = memory.facts("project:signals")
    # Used in both checks: the failing run, then the passing one.
    assert (after.times_used, after.last_outcome) == (2, True)
    memory.close()


def test_the_same_message_three_times_is_the_monologue_pattern(tmp_path: Path) -> None:
    nudges = iter([[UserMessage("go on")], [UserMessage("go on")], []])
    stuck = "I am not sure how to proceed."
    harness, events = run(
        tmp_path,
        [{"content": stuck}, {"content": stuck}, {"content": stuck}],
        "tidy the repo",
        follow_up=lambda: next(nudges),
    )
    changes = [e for e in events if isinstance(e, LevelChanged)]
    assert [(c.previous, c.level) for c in changes] == [(0, 2)]
    assert any("monologue" in r for r in changes[0].reasons)
    assert harness.attempts.assess().stuck_patterns == ("monologue",)


def test_a_turn_naming_a_symbol_a_grep_printed_touches_that_result(tmp_path: Path) -> None:
    """Through the real loop: the harness persists in the background while the model thinks
    (that is where new results' names are scanned), and the next assistant turn that names a
    symbol an earlier grep printed touches the grep's result — not an unrelated one."""
    (tmp_path / "lexer.py").write_text("def resolve_token_kind(tok):\n    return tok\n")
    (tmp_path / "notes.txt").write_text("nothing here\n")
    turns = [
        {"content": "", "tool_calls": [call("grep", pattern="resolve_token", path=".")]},
        {"content": "", "tool_calls": [call("read", path="notes.txt")]},
        {
            "content": "The bug is in resolve_token_kind; reading it next.",
            "tool_calls": [call("read", path="lexer.py")],
        },
        {"content": "Found it."},
    ]
    harness, _ = run(tmp_path, turns, "find the token bug")
    engine = harness.engine
    grep_item, notes_item = engine.item("call_1_1"), engine.item("call_2_1")
    # captured once, then touched by the turn that names the symbol; the read of lexer.py
    # names no symbol of the grep's output but its path, which the grep printed too
    assert grep_item.access_count >= 2, grep_item
    assert notes_item.access_count == 1, notes_item
