"""Anthropic Messages provider (official ``anthropic`` SDK), streaming.

Wire contract (what :meth:`AnthropicProvider.wire_messages` produces):

- ``Request.system`` goes in the top-level ``system`` parameter, not in ``messages``; a
  :class:`SystemMessage` inside the conversation (the API has no such role there) becomes user text
  prefixed ``System note:``;
- an assistant message is a list of blocks: its text (if any), then one ``tool_use`` block per call
  with ``input`` = :attr:`ToolCall.arguments`; one with neither text nor calls gets the text
  ``(no content)``, because the API rejects empty assistant turns;
- tool results are ``tool_result`` blocks (``tool_use_id``, ``content``, ``is_error``) in a user
  message; consecutive user-side messages are merged into one user message, which the API requires
  after a ``tool_use`` turn (all its results in the very next message);
- tools are ``{name, description, input_schema}``;
- ``max_tokens`` is required by the API: ``Request.max_tokens`` or the model's safe default from
  :mod:`veil.llm.catalog`.

Reply contract: the event stream (``message_start``, ``content_block_start``/``_delta``/``_stop``,
``message_delta``, ``message_stop``) becomes :class:`TextDelta` / :class:`ToolCallDelta` events
(``index`` counts tool calls, not content blocks, as for OpenAI) and a final :class:`Done`.
``stop_reason`` is normalised to the OpenAI vocabulary the loop uses: ``end_turn`` and
``stop_sequence`` → ``stop``, ``tool_use`` → ``tool_calls``, ``max_tokens`` → ``length``,
``refusal`` → ``content_filter``; others pass through. Input usage counts cache reads and writes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import anthropic
from anthropic.types import (
    ContentBlockParam,
    InputJSONDelta,
    MessageParam,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStreamEvent,
    TextBlock,
    ToolParam,
    ToolUseBlock,
)
from anthropic.types import TextDelta as WireTextDelta

from veil.dialects import DIALECTS
from veil.llm import catalog
from veil.llm.configure import HOW_TO_CONFIGURE, ModelNotConfigured
from veil.llm.failures import Failure, RetryPolicy, status_failure, stream_with_retries
from veil.llm.messages import (
    AssistantMessage,
    Done,
    Request,
    Response,
    StreamEvent,
    SystemMessage,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from veil.llm.provider import SdkProvider
from veil.llm.structured import with_json_instruction
from veil.llm.tool_arguments import decode_arguments

ANTHROPIC = DIALECTS["anthropic"]
"""The wire facts of the Messages API (its usage, its error shape)."""

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


@dataclass
class _PartialCall:
    id: str
    name: str
    initial: dict[str, Any]
    fragments: list[str] = field(default_factory=lambda: [])


EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
"""Anthropic caches a prompt only up to blocks marked with ``cache_control``."""


def mark_cache_prefix(messages: list[MessageParam]) -> list[MessageParam]:
    """Mark the end of the conversation's stable prefix for Anthropic's prompt cache: the last
    block of the final user turn that is not a per-turn system note (the manifest rides at the
    end of the request so that everything before it stays byte-identical from turn to turn).
    With the cached system prompt (which Anthropic caches together with the tools), a new
    turn re-reads only what was added since the previous one."""
    if not messages or messages[-1]["role"] != "user":
        return messages
    content = messages[-1]["content"]
    if isinstance(content, str):
        return messages
    blocks = [dict(cast(dict[str, Any], b)) for b in content]
    for block in reversed(blocks):
        text = block.get("text")
        if block.get("type") == "text" and isinstance(text, str) and text.startswith(NOTE):
            continue
        block["cache_control"] = EPHEMERAL
        break
    last: MessageParam = {"role": "user", "content": cast(Any, blocks)}
    return [*messages[:-1], last]


NOTE = "System note: "


class AnthropicProvider(SdkProvider):
    """Streams Claude replies. ``api_key`` None means ``$ANTHROPIC_API_KEY`` (the SDK's rule).

    Without any key :class:`ModelNotConfigured` is raised here, not at the first request.
    """

    accepts_json_schema = True
    """``stream`` takes ``json_schema=`` (constrained output where the backend has it)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        context_window: int | None = None,
        max_retries: int = 4,
        timeout: float = 120.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._model = model
        self._context_window = context_window or catalog.context_window(model)
        self.retry = retry or RetryPolicy(max_retries=max_retries)
        if api_key is None and not (
            os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
        ):
            raise ModelNotConfigured(
                f"anthropic:{model} needs ANTHROPIC_API_KEY. {HOW_TO_CONFIGURE}"
            )
        self._client = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0
        )
        self.label = f"anthropic ({model})"

    def stream(
        self, request: Request, *, json_schema: dict[str, Any] | None = None
    ) -> Iterator[StreamEvent]:
        """Stream one reply. ``json_schema`` (extraction) is asked for in the system prompt."""
        return stream_with_retries(
            lambda: self._attempt(request, json_schema), self._classify, self.retry
        )

    # -- request -------------------------------------------------------------------------------

    @staticmethod
    def wire_messages(request: Request) -> list[MessageParam]:
        """The conversation as Anthropic messages (see the module doc)."""
        out: list[MessageParam] = []
        pending_user: list[ContentBlockParam] = []

        def flush_user() -> None:
            if pending_user:
                out.append({"role": "user", "content": list(pending_user)})
                pending_user.clear()

        for message in request.messages:
            if isinstance(message, UserMessage):
                pending_user.append({"type": "text", "text": message.content or "(empty)"})
            elif isinstance(message, SystemMessage):
                pending_user.append({"type": "text", "text": f"{NOTE}{message.content}"})
            elif isinstance(message, ToolResultMessage):
                pending_user.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": message.tool_call_id,
                        "content": message.content,
                        "is_error": message.is_error,
                    }
                )
            else:
                flush_user()
                blocks: list[ContentBlockParam] = []
                if message.content:
                    blocks.append({"type": "text", "text": message.content})
                for call in message.tool_calls:
                    blocks.append(
                        {
                            "type": "tool_use",
                            "id": call.id,
                            "name": call.name,
                            "input": call.arguments,
                        }
                    )
                if not blocks:
                    blocks.append({"type": "text", "text": "(no content)"})
                out.append({"role": "assistant", "content": blocks})
        flush_user()
        return out

    @staticmethod
    def wire_tools(request: Request) -> list[ToolParam]:
        return [
            {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
            for tool in request.tools
        ]

    def _attempt(
        self, request: Request, json_schema: dict[str, Any] | None
    ) -> Iterator[StreamEvent]:
        extra: dict[str, Any] = {}
        system = with_json_instruction(request.system, json_schema)
        if system:
            extra["system"] = [{"type": "text", "text": system, "cache_control": EPHEMERAL}]
        if request.tools:
            extra["tools"] = self.wire_tools(request)
        with self._client.messages.create(
            model=self._model,
            max_tokens=request.max_tokens or catalog.max_output_tokens(self._model),
            messages=mark_cache_prefix(self.wire_messages(request)),
            stream=True,
            **extra,
        ) as events:
            yield from self._parse(events)

    # -- reply ---------------------------------------------------------------------------------

    def _parse(self, events: Iterator[RawMessageStreamEvent]) -> Iterator[StreamEvent]:
        text: list[str] = []
        calls: dict[int, _PartialCall] = {}  # content-block index -> call
        ordinal: dict[int, int] = {}  # content-block index -> tool-call index
        input_tokens = output_tokens = cache_write = cache_read = 0
        stop_reason = "stop"
        model = self._model
        reply_id = ""
        for event in events:
            if isinstance(event, RawMessageStartEvent):
                reply_id, model = event.message.id, event.message.model or model
                usage = event.message.usage
                input_tokens = usage.input_tokens
                output_tokens = usage.output_tokens
                cache_write = usage.cache_creation_input_tokens or 0
                cache_read = usage.cache_read_input_tokens or 0
            elif isinstance(event, RawContentBlockStartEvent):
                block = event.content_block
                if isinstance(block, ToolUseBlock):
                    ordinal[event.index] = len(ordinal)
                    initial = {str(k): v for k, v in dict(block.input or {}).items()}  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
                    calls[event.index] = _PartialCall(block.id, block.name, initial)
                    yield ToolCallDelta(ordinal[event.index], block.id, block.name, "")
                elif isinstance(block, TextBlock) and block.text:
                    text.append(block.text)
                    yield TextDelta(block.text)
            elif isinstance(event, RawContentBlockDeltaEvent):
                delta = event.delta
                if isinstance(delta, WireTextDelta):
                    text.append(delta.text)
                    yield TextDelta(delta.text)
                elif isinstance(delta, InputJSONDelta) and event.index in calls:
                    calls[event.index].fragments.append(delta.partial_json)
                    yield ToolCallDelta(ordinal[event.index], None, None, delta.partial_json)
            elif isinstance(event, RawMessageDeltaEvent):
                if event.delta.stop_reason:
                    stop_reason = STOP_REASONS.get(event.delta.stop_reason, event.delta.stop_reason)
                output_tokens = event.usage.output_tokens
                if event.usage.input_tokens is not None:
                    input_tokens = event.usage.input_tokens
        tool_calls = tuple(
            ToolCall(
                id=call.id,
                name=call.name,
                arguments=decode_arguments("".join(call.fragments))
                if call.fragments
                else call.initial,
            )
            for _, call in sorted(calls.items())
        )
        usage = Usage(
            input_tokens=ANTHROPIC.prompt_tokens(
                {"input_tokens": input_tokens, "cache_read": cache_read, "cache_write": cache_write}
            ),
            output_tokens=output_tokens,
            cost_usd=catalog.cost_usd(
                self._model,
                input_tokens,
                output_tokens,
                cache_write_tokens=cache_write,
                cache_read_tokens=cache_read,
            ),
            cached_input_tokens=cache_read,
        )
        yield Done(
            Response(
                message=AssistantMessage("".join(text), tool_calls),
                usage=usage,
                stop_reason=stop_reason,
                model=model,
                raw={"id": reply_id},
            )
        )

    def _classify(self, exc: Exception) -> Failure | None:
        if isinstance(exc, anthropic.APIStatusError):
            message, code = _error_text(exc.body, str(exc))
            status = exc.status_code
            if status == 413 or code == "request_too_large":
                return Failure(f"{self.label}: HTTP {status}: {message}", False, overflow=True)
            return status_failure(
                self.label, status, message, code=code, headers=exc.response.headers
            )
        if isinstance(exc, anthropic.APIConnectionError):  # includes timeouts
            return Failure(f"{self.label}: cannot reach the server: {exc}", retryable=True)
        if isinstance(exc, anthropic.APIError):
            message, code = _error_text(exc.body, str(exc))
            return status_failure(self.label, None, message, code=code)
        if isinstance(exc, anthropic.AnthropicError):  # e.g. no API key could be resolved
            return Failure(f"{self.label}: {exc}", retryable=False)
        return None


def _error_text(body: object, fallback: str) -> tuple[str, str | None]:
    """``(message, type)`` from Anthropic's ``{"type": "error", "error": {type, message}}``
    (:attr:`veil.dialects.base.Dialect.error_of`); ``fallback`` when it says no message."""
    found = ANTHROPIC.error_of(body)
    if found is None:
        return fallback, None
    message, kind = found
    return message or fallback, kind
