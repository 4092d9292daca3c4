"""veil.integrations.openai_agents inside the real OpenAI Agents SDK, its model replaced by the
SDK's own scripted test model (agents.testing.ScriptedModel): no network, no key."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.items import TResponseInputItem
from agents.memory import Session
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from veil.integrations.openai_agents import VeilSession, memory_tools
from veil.memory import Memory
from veil.testing import HashEmbedder
from veil.testing import ScriptedModel as ScriptedExtraction

POINTER = re.compile(r"veil://(?:warm|cold)/ci_[0-9a-f]+")
T = TypeVar("T")


@pytest.fixture(autouse=True)
def _no_tracing() -> None:
    set_tracing_disabled(True)  # the SDK would otherwise export traces over the network


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def log_text(n: int) -> str:
    return f"log {n}: " + " ".join(f"worker-{n} step {i} ok" for i in range(700))


@function_tool
def read_log(n: int) -> str:
    """Read one worker's log.

    Args:
        n: the worker's number
    """
    return log_text(n)


def session(tmp_path: Path, session_id: str = "chat-1", window: int = 16_000) -> VeilSession:
    return VeilSession(session_id, db=tmp_path / "context.db", window_tokens=window,
                       embedder=HashEmbedder())  # fmt: skip


def outputs(items: list[Any]) -> list[str]:
    kept = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
    return [str(i["output"]) for i in kept]


def notes(items: list[Any]) -> list[str]:
    """Veil's notes: collapsed runs of steps out of the prompt, the manifest at the end."""
    kept = [i for i in items if isinstance(i, dict) and i.get("role") == "system"]
    return [str(i["content"]) for i in kept]


def test_it_is_a_session_and_its_items_survive_a_restart(tmp_path: Path) -> None:
    first = session(tmp_path)
    assert isinstance(first, Session)
    items = cast(list[TResponseInputItem], [
        {"role": "user", "content": "hello"},
        {"type": "function_call", "call_id": "c1", "name": "read_log", "arguments": '{"n": 1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "short"},
        {"role": "assistant", "content": "hi"},
    ])  # fmt: skip
    run(first.add_items(items))
    assert run(first.get_items()) == items
    assert run(first.get_items(limit=2)) == items[-2:]
    assert run(first.pop_item()) == items[-1]
    first.close()

    second = session(tmp_path)  # a new process on the same store
    assert run(second.get_items()) == items[:3]
    other = session(tmp_path, "chat-2")  # another session of the same store sees nothing
    assert run(other.get_items()) == [] and run(other.pop_item()) is None
    run(second.clear_session())
    assert run(second.get_items()) == []
    assert run(session(tmp_path).get_items()) == []
    run(second.add_items(items[:1]))
    assert run(session(tmp_path).get_items()) == items[:1]


def test_runs_get_an_evicted_history_and_a_stub_expands(tmp_path: Path) -> None:
    veil = session(tmp_path)
    runs = 12
    model = ScriptedModel()
    agent = Agent(name="helper", model=model, tools=[read_log, veil.expand_tool()])
    for n in range(1, runs + 1):
        model.extend([[function_call("read_log", {"n": n}, call_id=f"r{n}")],
                      [assistant_message(f"read {n}")]])  # fmt: skip
        run(Runner.run(agent, f"Read log {n}.", session=veil))

    keep_all = sum(len(log_text(n)) for n in range(1, runs + 1))
    sizes = [len(json.dumps(call.input, default=str)) for call in model.calls]
    # a run sees what the session returned plus its own new output: a few logs in full, the
    # rest as stubs, so a run adds a stub and its two messages, not a log
    full = [sum(o.startswith("log ") for o in outputs(call.input)) for call in model.calls]
    assert max(full) <= 4 and full[-1] >= 1
    assert max(sizes) < 5 * len(log_text(1)) < keep_all / 2
    # evictions come in batches (each changes what the provider cached), not at every run
    assert 0 < veil.window.engine.batches <= runs // 2
    last_input = model.calls[-2].input  # the last run's first model call: the session's history
    # whole steps out of the prompt collapse into one note per run of them, as in `veil`
    collapsed = [n for n in notes(last_input) if "earlier step" in n]
    assert collapsed and all(POINTER.search(n) for n in collapsed)
    stubs = [o for o in outputs(last_input) if POINTER.search(o)]
    assert all(s.startswith("[veil: read_log ") and "veil_expand" in s for s in stubs)
    assert sum(o.startswith("log ") for o in outputs(last_input)) <= 4
    # the session stores everything as given; only what it returns is stubbed
    assert outputs(veil.raw_items()) == [log_text(n) for n in range(1, runs + 1)]

    # the model follows a stub's pointer: veil_expand returns the full log
    wanted: list[str] = []

    def expand(call: ModelCall) -> list[Any]:
        texts = [*outputs(call.input), *notes(call.input)]
        found = next(POINTER.search(t) for t in texts if POINTER.search(t))
        assert found is not None
        wanted.append(veil.window.engine.resolve_pointer(found.group(0)).content)
        return [function_call("veil_expand", {"pointer": found.group(0)}, call_id="x1")]

    model.extend([ModelStep.respond(expand), [assistant_message("that log is fine")]])
    done = run(Runner.run(agent, "Show me that log again.", session=veil))
    assert done.final_output == "that log is fine"
    after = outputs(model.calls[-1].input)
    assert after.count(wanted[0]) == 1 and after[-1] == wanted[0]


def test_the_input_filter_shrinks_every_model_call_of_one_run(tmp_path: Path) -> None:
    veil = session(tmp_path)
    calls = 15
    model = ScriptedModel(
        [[function_call("read_log", {"n": n}, call_id=f"r{n}")] for n in range(1, calls + 1)]
        + [[assistant_message("done")]]
    )
    agent = Agent(name="helper", model=model, tools=[read_log, veil.expand_tool()])
    config = RunConfig(call_model_input_filter=veil.model_input_filter)
    done = run(Runner.run(agent, "Read every log.", session=veil, run_config=config, max_turns=20))
    assert done.final_output == "done"
    sizes = [len(json.dumps(call.input, default=str)) for call in model.calls]
    assert sizes[-1] < 4 * len(log_text(1)) < calls * len(log_text(1)) / 3

    # the next run reads the session: no output is captured twice
    def results() -> int:
        return sum(1 for i in veil.window.engine.items() if i.tool_call_id)

    before = results()
    assert before == calls
    model.extend([[assistant_message("ok")]])
    run(Runner.run(agent, "Anything else?", session=veil, run_config=config))
    assert results() == before


def test_a_bad_pointer_is_an_answer_the_model_reads(tmp_path: Path) -> None:
    veil = session(tmp_path)
    bad = function_call("veil_expand", {"pointer": "veil://warm/ci_0"}, call_id="x")
    model = ScriptedModel([[bad], [assistant_message("ok")]])
    agent = Agent(name="helper", model=model, tools=[veil.expand_tool()])
    run(Runner.run(agent, "go", session=veil))
    answer = outputs(model.calls[-1].input)[-1]
    assert answer.startswith("veil_expand: ") and "names no item" in answer


def test_memory_tools_with_the_sdk(tmp_path: Path) -> None:
    extraction = {
        "facts": [{"subject": "user", "relation": "located_at", "object": "Lisbon",
                   "statement": "The user lives in Lisbon.", "volatility": "slow",
                   "claimant": "user", "supersedes": None}],
        "episodes": [],
    }  # fmt: skip
    memory = Memory(tmp_path / "memory.db", complete=ScriptedExtraction([extraction]),
                    embedder=HashEmbedder())  # fmt: skip
    tools = memory_tools(memory, user_id="u1")
    schemas = {t.name: t.params_json_schema for t in tools}
    assert set(schemas) == {"veil_recall", "veil_remember"}
    for schema in schemas.values():
        for prop in schema["properties"].values():
            assert len(prop.get("description", "")) > 10
    said = {"text": "The user said they live in Lisbon."}
    asked = {"query": "where does the user live", "token_budget": 300}
    model = ScriptedModel([
        [function_call("veil_remember", said, call_id="m")],
        [function_call("veil_recall", asked, call_id="q")],
        [assistant_message("Lisbon")],
    ])  # fmt: skip
    agent = Agent(name="helper", model=model, tools=[*tools])
    assert run(Runner.run(agent, "Remember where I live.")).final_output == "Lisbon"
    answers = outputs(model.calls[-1].input)
    assert answers[0] == "remembered: 1 fact"
    assert "The user lives in Lisbon." in answers[1]
    assert [f.statement for f in memory.facts("u1")] == ["The user lives in Lisbon."]
    memory.close()


def test_arguments_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="session_id must not be empty"):
        VeilSession(" ", db=tmp_path / "c.db", embedder=HashEmbedder())
    with pytest.raises(ValueError, match="window_tokens must be positive"):
        VeilSession("s", db=tmp_path / "c.db", window_tokens=0, embedder=HashEmbedder())
