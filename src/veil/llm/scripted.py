"""A provider that replays a script: for tests, demos and bug reports (SPEC 7.1).

Script format (a JSON file or the same dict)::

    {"turns": [
        {"content": "Let me look.",
         "tool_calls": [{"name": "read", "arguments": {"path": "src/a.py"}}]},
        {"content": "Done."}
    ]}

Each entry is one assistant reply, returned in order whatever the request — the script does not
look at what it is sent, so a run is reproducible byte for byte. Optional per turn: ``usage``
(``{"input_tokens": int, "output_tokens": int}``; otherwise estimated as characters / 4) and
``stop_reason`` (otherwise ``tool_calls`` when the turn calls tools, else ``stop``).

Tool-call ids are deterministic: ``call_<turn>_<i>``, both counted from 1 (the second call of the
third reply is ``call_3_2``). When the script runs out, :class:`ScriptExhausted` says so; the loop
ends the run with that message. Every request is recorded in :attr:`ScriptedProvider.requests`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from veil.llm.catalog import DEFAULT_CONTEXT_WINDOW
from veil.llm.messages import (
    AssistantMessage,
    Done,
    ProviderError,
    Request,
    Response,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)

TEXT_CHUNKS = 3
"""Content is streamed in (up to) this many :class:`TextDelta` pieces, like a real provider."""


class ScriptExhausted(ProviderError):
    """A script ran out: a :class:`ScriptedProvider` was asked for more replies, or a
    :class:`ScriptedModel` called more times, than it has (not retryable). The one class for
    both — the agent loop ends a run with ``script_exhausted`` on this type, never on a
    message (also exported as :class:`veil.testing.ScriptExhausted`)."""


class ScriptError(ValueError):
    """The script is malformed; the message names the turn and the field."""


class ScriptedProvider:
    """Replays ``script`` (a path to a JSON file, or the parsed dict) one reply per request."""

    accepts_json_schema = True
    """``stream`` takes ``json_schema=`` (constrained output where the backend has it)."""

    def __init__(
        self,
        script: str | Path | Mapping[str, Any],
        *,
        context_window: int = DEFAULT_CONTEXT_WINDOW,
        name: str | None = None,
        keep_requests: int = 1000,
    ) -> None:
        """``keep_requests``: how many of the latest requests :attr:`requests` keeps. A scripted
        model behind a long-running server (load tests, soaks) would otherwise hold every
        prompt it was ever sent — memory that grows without bound."""
        if isinstance(script, str | Path):
            path = Path(script)
            try:
                data: object = json.loads(path.read_text())
            except FileNotFoundError:
                raise ScriptError(f"script file not found: {path}") from None
            except json.JSONDecodeError as exc:
                raise ScriptError(f"{path} is not valid JSON: {exc}") from None
            name = name or path.name
        else:
            data = dict(script)
        self.replies: tuple[Response, ...] = parse_script(data)
        self._model = f"scripted:{name or 'inline'}"
        self._context_window = context_window
        self._keep = max(1, keep_requests)
        self._turns = 0
        self.requests: list[Request] = []
        """The latest requests (at most ``keep_requests``), oldest first."""

    @property
    def model(self) -> str:
        return self._model

    @property
    def context_window(self) -> int:
        return self._context_window

    @context_window.setter
    def context_window(self, tokens: int) -> None:
        self._context_window = tokens

    @property
    def turns_used(self) -> int:
        return self._turns

    def stream(
        self, request: Request, *, json_schema: dict[str, Any] | None = None
    ) -> Iterator[StreamEvent]:
        """Record ``request`` and stream the next scripted reply (``json_schema`` is ignored).

        The request is recorded and the turn consumed when iteration starts, as a real provider
        sends its request then.
        """
        self.requests.append(request)
        if len(self.requests) > self._keep:
            del self.requests[0]
        self._turns += 1
        turn = self._turns
        if turn > len(self.replies):
            raise ScriptExhausted(
                f"the script has {len(self.replies)} turns; the run asked for turn {turn}"
            )
        response = self.replies[turn - 1]
        if response.usage == Usage():
            response = _with_estimated_usage(response, request)
        message = response.message
        for piece in _chunks(message.content, TEXT_CHUNKS):
            yield TextDelta(piece)
        for index, call in enumerate(message.tool_calls):
            yield ToolCallDelta(index, call.id, call.name, json.dumps(call.arguments))
        yield Done(response)


SCRIPT_KEYS = frozenset({"turns"})
TURN_KEYS = frozenset({"content", "tool_calls", "usage", "stop_reason"})
CALL_KEYS = frozenset({"name", "arguments"})
USAGE_KEYS = frozenset({"input_tokens", "output_tokens"})


def _unknown(where: str, entry: dict[str, Any], known: frozenset[str]) -> None:
    extra = sorted(set(entry) - known)
    if extra:
        raise ScriptError(
            f"{where}: unknown field {extra[0]!r} (known: {', '.join(sorted(known))})"
        )


def parse_script(data: object) -> tuple[Response, ...]:
    """Validate a script and turn each entry into the :class:`Response` it will produce. A
    misspelt key is an error naming the turn and the field, never silently ignored."""
    if not isinstance(data, dict) or not isinstance(
        turns := cast(dict[str, Any], data).get("turns"), list
    ):
        raise ScriptError('a script is a JSON object {"turns": [...]}')
    _unknown("the script", cast(dict[str, Any], data), SCRIPT_KEYS)
    out: list[Response] = []
    for turn, raw in enumerate(cast(list[object], turns), start=1):
        if not isinstance(raw, dict):
            raise ScriptError(f"turn {turn}: expected an object, got {type(raw).__name__}")
        entry = cast(dict[str, Any], raw)
        _unknown(f"turn {turn}", entry, TURN_KEYS)
        content = entry.get("content", "")
        if not isinstance(content, str):
            raise ScriptError(f"turn {turn}: content must be a string")
        calls: list[ToolCall] = []
        raw_calls: object = entry.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise ScriptError(f"turn {turn}: tool_calls must be a list")
        for i, rc in enumerate(cast(list[object], raw_calls), start=1):
            if not isinstance(rc, dict) or not isinstance(
                name := cast(dict[str, Any], rc).get("name"), str
            ):
                raise ScriptError(f"turn {turn}, tool call {i}: needs a string 'name'")
            _unknown(f"turn {turn}, tool call {i}", cast(dict[str, Any], rc), CALL_KEYS)
            arguments: object = cast(dict[str, Any], rc).get("arguments", {})
            if not isinstance(arguments, dict):
                raise ScriptError(f"turn {turn}, tool call {i}: arguments must be an object")
            calls.append(ToolCall(f"call_{turn}_{i}", name, cast(dict[str, Any], arguments)))
        usage = Usage()
        if isinstance(raw_usage := entry.get("usage"), dict):
            u = cast(dict[str, Any], raw_usage)
            _unknown(f"turn {turn}, usage", u, USAGE_KEYS)
            counts = (u.get("input_tokens", 0), u.get("output_tokens", 0))
            if not all(isinstance(c, int) and not isinstance(c, bool) for c in counts):
                raise ScriptError(f"turn {turn}, usage: token counts must be integers")
            usage = Usage(int(counts[0]), int(counts[1]))
        elif raw_usage is not None:
            raise ScriptError(f"turn {turn}: usage must be an object")
        stop = str(entry.get("stop_reason") or ("tool_calls" if calls else "stop"))
        out.append(
            Response(
                message=AssistantMessage(content, tuple(calls)),
                usage=usage,
                stop_reason=stop,
                model="scripted",
                raw={"turn": turn},
            )
        )
    return tuple(out)


def _with_estimated_usage(response: Response, request: Request) -> Response:
    """Usage at ~4 characters a token, so budgets and displays have plausible numbers."""
    sent = len(request.system) + len(json.dumps([asdict(m) for m in request.messages]))
    sent += len(json.dumps([asdict(t) for t in request.tools]))
    message = response.message
    produced = len(message.content) + sum(len(json.dumps(c.arguments)) for c in message.tool_calls)
    usage = Usage(input_tokens=sent // 4, output_tokens=max(1, produced // 4))
    return Response(message, usage, response.stop_reason, response.model, response.raw)


def _chunks(text: str, n: int) -> list[str]:
    """``text`` cut into at most ``n`` non-empty pieces that join back to it."""
    if not text:
        return []
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


# ---- a scripted ``complete`` callable (extraction without a model) -----------------------


@dataclass
class ScriptedModel:
    """A ``complete(messages, *, json_schema=None) -> str`` that replays ``responses`` in order.

    A response may be a string (returned as is), a dict or list (serialised as JSON), or an
    exception instance (raised, to simulate a failing model). Each call's messages are
    recorded in :attr:`calls`, its schema in :attr:`schemas`. A call past the last response
    raises :class:`ScriptExhausted`.
    """

    responses: Sequence[str | Mapping[str, Any] | list[Any] | BaseException]
    calls: list[list[dict[str, Any]]] = field(default_factory=lambda: [])
    schemas: list[dict[str, Any] | None] = field(default_factory=lambda: [])

    def __call__(
        self, messages: list[dict[str, Any]], *, json_schema: dict[str, Any] | None = None
    ) -> str:
        self.calls.append([dict(m) for m in messages])
        self.schemas.append(json_schema)
        index = len(self.calls) - 1
        if index >= len(self.responses):
            raise ScriptExhausted(
                f"ScriptedModel has {len(self.responses)} responses and was called "
                f"{index + 1} times; add a response for call {index + 1}"
            )
        response = self.responses[index]
        if isinstance(response, BaseException):
            raise response
        if isinstance(response, str):
            return response
        return json.dumps(response)

    @property
    def remaining(self) -> int:
        return max(0, len(self.responses) - len(self.calls))
