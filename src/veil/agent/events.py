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
    """A call finished. ``blocked`` is the reason it did not run (``blocked_by`` says who
    refused: a ``hook`` such as the convergence monitor, or the ``permission`` policy);
    ``exit_code`` is a command's exit status when the tool reports one."""

    turn: int
    call: ToolCall
    result: ToolResultMessage
    blocked: str | None = None
    exit_code: int | None = None
    blocked_by: Literal["hook", "permission"] | str | None = None
    kind: Literal["tool_end"] = "tool_end"


@dataclass(frozen=True)
class Notice:
    """Something the memory layer did that the user should see (eviction, escalation…)."""

    turn: int
    topic: str
    text: str
    kind: Literal["notice"] = "notice"


@dataclass(frozen=True)
class Evicted:
    """Items left the prompt (``to`` warm or cold) at the turn boundary; each with its id, what
    it was, its tokens and the pointer that brings it back."""

    turn: int
    items: tuple[EvictedItem, ...]
    threshold: float
    live_tokens: int
    budget: int
    kind: Literal["evicted"] = "evicted"


@dataclass(frozen=True)
class EvictedItem:
    id: str
    what: str
    tokens: int
    to: str
    stage: int
    pointer: str
    tool_call_id: str | None = None


@dataclass(frozen=True)
class Expanded:
    """An evicted item came back into the prompt (the model expanded or loaded it)."""

    turn: int
    id: str
    what: str
    tokens: int
    kind: Literal["expanded"] = "expanded"


@dataclass(frozen=True)
class AttemptRecorded:
    """The convergence record got an attempt at the current goal."""

    turn: int
    action: str
    target: str
    outcome: str
    fingerprint: str | None
    tool_call_id: str | None
    kind: Literal["attempt"] = "attempt"


@dataclass(frozen=True)
class LevelChanged:
    """The convergence level of the goal changed (rose on an escalation, fell on a pass)."""

    turn: int
    level: int
    previous: int
    reasons: tuple[str, ...]
    kind: Literal["level"] = "level"


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
    | Evicted
    | Expanded
    | AttemptRecorded
    | LevelChanged
    | TurnEnd
    | AgentEnd
)
