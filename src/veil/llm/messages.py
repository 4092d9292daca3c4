"""Messages, tool calls and stream events as tagged dataclasses (one ``kind`` field each).

These are the provider-neutral types the agent loop works with; each provider converts them to
its wire format at the boundary and back. Frozen: a message is never edited in place — the
context engine renders a *new* list for every request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class SystemMessage:
    content: str
    kind: Literal["system"] = "system"


@dataclass(frozen=True)
class UserMessage:
    content: str
    kind: Literal["user"] = "user"


@dataclass(frozen=True)
class AssistantMessage:
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    kind: Literal["assistant"] = "assistant"


@dataclass(frozen=True)
class ToolResultMessage:
    """A tool's result. ``content`` is what the model was given. ``item`` names the context
    item that holds the result (for an expansion: the item it brought back), so nothing
    re-derives identity from call ids; ``details`` are the tool's typed details (a command's
    ``exit_code``, ``truncated``, an expansion's ``restored``). Providers send only the
    content."""

    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    item: str | None = None
    details: Mapping[str, Any] = field(default_factory=lambda: {})
    kind: Literal["tool"] = "tool"


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolResultMessage


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: name, description and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


def spec_text(spec: ToolSpec) -> str:
    """A tool's name, description and schema as one JSON text (what a request carries of it,
    near enough to estimate its tokens)."""
    return json.dumps(
        {"name": spec.name, "description": spec.description, "parameters": spec.parameters},
        ensure_ascii=False,
    )


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cached_input_tokens: int = 0
    """Input tokens the provider served from its prompt cache (0 when it does not say)."""


@dataclass(frozen=True)
class Request:
    """Exactly what is sent to a provider (after eviction and rendering)."""

    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int | None = None


@dataclass(frozen=True)
class Response:
    message: AssistantMessage
    usage: Usage = field(default_factory=Usage)
    stop_reason: str = "stop"
    model: str = ""
    raw: dict[str, Any] = field(default_factory=lambda: {})


@dataclass(frozen=True)
class TextDelta:
    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True)
class ToolCallDelta:
    index: int
    id: str | None
    name: str | None
    arguments_fragment: str
    kind: Literal["tool_call_delta"] = "tool_call_delta"


@dataclass(frozen=True)
class Done:
    response: Response
    kind: Literal["done"] = "done"


StreamEvent: TypeAlias = TextDelta | ToolCallDelta | Done


class ProviderError(RuntimeError):
    """A provider failed after its retries; ``retryable`` says whether trying later may help."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class ContextOverflow(ProviderError):
    """The request did not fit the model's context window (recognised per provider)."""
