"""One renderer for every surface: the same conversation, run through `veil`'s harness (the real
agent loop), pydantic-ai (a real Agent with the history processor) and the OpenAI Agents SDK
(a real Runner with the session's input filter), is shown to the model as the same texts —
each request, message by message, pointers aside (item ids are random).

Table-driven: each scenario is a script of tool calls; ``fetch`` is a tool none of the
surfaces knows anything about, so all three describe its results alike. pydantic-ai renders
without collapsing steps and without the manifest (its history processor's output becomes the
run's history, so nothing is dropped or added there): its tool results are compared with the
harness's wherever the harness shows them in place."""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agents import Agent as SdkAgent
from agents import RunConfig, Runner, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel as SdkScripted
from agents.testing import assistant_message, function_call
from pydantic_ai import Agent as PaiAgent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from veil.agent.harness import VeilHarness
from veil.agent.loop import AgentLoopConfig, run_agent
from veil.agent.tool import ToolContext, ToolResult
from veil.context import ContextConfig
from veil.integrations.openai_agents import VeilSession
from veil.integrations.pydantic_ai import veil_history
from veil.llm.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from veil.llm.scripted import ScriptedProvider
from veil.testing import FakeClock, HashEmbedder

POINTER_ID = re.compile(r"\b(ci|cx)_[0-9a-f]+")
TASK = "Fetch the pages and tell me what changed."
WINDOW = 4_000


def page(n: int) -> str:
    return f"page {n}: " + " ".join(f"section-{n}-{i} unchanged" for i in range(260))


@dataclass(frozen=True)
class Scenario:
    name: str
    calls: tuple[tuple[str, dict[str, Any]], ...]
    """Each model turn's one call: ``fetch`` with its arguments, or ``veil_expand``."""


SCENARIOS = (
    Scenario("pressure", tuple(("fetch", {"url": f"https://x/{n}"}) for n in range(1, 9))),
    Scenario(
        "expand by call id",
        (
            *(("fetch", {"url": f"https://x/{n}"}) for n in range(1, 7)),
            ("veil_expand", {"pointer": "call_1_1"}),
            ("fetch", {"url": "https://x/7"}),
        ),
    ),
    Scenario(
        "expand twice",
        (
            *(("fetch", {"url": f"https://x/{n}"}) for n in range(1, 6)),
            ("veil_expand", {"pointer": "call_2_1"}),
            ("veil_expand", {"pointer": "call_2_1"}),
            ("fetch", {"url": "https://x/6"}),
        ),
    ),
)


def fetch_output(arguments: dict[str, Any]) -> str:
    return page(int(str(arguments["url"]).rsplit("/", 1)[1]))


def normal(text: str) -> str:
    return POINTER_ID.sub("ID", text)


Seen = list[tuple[str, str, str]]
"""One request as (role, call id of a result, text) per message; assistant messages by their
text."""


# ---- veil's harness, through the real loop --------------------------------------------------


FETCH = ToolSpec(
    "fetch",
    "Fetch a page.",
    {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
)


@dataclass(frozen=True)
class Fetch:
    spec: ToolSpec = FETCH
    mutates: bool = False
    parallel_safe: bool = False

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult(fetch_output(arguments))


def through_harness(tmp_path: Path, scenario: Scenario) -> tuple[list[Seen], int]:
    turns = [
        {"content": "", "tool_calls": [{"name": n, "arguments": a}], "usage": {"output_tokens": 1}}
        for n, a in scenario.calls
    ] + [{"content": "Done.", "usage": {"output_tokens": 1}}]
    provider = ScriptedProvider({"turns": turns})
    clock = FakeClock()
    harness = VeilHarness(
        tmp_path / "harness.db",
        scope="table",
        session_id="s",
        embedder=HashEmbedder(),
        clock=clock,
        config=ContextConfig(window_tokens=WINDOW, reserve_tokens=800),
    )
    tools = [Fetch(), *(t for t in harness.tools() if t.spec.name == "veil_expand")]
    harness.use_tools(tools, system_prompt="")
    messages: list[Message] = [UserMessage(TASK)]
    harness.start(TASK, [])
    config = AgentLoopConfig(
        provider, tools, "", ToolContext(cwd=tmp_path), max_turns=20, **harness.hooks()
    )
    for _ in run_agent(config, messages):
        pass
    seen: list[Seen] = []
    for request in provider.requests:
        one: Seen = []
        for m in request.messages:
            if isinstance(m, ToolResultMessage):
                one.append(("tool", m.tool_call_id, normal(m.content)))
            elif isinstance(m, AssistantMessage):
                one.append(("assistant", "", normal(m.content)))
            elif isinstance(m, SystemMessage):
                one.append(("system", "", normal(m.content)))
            else:
                one.append(("user", "", normal(m.content)))
        seen.append(one)
    return seen, harness.tool_tokens


# ---- the OpenAI Agents SDK, a real Runner ---------------------------------------------------


def through_agents_sdk(tmp_path: Path, scenario: Scenario, fixed: int) -> list[Seen]:
    set_tracing_disabled(True)
    session = VeilSession(
        "s",
        db=tmp_path / "agents.db",
        embedder=HashEmbedder(),
        clock=FakeClock(),
        config=ContextConfig(window_tokens=WINDOW, reserve_tokens=800),
        fixed_overhead_tokens=fixed,
    )

    @function_tool
    def fetch(url: str) -> str:
        """Fetch a page.

        Args:
            url: the address
        """
        return fetch_output({"url": url})

    steps = [
        [function_call(n, a, call_id=f"call_{k}_1")] for k, (n, a) in enumerate(scenario.calls, 1)
    ]
    model = SdkScripted([*steps, [assistant_message("Done.")]])
    agent = SdkAgent(name="t", model=model, tools=[fetch, session.expand_tool()])
    config = RunConfig(call_model_input_filter=session.model_input_filter)
    asyncio.run(Runner.run(agent, TASK, session=session, run_config=config, max_turns=20))
    seen: list[Seen] = []
    for call in model.calls:
        one: Seen = []
        for item in call.input:
            assert isinstance(item, dict)
            if item.get("type") == "function_call_output":
                one.append(("tool", str(item["call_id"]), normal(str(item["output"]))))
            elif item.get("type") == "function_call":
                if not one or one[-1][0] != "assistant":
                    one.append(("assistant", "", ""))
            elif item.get("role") == "assistant":
                content = item["content"]
                text = content if isinstance(content, str) else content[0]["text"]
                one.append(("assistant", "", normal(str(text))))
            else:
                one.append((str(item["role"]), "", normal(str(item["content"]))))
        seen.append(one)
    session.close()
    return seen


# ---- pydantic-ai, a real Agent ----------------------------------------------------------------


def through_pydantic_ai(tmp_path: Path, scenario: Scenario, fixed: int) -> list[Seen]:
    processor = veil_history(
        tmp_path / "pai.db",
        session_id="s",
        scope="table",
        embedder=HashEmbedder(),
        config=ContextConfig(window_tokens=WINDOW, reserve_tokens=800),
        fixed_overhead_tokens=fixed,
    )
    seen: list[Seen] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        one: Seen = []
        for message in messages:
            if isinstance(message, ModelResponse):
                text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
                one.append(("assistant", "", normal(text)))
                continue
            assert isinstance(message, ModelRequest)
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    one.append(("tool", part.tool_call_id, normal(str(part.content))))
                elif isinstance(part, UserPromptPart):
                    one.append(("user", "", normal(str(part.content))))
        seen.append(one)
        k = len(seen)
        if k > len(scenario.calls):
            return ModelResponse(parts=[TextPart("Done.")])
        name, arguments = scenario.calls[k - 1]
        return ModelResponse(parts=[ToolCallPart(name, arguments, tool_call_id=f"call_{k}_1")])

    agent = PaiAgent(
        FunctionModel(model),
        capabilities=[ProcessHistory(processor)],
        toolsets=[processor.toolset()],
    )

    @agent.tool_plain
    def fetch(url: str) -> str:
        """Fetch a page.

        Args:
            url: the address
        """
        return fetch_output({"url": url})

    asyncio.run(agent.run(TASK))
    processor.close()
    return seen


def results(seen: Seen) -> dict[str, str]:
    return {call: text for role, call, text in seen if role == "tool"}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_every_surface_shows_the_model_the_same_texts(tmp_path: Path, scenario: Scenario) -> None:
    harness, fixed = through_harness(tmp_path, scenario)
    sdk = through_agents_sdk(tmp_path, scenario, fixed)
    pai = through_pydantic_ai(tmp_path, scenario, fixed)
    assert len(harness) == len(sdk) == len(pai) == len(scenario.calls) + 1
    assert any(role == "system" for role, _, _ in harness[-1]), "the scenario should evict"
    for k, (ours, theirs) in enumerate(zip(harness, sdk, strict=True)):
        assert ours == theirs, f"request {k + 1} differs between veil and the Agents SDK"
    for k, (ours, theirs) in enumerate(zip(harness, pai, strict=True)):
        # pydantic-ai keeps every step in place: the harness's collapsed steps are stubs there.
        # It sends no manifest, so its budget is not the harness's: where a batch had to
        # choose, one may keep an item live that the other stubbed — but every text either
        # shows is the renderer's, and the same where both decided alike.
        shown, kept = results(ours), results(theirs)
        for call, text in shown.items():
            if live(text) == live(kept[call]):
                assert kept[call] == text, f"request {k + 1}, {call}"
            else:
                assert stubbed(text) or stubbed(kept[call]), f"request {k + 1}, {call}"
        stubs = [t for c, t in kept.items() if c not in shown]
        assert all(t.startswith("[veil: fetch ") for t in stubs), f"request {k + 1}: {stubs}"
    decided_alike = sum(
        live(t) == live(results(p)[c]) for h, p in zip(harness, pai, strict=True)
        for c, t in results(h).items()
    )  # fmt: skip
    assert decided_alike >= 0.9 * sum(len(results(h)) for h in harness)


def live(text: str) -> bool:
    """A result shown in full, or said to be shown in full above (its item is live)."""
    return not text.startswith("[veil: ") or "is shown in full above" in text


def stubbed(text: str) -> bool:
    return text.startswith("[veil: fetch ") and "out of the prompt" in text


def test_the_table_compares_something(tmp_path: Path) -> None:
    """The scenarios evict, expand, and show an expanded item once."""
    harness, _ = through_harness(tmp_path, SCENARIOS[1])
    texts = [t for request in harness for _, _, t in request]
    assert any("moved out of the prompt" in t for t in texts) and any(
        "earlier step" in t for t in texts
    )
    after = harness[7]  # the request after the expansion: page 1 once, in the expansion's result
    assert [c for _, c, t in after if t == page(1)] == ["call_7_1"]
    assert json.dumps(after).count("section-1-0 ") == 1
