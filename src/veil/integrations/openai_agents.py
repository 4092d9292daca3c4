"""Veil for the OpenAI Agents SDK (extra ``veil[agents]``): a ``Session`` on the tape whose
``get_items`` applies eviction, and the memory tools.

::

    from agents import Agent, RunConfig, Runner
    from veil.integrations.openai_agents import VeilSession, memory_tools

    session = VeilSession("chat-42", db=".veil/context.db", window_tokens=32_000)
    agent = Agent(name="helper", tools=[session.expand_tool(), *memory_tools(memory, user_id="u1")])
    await Runner.run(agent, "…", session=session,
                     run_config=RunConfig(call_model_input_filter=session.model_input_filter))

The session implements the SDK's session protocol (``get_items``, ``add_items``, ``pop_item``,
``clear_session``). Every item, every pop and every clear is an event on the tape (kinds
``agents.item``, ``agents.pop``, ``agents.clear``, in the session's ``scope``), so a new
:class:`VeilSession` on the same store and ``session_id`` — in another process, after a
restart — sees exactly the items that were there. The items are stored as given.

``get_items`` is a turn boundary of Veil's context engine: function-call outputs not seen
before are captured, the engine evicts, and the items come back with each evicted output
replaced by a one-line stub naming its ``veil_expand`` pointer (``limit`` keeps the latest N
of those). The SDK reads a session once per run; ``model_input_filter`` applies the same
rendering before every model call inside a run. ``raw_items`` returns the items as stored.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

try:
    from agents import FunctionTool
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings
    from agents.run_config import CallModelData, ModelInputData
    from agents.tool_context import ToolContext
except ModuleNotFoundError as exc:  # pragma: no cover - only without the extra
    from veil.extras import missing

    raise ImportError(missing("agents", "veil.integrations.openai_agents", exc)) from exc

from veil.clock import Clock, SystemClock
from veil.context import ContextConfig, ContextEngine
from veil.context.budget import reply_reserve
from veil.context.transcript import Call, Found
from veil.embed.protocol import Embedder
from veil.integrations.long_term import AdapterVerbs, refusal, tool_name
from veil.integrations.window import ContextWindow, WindowReport
from veil.memory import Memory
from veil.memory.model import Author
from veil.tape import JSONValue, Store, open_store
from veil.tape.codec import Ident
from veil.tape.kinds import EventKind, catalogue
from veil.tape.recorder import Recorder
from veil.verbs import Verb

AgentsKind = Literal["agents.item", "agents.pop", "agents.clear"]


@dataclass(frozen=True)
class ItemAdded:
    """An item added to the session, stored as given (JSON)."""

    session_id: Ident
    item: JSONValue


@dataclass(frozen=True)
class SessionChanged:
    """The latest item popped, or every item cleared."""

    session_id: Ident


ITEM = EventKind("agents.item", ItemAdded)
POP = EventKind("agents.pop", SessionChanged)
CLEAR = EventKind("agents.clear", SessionChanged)
KINDS = catalogue(AgentsKind, ITEM, POP, CLEAR)
P = TypeVar("P")


class VeilSession:
    """An Agents SDK session kept on Veil's tape (see the module docstring).

    ``db`` is a store (path, URL or an open :class:`Store`, which the caller keeps owning);
    ``scope`` the tenant the session belongs to. ``window_tokens`` is the model's context
    window, ``reserve_tokens`` what to leave for the reply (default a fifth of the window, at
    most 16,000), ``fixed_overhead_tokens`` what instructions and tool schemas take;
    ``config`` replaces the whole context configuration. ``reports`` holds one
    :class:`WindowReport` per rendering."""

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        *,
        db: str | Path | Store = Path(".veil") / "context.db",
        scope: str = "openai-agents",
        window_tokens: int = 128_000,
        reserve_tokens: int | None = None,
        fixed_overhead_tokens: int = 0,
        config: ContextConfig | None = None,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        if not session_id.strip():
            raise ValueError("session_id must not be empty")
        if window_tokens <= 0:
            raise ValueError("window_tokens must be positive")
        if embedder is None:
            from veil.embed import default_embedder

            embedder = default_embedder()
        if config is None:
            reserve = reply_reserve(window_tokens) if reserve_tokens is None else reserve_tokens
            config = ContextConfig(window_tokens=window_tokens, reserve_tokens=reserve)
        self.session_id = session_id
        self.session_settings = session_settings
        self.scope = scope
        self.clock: Clock = clock or SystemClock()
        self._config, self._embedder = config, embedder
        self._fixed = fixed_overhead_tokens
        self._owned: Store | None = None
        if isinstance(db, (str, Path)):
            if isinstance(db, Path):
                db.parent.mkdir(parents=True, exist_ok=True)
            self._owned = open_store(db, embedder=embedder)
            self.store: Store = self._owned
        else:
            self.store = db
        self._recorder = Recorder(self.store, scope, "openai-agents", self.clock, id_prefix="ag")
        self._items: list[JSONValue] = []
        self._registered = False
        self._generation = 0
        self._after = 0
        self._lock = asyncio.Lock()
        self.reports: list[WindowReport] = []
        self._read_new()
        self.window = self._window()

    # ---- the tape -------------------------------------------------------------------------

    def _window(self) -> ContextWindow:
        """The engine of the current generation (a clear starts a new one)."""
        suffix = f"#{self._generation}" if self._generation else ""
        engine = ContextEngine(
            self.store,
            session_id=f"agents:{self.session_id}{suffix}",
            scope=self.scope,
            config=self._config,
            embedder=self._embedder,
            clock=self.clock,
            register=not self._registered,
        )
        self._registered = True
        return ContextWindow(engine, fixed_overhead_tokens=self._fixed)

    def _read_new(self) -> bool:
        """Apply this session's events appended since the last read (by any process);
        returns whether a clear was among them."""
        cleared = False
        for event in self.store.read(
            self.scope, after=self._after, kinds=(ITEM.name, POP.name, CLEAR.name)
        ):
            self._after = event.seq or self._after
            if event.payload.get("session_id") != self.session_id:
                continue
            if event.kind == ITEM.name:
                self._items.append(event.payload.get("item"))
            elif event.kind == POP.name and self._items:
                self._items.pop()
            elif event.kind == CLEAR.name:
                self._items = []
                self._generation += 1
                cleared = True
        return cleared

    def _sync(self) -> None:
        if self._read_new():
            self.window = self._window()

    def _append(self, kind: EventKind[P], payloads: Sequence[P]) -> None:
        """One batch at one time, the session id in every payload (items are read back by it)."""
        now = self.clock.now()
        self.store.append([self._recorder.event(kind, p, at=now) for p in payloads])
        self._sync()

    # ---- the session protocol -------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The items in order, evicted function outputs as stubs; the latest ``limit``."""
        async with self._lock:
            self._sync()
            items = self.render(self._items)
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return items

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` (stored as given, JSON)."""
        if not items:
            return
        async with self._lock:
            self._append(ITEM, [ItemAdded(self.session_id, _json(item)) for item in items])

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the latest item (as stored), or ``None`` when there is none."""
        async with self._lock:
            self._sync()
            if not self._items:
                return None
            last = self._items[-1]
            self._append(POP, [SessionChanged(self.session_id)])
            return cast(TResponseInputItem, last)

    async def clear_session(self) -> None:
        """Remove every item; working memory starts afresh (earlier items stay on the tape
        and their pointers keep working)."""
        async with self._lock:
            self._append(CLEAR, [SessionChanged(self.session_id)])

    # ---- rendering ------------------------------------------------------------------------

    def raw_items(self) -> list[TResponseInputItem]:
        """The items exactly as they were added."""
        self._sync()
        return [cast(TResponseInputItem, item) for item in self._items]

    def render(self, items: Sequence[Any]) -> list[TResponseInputItem]:
        """``items`` as the model is to see them: one turn boundary of the context engine."""
        plain = [
            cast(dict[str, Any], raw if isinstance(raw, dict) else _json(raw)) for raw in items
        ]
        found, groups = _found(plain, self.window.engine.count_tokens)
        report = self.window.render(found)
        self.reports.append(report)
        out: list[dict[str, Any]] = []
        for part in report.rendered.parts:
            if part.entry is None:
                if part.kind == "missing" and part.call_id is not None:
                    out.append(_output(part.call_id, part.text))
                else:
                    out.append({"role": "system", "content": part.text})
                continue
            group = [plain[i] for i in groups[part.entry]]
            if part.kind == "shown":
                out.extend(group)
            elif part.kind == "orphan":
                out.append({"role": "system", "content": part.text})
            elif part.role == "tool":
                out.append({**group[0], "output": part.text})
            elif part.role == "assistant":
                out.extend(_assistant_text(group, part.text))
            else:
                out.append({**group[0], "content": part.text})
        return [cast(TResponseInputItem, item) for item in out]

    def model_input_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """For ``RunConfig(call_model_input_filter=…)``: the same rendering before every model
        call of a run."""
        rendered = self.render(data.model_data.input)
        return ModelInputData(input=rendered, instructions=data.model_data.instructions)

    def expand_tool(self) -> FunctionTool:
        """``veil_expand``: the full content behind a stub (the catalogue's ``expand``)."""
        return _tools(AdapterVerbs(None, window=self.window), ("expand",))[0]

    def close(self) -> None:
        """Write what is buffered; close the store when the session opened it."""
        self.window.engine.flush()
        if self._owned is not None:
            self._owned.close()
            self._owned = None


_ASSISTANT = frozenset({"function_call", "reasoning"})


def _is_assistant(item: dict[str, Any]) -> bool:
    return item.get("type") in _ASSISTANT or item.get("role") == "assistant"


def _found(
    items: Sequence[dict[str, Any]], count: Callable[[str], int]
) -> tuple[list[Found], list[list[int]]]:
    """The items as the transcript's messages, and which items each one is: a model
    response's items (its message, reasoning and function calls) are one assistant turn."""
    found: list[Found] = []
    groups: list[list[int]] = []
    index = 0
    while index < len(items):
        item = items[index]
        if _is_assistant(item):
            group = [index]
            while index + 1 < len(items) and _is_assistant(items[index + 1]):
                index += 1
                group.append(index)
            parts = [items[i] for i in group]
            calls = tuple(
                Call(str(p.get("call_id")), str(p.get("name")), _arguments(p))
                for p in parts
                if p.get("type") == "function_call"
            )
            text = "".join(_message_text(p) for p in parts if p.get("role") == "assistant")
            extra = sum(  # reasoning items; the calls are counted by the transcript
                count(json.dumps(p, default=str))
                for p in parts
                if p.get("role") != "assistant" and p.get("type") != "function_call"
            )
            found.append(Found("assistant", text, calls, extra_tokens=extra))
            groups.append(group)
        elif item.get("type") == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else json.dumps(output, default=str)
            found.append(Found("tool", text, call_id=str(item.get("call_id"))))
            groups.append([index])
        elif item.get("role") == "user" and isinstance(item.get("content"), str):
            found.append(Found("user", str(item["content"])))
            groups.append([index])
        else:  # instructions, multimodal input, built-in tools' items: sent as they are
            found.append(Found("system", json.dumps(item, default=str)))
            groups.append([index])
        index += 1
    return found, groups


def _message_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = cast(list[dict[str, Any]], content)
        return "".join(str(c.get("text", "")) for c in parts)
    return ""


def _assistant_text(group: Sequence[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    """A model response's items with its message text replaced (a turn's stub); its function
    calls stay."""
    content = [{"type": "output_text", "text": text}]
    stub = {"type": "message", "role": "assistant", "content": content}
    out: list[dict[str, Any]] = []
    placed = False
    for item in group:
        if item.get("role") == "assistant":
            if not placed:
                out.append({**item, "content": content})
                placed = True
            continue
        if item.get("type") == "function_call":
            if not placed:
                out.append(stub)
                placed = True
            out.append({**item, "arguments": "{}"})  # its turn's item keeps the arguments
            continue
        out.append(item)
    if not placed:
        out.insert(0, stub)
    return out


def _output(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def _json(item: Any) -> JSONValue:
    """An item as plain JSON (the SDK passes dicts; a pydantic model is dumped)."""
    dump = getattr(item, "model_dump", None)
    value = dump(exclude_unset=True) if callable(dump) else item
    return cast(JSONValue, json.loads(json.dumps(value, default=str)))


def _arguments(item: dict[str, Any]) -> dict[str, Any]:
    raw = item.get("arguments")
    try:
        parsed: object = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        return {"arguments": raw}
    return cast(dict[str, Any], parsed) if isinstance(parsed, dict) else {}


def memory_tools(
    memory: Memory,
    *,
    user_id: str,
    author: Author = "assistant",
    session: VeilSession | None = None,
) -> list[FunctionTool]:
    """``veil_recall`` and ``veil_remember`` over ``memory`` (``veil_remember`` only when it
    has a model to extract with), bound to ``user_id`` and ``author`` (the model cannot choose
    either). With ``session``, recall also lists the conversation's evicted tool results that
    match."""
    window = session.window if session is not None else None
    return _tools(AdapterVerbs(memory, user_id, author, window), ("recall", "remember"))


def _tools(verbs: AdapterVerbs, names: tuple[str, ...]) -> list[FunctionTool]:
    """The catalogue's verbs as the SDK's function tools: name, description and JSON schema
    from the catalogue; a bad argument or an unknown pointer is an answer the model reads."""

    def tool(verb: Verb) -> FunctionTool:
        async def invoke(ctx: ToolContext[Any], raw: str) -> str:
            try:
                parsed: object = json.loads(raw or "{}")
                if not isinstance(parsed, dict):
                    raise ValueError("the arguments must be a JSON object")
                arguments = cast(dict[str, object], parsed)
                return await verbs.run(verb, arguments, ctx.tool_call_id)
            except (LookupError, ValueError) as exc:
                return f"{tool_name(verb)}: {refusal(verb, exc)}"

        return FunctionTool(
            name=tool_name(verb),
            description=verb.description,
            params_json_schema=verb.schema,
            on_invoke_tool=invoke,
            strict_json_schema=False,
        )

    return [tool(v) for v in verbs.offered("agents_sdk", names)]


__all__ = ["VeilSession", "memory_tools"]
