"""One exception for a script that ran out, matched by its type (issue 29, item 7).

``ScriptedProvider`` (agent turns) and ``ScriptedModel`` (a ``complete`` callable) raise the same
:class:`ScriptExhausted`, which ``veil.testing`` re-exports; the agent loop ends a run with
``script_exhausted`` on that type and on nothing else — not on a message that reads like it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import veil.testing
from veil.agent.events import AgentEnd
from veil.agent.loop import AgentLoopConfig, run_agent
from veil.agent.tool import ToolContext
from veil.llm.messages import Message, ProviderError, Request, StreamEvent, UserMessage
from veil.llm.scripted import ScriptedModel, ScriptedProvider, ScriptExhausted


def test_one_class_for_both_scripted_fakes() -> None:
    assert veil.testing.ScriptExhausted is ScriptExhausted
    assert issubclass(ScriptExhausted, ProviderError) and issubclass(ScriptExhausted, RuntimeError)
    model = ScriptedModel(["{}"])
    model([{"role": "user", "content": "x"}])
    with pytest.raises(ScriptExhausted, match="has 1 responses and was called 2 times"):
        model([{"role": "user", "content": "y"}])


class _Failing(ScriptedProvider):
    """A provider whose every request fails with ``error``."""

    def __init__(self, error: Exception) -> None:
        super().__init__({"turns": []})
        self.error = error

    def stream(
        self, request: Request, *, json_schema: dict[str, Any] | None = None
    ) -> Iterator[StreamEvent]:
        raise self.error


def _end(provider: ScriptedProvider, tmp_path: Path) -> AgentEnd:
    config = AgentLoopConfig(
        provider=provider, tools=[], system_prompt="", tool_context=ToolContext(cwd=tmp_path)
    )
    messages: list[Message] = [UserMessage("hello")]
    events = list(run_agent(config, messages))
    end = events[-1]
    assert isinstance(end, AgentEnd)
    return end


def test_the_loop_ends_an_exhausted_script_by_type(tmp_path: Path) -> None:
    end = _end(ScriptedProvider({"turns": []}), tmp_path)
    assert end.reason == "script_exhausted"
    assert "the script has 0 turns" in end.message
    # Any message: the type decides.
    assert _end(_Failing(ScriptExhausted("out of replies")), tmp_path).reason == "script_exhausted"


def test_a_provider_error_that_reads_like_exhaustion_is_an_error(tmp_path: Path) -> None:
    text = "the script has 2 turns; the run asked for turn 3"  # ScriptExhausted's own words
    assert _end(_Failing(ProviderError(text)), tmp_path).reason == "error"
