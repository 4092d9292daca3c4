"""The agent's event stream: tagged dataclasses, one ``kind`` each (``--json`` prints them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from veil.llm.messages import AssistantMessage, Request, Response, ToolCall, ToolResultMessage


@dataclass(frozen=True)
class AgentStart:
    session_id: str
    kind: Literal["agent_start"] = "agent_start"


@dataclass(frozen=True)
class TurnStart:
    turn: int
    kind: Literal["turn_start"] = "turn_start"


@dataclass(frozen=True)
class RequestSent:
    """Exactly what went to the provider (after eviction and rendering) and what came back."""

    turn: int
    request: Request
    response: Response
    kind: Literal["request"] = "request"


@dataclass(frozen=True)
class MessageUpdate:
    turn: int
    delta: str
    kind: Literal["message_update"] = "message_update"


@dataclass(frozen=True)
class MessageEnd:
    turn: int
    message: AssistantMessage
    kind: Literal["message_end"] = "message_end"


@dataclass(frozen=True)
class ToolStart:
    turn: int
    call: ToolCall
    kind: Literal["tool_start"] = "tool_start"


@dataclass(frozen=True)
class ToolEnd:
    turn: int
    call: ToolCall
    result: ToolResultMessage
    blocked: str | None = None
    kind: Literal["tool_end"] = "tool_end"


@dataclass(frozen=True)
class Notice:
    """Something the memory layer did that the user should see (eviction, escalation…)."""

    turn: int
    topic: str
    text: str
    kind: Literal["notice"] = "notice"


@dataclass(frozen=True)
class TurnEnd:
    turn: int
    kind: Literal["turn_end"] = "turn_end"


StopReason = Literal["done", "max_turns", "stopped", "aborted", "error", "script_exhausted"]


@dataclass(frozen=True)
class AgentEnd:
    reason: StopReason
    message: str
    turns: int
    kind: Literal["agent_end"] = "agent_end"


AgentEvent: TypeAlias = (
    AgentStart
    | TurnStart
    | RequestSent
    | MessageUpdate
    | MessageEnd
    | ToolStart
    | ToolEnd
    | Notice
    | TurnEnd
    | AgentEnd
)
