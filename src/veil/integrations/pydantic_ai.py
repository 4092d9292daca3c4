"""Veil for pydantic-ai (extra ``veil[pydantic-ai]``): the context engine as a history
processor, and the memory tools.

::

    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from veil.integrations.pydantic_ai import memory_toolset, veil_history

    history = veil_history(".veil/context.db", session_id="s1", window_tokens=32_000)
    agent = Agent(model, capabilities=[ProcessHistory(history)],
                  toolsets=[history.toolset(), memory_toolset(memory, user_id="u1")])

pydantic-ai 2 takes history processors as ``capabilities=[ProcessHistory(p)]``; 1.x took
``history_processors=[p]`` — a :class:`VeilHistory` is the processor either way (an async
callable, ``list[ModelMessage] -> list[ModelMessage]``).

Before every model request the processor captures the tool results it has not seen (tool
return parts whose outcome is ``success`` or ``failed``) into a :class:`ContextEngine` on the
tape, lets it evict, and returns the history with each evicted result's content replaced by
the engine's one-line stub (``[veil: read_file notes.txt — 5,000 tokens out of the prompt;
veil_expand veil://warm/ci_… restores it]``). The stubbed history is what the model receives
and — pydantic-ai makes a processor's result the run's history — what ``all_messages()``
returns; the full content stays on the tape, and the processor puts it back whenever the item
is live again, so re-reading a stubbed history loses nothing. ``veil_expand`` (in
:meth:`VeilHistory.toolset`) returns a result's full content. Other messages are never
changed, and a processor given the same store and ``session_id`` in a new process carries on
where the last one stopped.

:func:`memory_toolset` gives the model ``veil_recall`` and ``veil_remember`` over a
:class:`~veil.memory.Memory`, bound to one user and one author.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

try:
    from pydantic_ai import ModelRetry, RunContext
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequestPart,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.tools import Tool
    from pydantic_ai.toolsets import FunctionToolset
except ModuleNotFoundError as exc:  # pragma: no cover - only without the extra
    from veil.extras import missing

    raise ImportError(missing("pydantic-ai", "veil.integrations.pydantic_ai", exc)) from exc

from veil.context import ContextConfig, ContextEngine
from veil.context.budget import reply_reserve
from veil.context.transcript import Call, Found
from veil.embed.protocol import Embedder
from veil.integrations.long_term import AdapterVerbs, refusal, tool_name
from veil.integrations.window import ContextWindow, WindowReport
from veil.memory import Memory
from veil.memory.model import Author
from veil.tape import Store, new_id, open_store
from veil.verbs import Verb

RESULT_OUTCOMES = ("success", "failed")
"""Tool returns that are results (not a retry request, a denial or an interruption)."""


class VeilHistory:
    """A pydantic-ai history processor over a :class:`ContextWindow` (see the module
    docstring). ``reports`` holds one :class:`WindowReport` per model request."""

    def __init__(self, window: ContextWindow, *, store: Store | None = None) -> None:
        self.window = window
        self.reports: list[WindowReport] = []
        self._owned = store

    @property
    def engine(self) -> ContextEngine:
        return self.window.engine

    async def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        return self.process(messages)

    def process(self, messages: Sequence[ModelMessage]) -> list[ModelMessage]:
        """The history as the model is to see it (what ``__call__`` returns)."""
        found, where = _found(messages, self.engine.count_tokens)
        report = self.window.render(found)
        self.reports.append(report)
        out = list(messages)
        for part in report.rendered.parts:
            if part.entry is None or part.kind not in SHOWN_KINDS:
                continue  # nothing is added to a pydantic-ai history (see the docstring)
            m, p = where[part.entry]
            text = self._text(part.kind, part.text, found[part.entry])
            if text != found[part.entry].text:
                out[m] = _with_text(out[m], p, text)
        return out

    def _text(self, kind: str, text: str, found: Found) -> str:
        """A result shown as found whose found text is its own stub (an earlier rendering
        replaced it in the history) gets its content back: it is in the prompt again."""
        if kind != "shown" or found.role != "tool" or not text.startswith("[veil: "):
            return text
        item = self.engine.by_tool_call(found.call_id or "")
        return item.content if item is not None and item.tier == "live" else text

    def toolset(self) -> FunctionToolset[Any]:
        """``veil_expand``: the full content behind a stub (the catalogue's ``expand``)."""
        return FunctionToolset(_tools(AdapterVerbs(None, window=self.window), ("expand",)))

    def close(self) -> None:
        """Write what is buffered; close the store when :func:`veil_history` opened it."""
        self.engine.flush()
        if self._owned is not None:
            self._owned.close()
            self._owned = None


SHOWN_KINDS = frozenset({"shown", "stub", "excerpt", "elsewhere"})


def _found(
    messages: Sequence[ModelMessage], count: Callable[[str], int]
) -> tuple[list[Found], list[tuple[int, int | None]]]:
    """The history as the transcript's messages, and where each came from (message index,
    part index; None for a whole model response)."""
    found: list[Found] = []
    where: list[tuple[int, int | None]] = []
    for m, message in enumerate(messages):
        if isinstance(message, ModelResponse):
            texts = [p.content for p in message.parts if isinstance(p, TextPart)]
            calls = tuple(
                Call(p.tool_call_id, p.tool_name, p.args_as_dict())
                for p in message.parts
                if isinstance(p, ToolCallPart)
            )
            extra = sum(
                count(str(p))
                for p in message.parts
                if not isinstance(p, TextPart | ToolCallPart)  # thinking, built-in tools
            )
            found.append(Found("assistant", "".join(texts), calls, extra_tokens=extra))
            where.append((m, None))
            continue
        for p, part in enumerate(message.parts):
            found.append(_request_part(part))
            where.append((m, p))
    return found, where


def _request_part(part: ModelRequestPart) -> Found:
    if isinstance(part, ToolReturnPart):
        tracked = part.tool_kind is None and part.outcome in RESULT_OUTCOMES
        return Found(
            "tool",
            part.model_response_str(),
            call_id=part.tool_call_id,
            is_error=part.outcome != "success",
            tracked=tracked,
        )
    if isinstance(part, UserPromptPart):
        content = part.content
        text = content if isinstance(content, str) else json.dumps(content, default=str)
        return Found("user", text)
    # Instructions and retry feedback: sent as they are, never an item.
    respond = getattr(part, "model_response", None)
    text = respond() if callable(respond) else getattr(part, "content", "")
    return Found("system", text if isinstance(text, str) else json.dumps(text, default=str))


def _with_text(message: ModelMessage, index: int | None, text: str) -> ModelMessage:
    """``message`` with the text of its part ``index`` (a model response: its text) replaced."""
    if isinstance(message, ModelResponse):  # a stubbed turn: calls kept, arguments elided
        rest = [
            replace(p, args={}) if isinstance(p, ToolCallPart) else p
            for p in message.parts
            if not isinstance(p, TextPart)
        ]
        return replace(message, parts=[TextPart(text), *rest])
    assert index is not None
    parts = list(message.parts)
    parts[index] = replace(parts[index], content=text)
    return replace(message, parts=parts)


def veil_history(
    db: str | Path | Store = Path(".veil") / "context.db",
    *,
    session_id: str | None = None,
    scope: str = "pydantic-ai",
    window_tokens: int = 128_000,
    reserve_tokens: int | None = None,
    fixed_overhead_tokens: int = 0,
    config: ContextConfig | None = None,
    embedder: Embedder | None = None,
) -> VeilHistory:
    """A history processor keeping one conversation's tool results in working memory.

    ``db`` is a store (path, URL or an open :class:`Store`, which the caller keeps owning);
    ``session_id`` names the conversation (a new one when omitted: pass the same one to carry
    on after a restart); ``scope`` the tenant the items belong to. ``window_tokens`` is the
    model's context window and ``reserve_tokens`` what to leave for its reply (default a
    fifth of the window, at most 16,000); ``fixed_overhead_tokens`` what instructions and
    tool schemas take. ``config`` replaces the whole context configuration (the window
    arguments are then ignored). ``embedder`` defaults to Veil's packaged one."""
    if window_tokens <= 0:
        raise ValueError("window_tokens must be positive")
    if embedder is None:
        from veil.embed import default_embedder

        embedder = default_embedder()
    if config is None:
        reserve = reply_reserve(window_tokens) if reserve_tokens is None else reserve_tokens
        config = ContextConfig(window_tokens=window_tokens, reserve_tokens=reserve)
    owned: Store | None = None
    if isinstance(db, (str, Path)):
        if isinstance(db, Path):
            db.parent.mkdir(parents=True, exist_ok=True)
        owned = store = open_store(db, embedder=embedder)
    else:
        store = db
    engine = ContextEngine(
        store,
        session_id=session_id or new_id("pai"),
        scope=scope,
        config=config,
        embedder=embedder,
    )
    window = ContextWindow(
        engine, fixed_overhead_tokens=fixed_overhead_tokens, collapse=False, tail=False
    )
    return VeilHistory(window, store=owned)


def memory_toolset(
    memory: Memory,
    *,
    user_id: str,
    author: Author = "assistant",
    history: VeilHistory | None = None,
) -> FunctionToolset[Any]:
    """``veil_recall`` and ``veil_remember`` over ``memory`` (``veil_remember`` only when it
    has a model to extract with), bound to ``user_id`` and ``author`` (the model cannot choose
    either). With ``history``, recall also lists the conversation's evicted tool results that
    match."""
    window = history.window if history is not None else None
    verbs = AdapterVerbs(memory, user_id, author, window)
    return FunctionToolset(_tools(verbs, ("recall", "remember")))


def _tools(verbs: AdapterVerbs, names: tuple[str, ...]) -> list[Tool[Any]]:
    """The catalogue's verbs as pydantic-ai tools: name, description and JSON schema from the
    catalogue; a bad argument or an unknown pointer asks the model to retry."""

    def tool(verb: Verb) -> Tool[Any]:
        async def run(ctx: RunContext[Any], **arguments: Any) -> str:
            try:
                return await verbs.run(verb, arguments, ctx.tool_call_id)
            except (LookupError, ValueError) as exc:
                raise ModelRetry(refusal(verb, exc)) from None

        return Tool.from_schema(run, tool_name(verb), verb.description, verb.schema, takes_ctx=True)

    return [tool(v) for v in verbs.offered("pydantic_ai", names)]


__all__ = ["VeilHistory", "memory_toolset", "veil_history"]
