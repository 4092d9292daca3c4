"""``veil mcp``: an MCP server over stdio exposing remember, recall, history, confirm, dispute.

Binding (SPEC 4, 8): the scope and the authority of every write come from the server's
command line (``--scope``, ``--authority``), fixed for the life of the process. No tool takes a
``user_id``, ``scope``, ``author`` or ``actor`` argument, so a model talking to the server
cannot claim to be someone else or reach another tenant's memory — the known fault of earlier
implementations ("trust taken from whatever the caller claims over MCP").

Tool results are the same wire types as the HTTP API (:mod:`veil.server.schemas`), as JSON.
A server started without a model answers ``remember`` with an error result
(:data:`~veil.server.schemas.NO_MODEL`'s message); the other tools work. The initialize result
names the server ``veil`` with Veil's version.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from veil import __version__
from veil.memory import Memory, MemoryError, UnknownFact
from veil.server.keys import Authority, is_reserved
from veil.server.schemas import MAX_TOKEN_BUDGET, NO_MODEL, fact_out, recall_out, report_out
from veil.tape.events import validate_scope


@dataclass(frozen=True)
class Binding:
    """Who this server acts for: one scope, one authority (from the command line)."""

    scope: str
    authority: Authority

    def __post_init__(self) -> None:
        validate_scope(self.scope)
        if is_reserved(self.scope):
            raise ValueError(f"scope {self.scope!r} is reserved")


def _time(value: str | None) -> datetime | None:
    if value is None or not value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ToolError(f"not an ISO-8601 time: {value!r}") from None
    if parsed.tzinfo is None:
        raise ToolError(f"time {value!r} needs a timezone offset (e.g. +00:00)")
    return parsed


def build_server(memory: Memory, binding: Binding) -> MCPServer:
    """The MCP server; the caller owns ``memory``."""
    server = MCPServer(
        "veil",
        version=__version__,
        instructions=(
            "Long-term memory. remember() records what was said; recall() answers from it. "
            "Everything you write is attributed to this server's configured author."
        ),
    )
    scope, author = binding.scope, binding.authority

    @server.tool()
    def remember(text: str, at: str | None = None) -> dict[str, Any]:
        """Record evidence (what was said or observed) in long-term memory. ``at`` is an
        optional ISO-8601 time with offset (default: now). Returns what was extracted."""
        if memory.complete is None:
            raise ToolError(NO_MODEL.message)
        try:
            report = memory.remember(text, user_id=scope, author=author, at=_time(at))
        except (ValueError, TypeError, MemoryError) as exc:
            raise ToolError(str(exc)) from None
        return report_out(report).model_dump(mode="json")

    @server.tool()
    def recall(query: str, token_budget: int = 1000, as_of: str | None = None) -> dict[str, Any]:
        """What the memory knows about ``query``, rendered within ``token_budget`` tokens;
        ``as_of`` answers with what was valid at that time. Never calls a model."""
        budget = max(0, min(int(token_budget), MAX_TOKEN_BUDGET))
        try:
            result = memory.recall(query, user_id=scope, token_budget=budget, as_of=_time(as_of))
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        return recall_out(result).model_dump(mode="json")

    @server.tool()
    def history(subject: str, relation: str) -> dict[str, Any]:
        """Every version of ``subject``/``relation``, oldest first, with validity windows."""
        try:
            facts = memory.history(scope, subject, relation)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        return {"facts": [fact_out(f).model_dump(mode="json") for f in facts]}

    @server.tool()
    def confirm(fact_id: str) -> dict[str, Any]:
        """Re-affirm a current or disputed fact (refreshes it; clears staleness)."""
        try:
            fact = memory.confirm(fact_id, user_id=scope, actor=author)
        except UnknownFact:
            raise ToolError(f"no fact {fact_id!r} in this memory") from None
        except (ValueError, MemoryError) as exc:
            raise ToolError(str(exc)) from None
        return fact_out(fact).model_dump(mode="json")

    @server.tool()
    def dispute(fact_id: str, reason: str) -> dict[str, Any]:
        """Mark a fact as disputed, with why: it leaves recall and stays in history."""
        try:
            fact = memory.dispute(fact_id, user_id=scope, actor=author, reason=reason)
        except UnknownFact:
            raise ToolError(f"no fact {fact_id!r} in this memory") from None
        except (ValueError, MemoryError) as exc:
            raise ToolError(str(exc)) from None
        return fact_out(fact).model_dump(mode="json")

    return server


def run_stdio(memory: Memory, binding: Binding) -> None:
    """Serve over stdin/stdout until the client closes the stream."""
    build_server(memory, binding).run("stdio")
