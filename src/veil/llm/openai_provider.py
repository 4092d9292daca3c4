"""OpenAI chat-completions provider (official ``openai`` SDK), streaming.

One class for every server that speaks ``/v1/chat/completions``: OpenAI itself, vLLM, llama.cpp's
server, Ollama's ``/v1`` and OpenRouter, selected by ``base_url``.

Wire contract (what :meth:`OpenAIProvider.wire_messages` produces):

- ``Request.system`` first as a ``system`` message (omitted when empty);
- an assistant message with tool calls carries ``tool_calls`` of ``type: function`` whose
  ``arguments`` is the JSON text of :attr:`ToolCall.arguments`;
- a tool result is a ``tool`` message with its ``tool_call_id`` (an error result's content is
  prefixed ``ERROR:``, the format has no flag for it);
- tools are ``{"type": "function", "function": {name, description, parameters}}``.

Reply contract: text deltas become :class:`TextDelta`, tool-call deltas :class:`ToolCallDelta`
(as they arrive, fragments and all), and :class:`Done` carries the assembled message. A tool
call's arguments are JSON-decoded; text that is not a JSON object is kept as ``{"_raw": text}`` so
the loop can tell the model its arguments were invalid instead of crashing. Usage comes from the
final chunk (``stream_options.include_usage``); servers that do not send it leave zeros. Cached
prompt tokens come from ``prompt_tokens_details.cached_tokens`` (OpenAI) or ``timings.cache_n``
(llama.cpp's server).

When the server returns no tool calls but the text holds some (local models write them as JSON
in the content), :mod:`veil.llm.text_tool_calls` recovers those naming an offered tool with
valid arguments; ``Response.raw["tool_calls_from_text"]`` counts them (and
``raw["content_as_sent"]`` keeps the text as the server sent it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlparse

import openai
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionChunk,
    ChatCompletionMessageParam,
    ChatCompletionMessageToolCallParam,
    ChatCompletionToolParam,
)

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
    ToolSpec,
    Usage,
    UserMessage,
)
from veil.llm.provider import SdkProvider
from veil.llm.text_tool_calls import recover
from veil.llm.tool_arguments import decode_arguments

OPENAI_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "unused"
"""Sent to servers that need no key: the SDK insists on one, and we must never fall back to
``$OPENAI_API_KEY`` — that would hand an OpenAI key to a third-party ``base_url``."""


@dataclass
class _PartialCall:
    """A tool call being assembled from streamed fragments."""

    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=lambda: [])


class OpenAIProvider(SdkProvider):
    """Streams chat completions from OpenAI or any OpenAI-compatible server.

    ``api_key`` None means ``$OPENAI_API_KEY`` for OpenAI itself and no key for another
    ``base_url``. ``context_window`` None looks the model up in :mod:`veil.llm.catalog`.
    The SDK client is created once and released by :meth:`close` (or ``with``).
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
        default_headers: Mapping[str, str] | None = None,
    ) -> None:
        self._model = model
        self.base_url = (base_url or OPENAI_BASE_URL).rstrip("/")
        self.is_openai = urlparse(self.base_url).hostname == "api.openai.com"
        if api_key is None and not self.is_openai:
            api_key = NO_KEY
        self._context_window = context_window or catalog.context_window(model)
        self.retry = retry or RetryPolicy(max_retries=max_retries)
        self.label = f"{self.base_url} ({model})"
        try:
            self._client = openai.OpenAI(
                api_key=api_key,
                base_url=self.base_url,
                timeout=timeout,
                max_retries=0,
                default_headers=default_headers,
            )
        except openai.OpenAIError as exc:
            raise ModelNotConfigured(f"{model}: {exc} {HOW_TO_CONFIGURE}") from None

    def stream(
        self, request: Request, *, json_schema: dict[str, Any] | None = None
    ) -> Iterator[StreamEvent]:
        """Stream one reply. ``json_schema`` (extraction) is sent as ``response_format``."""
        return stream_with_retries(
            lambda: self._attempt(request, json_schema), self._classify, self.retry
        )

    # -- request -------------------------------------------------------------------------------

    @staticmethod
    def wire_messages(request: Request) -> list[ChatCompletionMessageParam]:
        """The request's messages in chat-completions form (see the module doc)."""
        out: list[ChatCompletionMessageParam] = []
        if request.system:
            out.append({"role": "system", "content": request.system})
        for message in request.messages:
            if isinstance(message, SystemMessage):
                out.append({"role": "system", "content": message.content})
            elif isinstance(message, UserMessage):
                out.append({"role": "user", "content": message.content})
            elif isinstance(message, ToolResultMessage):
                content = f"ERROR: {message.content}" if message.is_error else message.content
                out.append(
                    {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
                )
            else:
                assistant: ChatCompletionAssistantMessageParam = {
                    "role": "assistant",
                    "content": message.content or None,
                }
                if message.tool_calls:
                    calls: list[ChatCompletionMessageToolCallParam] = [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": json.dumps(call.arguments),
                            },
                        }
                        for call in message.tool_calls
                    ]
                    assistant["tool_calls"] = calls
                out.append(assistant)
        return out

    @staticmethod
    def wire_tools(request: Request) -> list[ChatCompletionToolParam]:
        return [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
            for tool in request.tools
        ]

    def _attempt(
        self, request: Request, json_schema: dict[str, Any] | None
    ) -> Iterator[StreamEvent]:
        extra: dict[str, Any] = {}
        if request.tools:
            extra["tools"] = self.wire_tools(request)
        if request.max_tokens is not None:
            # OpenAI's reasoning models reject max_tokens; other servers may not know the new name.
            key = "max_completion_tokens" if self.is_openai else "max_tokens"
            extra[key] = request.max_tokens
        if json_schema is not None:
            extra["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "extraction", "schema": json_schema},
            }
        with self._client.chat.completions.create(
            model=self._model,
            messages=self.wire_messages(request),
            stream=True,
            stream_options={"include_usage": True},
            **extra,
        ) as chunks:
            yield from self._parse(chunks, request.tools)

    # -- reply ---------------------------------------------------------------------------------

    def _parse(
        self, chunks: Iterator[ChatCompletionChunk], offered: Sequence[ToolSpec] = ()
    ) -> Iterator[StreamEvent]:
        text: list[str] = []
        calls: dict[int, _PartialCall] = {}
        usage = Usage()
        stop_reason = "stop"
        model = self._model
        reply_id = ""
        for chunk in chunks:
            reply_id = chunk.id or reply_id
            model = chunk.model or model
            if chunk.usage is not None:
                details = chunk.usage.prompt_tokens_details
                cached = (details.cached_tokens if details is not None else None) or 0
                timings: object = (chunk.model_extra or {}).get("timings")
                if not cached and isinstance(timings, dict):  # llama.cpp's server
                    cached = int(cast(dict[str, Any], timings).get("cache_n") or 0)
                usage = Usage(
                    input_tokens=chunk.usage.prompt_tokens,
                    output_tokens=chunk.usage.completion_tokens,
                    cost_usd=catalog.cost_usd(
                        self._model, chunk.usage.prompt_tokens, chunk.usage.completion_tokens
                    ),
                    cached_input_tokens=cached,
                )
            for choice in chunk.choices:
                if choice.index != 0:
                    continue
                delta = choice.delta
                if delta.content:
                    text.append(delta.content)
                    yield TextDelta(delta.content)
                for tc in delta.tool_calls or []:
                    partial = calls.setdefault(tc.index, _PartialCall())
                    partial.id = partial.id or tc.id
                    name = tc.function.name if tc.function else None
                    if name and name != partial.name:
                        partial.name += name
                    fragment = (tc.function.arguments if tc.function else None) or ""
                    partial.arguments.append(fragment)
                    yield ToolCallDelta(tc.index, tc.id, name, fragment)
                if choice.finish_reason:
                    stop_reason = choice.finish_reason
        tool_calls = tuple(
            ToolCall(
                id=partial.id or f"call_{index}",
                name=partial.name,
                arguments=decode_arguments("".join(partial.arguments)),
            )
            for index, partial in sorted(calls.items())
        )
        content = "".join(text)
        raw: dict[str, Any] = {"id": reply_id, "base_url": self.base_url}
        if not tool_calls and offered:
            found = recover(content, offered, id_prefix=f"call_{reply_id or 'text'}")
            if found.calls:
                raw["content_as_sent"] = content  # what the server sent, calls included
                tool_calls, content = found.calls, found.content
                stop_reason = "tool_calls"
                raw["tool_calls_from_text"] = len(found.calls)
            if found.problems:
                raw["tool_call_problems"] = list(found.problems)
        yield Done(
            Response(
                message=AssistantMessage(content, tool_calls),
                usage=usage,
                stop_reason=stop_reason,
                model=model,
                raw=raw,
            )
        )

    def _classify(self, exc: Exception) -> Failure | None:
        if isinstance(exc, openai.APIStatusError):
            return status_failure(
                self.label,
                exc.status_code,
                exc.message,
                code=exc.code,
                headers=exc.response.headers,
            )
        if isinstance(exc, openai.APIConnectionError):  # includes timeouts
            return Failure(f"{self.label}: cannot reach the server: {exc}", retryable=True)
        if isinstance(exc, openai.APIError):  # an error event inside the stream
            return status_failure(self.label, None, exc.message, code=exc.code)
        if isinstance(exc, openai.OpenAIError):  # e.g. credentials the SDK cannot resolve
            return Failure(f"{self.label}: {exc}", retryable=False)
        return None
