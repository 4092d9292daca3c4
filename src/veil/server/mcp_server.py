"""``veil mcp``: an MCP server over stdio exposing remember, recall, facts, history, confirm,
dispute — and, with an attempt log, the convergence tools ``attempts`` and ``record_attempt``
(:mod:`veil.server.mcp_attempts`).

Binding (SPEC 4, 8): the scope and the authority of every write come from the server's
command line (``--scope``, ``--authority``), fixed for the life of the process. No tool takes a
``user_id``, ``scope``, ``author`` or ``actor`` argument, so a model talking to the server
cannot claim to be someone else or reach another tenant's memory — the known fault of earlier
implementations ("trust taken from whatever the caller claims over MCP").

Tool results are the same wire types as the HTTP API (:mod:`veil.server.schemas`), as JSON;
the protocol is :mod:`veil.server.mcp_protocol`.
A server started without a model answers ``remember`` with an error result
(:data:`~veil.server.schemas.NO_MODEL`'s message); the other tools work. The initialize result
names the server ``veil`` with Veil's version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from veil import __version__
from veil.convergence.record import AttemptLog
from veil.memory import Memory, MemoryError, UnknownFact
from veil.server.keys import Authority, is_reserved
from veil.server.mcp_attempts import attempt_tools
from veil.server.mcp_protocol import JSONObject, McpServer, Tool, ToolFailed, object_schema
from veil.server.schemas import MAX_TOKEN_BUDGET, NO_MODEL, fact_out, recall_out, report_out
from veil.tape.events import validate_scope

INSTRUCTIONS = (
    "Long-term memory of one person or project. Call recall before answering anything that "
    "depends on what they told you earlier (preferences, decisions, facts about them); call "
    "remember with what they say that is worth keeping. Memory changes only through evidence: "
    "a new statement supersedes the old one and the old one stays in history. Everything you "
    "write is attributed to this server's configured author, never to whoever you claim to be."
)
ATTEMPT_INSTRUCTIONS = (
    "For coding work: call attempts with the task before retrying a fix, and record_attempt "
    "after each edit, test run or command, so that what already failed is not tried again."
)
MAX_FACTS = 200
TIME = {
    "type": "string",
    "description": "An ISO-8601 time with an offset, e.g. 2024-05-01T09:30:00+00:00.",
}


@dataclass(frozen=True)
class Binding:
    """Who this server acts for: one scope, one authority (from the command line)."""

    scope: str
    authority: Authority

    def __post_init__(self) -> None:
        validate_scope(self.scope)
        if is_reserved(self.scope):
            raise ValueError(f"scope {self.scope!r} is reserved")


def _time(value: object) -> datetime | None:
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ToolFailed(f"not an ISO-8601 time: {text!r}") from None
    if parsed.tzinfo is None:
        raise ToolFailed(f"time {text!r} needs a timezone offset (e.g. +00:00)")
    return parsed


def _guarded(fn: Callable[[JSONObject], JSONObject]) -> Callable[[JSONObject], JSONObject]:
    """Memory's refusals (a bad value, an unknown fact) become error results the model reads."""

    def run(arguments: JSONObject) -> JSONObject:
        try:
            return fn(arguments)
        except UnknownFact as exc:
            raise ToolFailed(str(exc)) from None
        except (ValueError, TypeError, MemoryError) as exc:
            raise ToolFailed(str(exc)) from None

    return run


def memory_tools(memory: Memory, binding: Binding) -> list[Tool]:
    """The six memory tools, bound to ``binding``: no tool takes a scope or an author."""
    scope, author = binding.scope, binding.authority

    def remember(a: JSONObject) -> JSONObject:
        if memory.complete is None:
            raise ToolFailed(NO_MODEL.message)
        report = memory.remember(a["text"], user_id=scope, author=author, at=_time(a.get("at")))
        return report_out(report).model_dump(mode="json")

    def recall(a: JSONObject) -> JSONObject:
        budget = max(0, min(int(a.get("token_budget", 1000)), MAX_TOKEN_BUDGET))
        result = memory.recall(
            a["query"], user_id=scope, token_budget=budget, as_of=_time(a.get("as_of"))
        )
        return recall_out(result).model_dump(mode="json")

    def history(a: JSONObject) -> JSONObject:
        facts = memory.history(scope, a["subject"], a["relation"])
        return {"facts": [fact_out(f).model_dump(mode="json") for f in facts]}

    def facts(a: JSONObject) -> JSONObject:
        found = memory.facts(
            scope,
            include_history=bool(a.get("include_history", False)),
            subject=a.get("subject"),
            relation=a.get("relation"),
        )
        limit = max(1, min(int(a.get("limit", MAX_FACTS)), MAX_FACTS))
        shown = found[-limit:]
        return {
            "facts": [fact_out(f).model_dump(mode="json") for f in shown],
            "total": len(found),
            "truncated": len(shown) < len(found),
        }

    def confirm(a: JSONObject) -> JSONObject:
        return fact_out(memory.confirm(a["fact_id"], user_id=scope, actor=author)).model_dump(
            mode="json"
        )

    def dispute(a: JSONObject) -> JSONObject:
        fact = memory.dispute(a["fact_id"], user_id=scope, actor=author, reason=a["reason"])
        return fact_out(fact).model_dump(mode="json")

    text = {"type": "string"}
    fact_id = {"type": "string", "description": "The id of a fact, as recall or history show it."}
    return [
        Tool(
            "remember",
            "Record something the person said or that you observed, as evidence. A model "
            "extracts the facts from it; a new value of something known (a new editor, a new "
            "city) supersedes the old one, which stays in history. Returns the facts stored, "
            "superseded, reinforced and quarantined (claims by third parties are kept apart).",
            object_schema(
                {
                    "text": text | {"description": "What was said or observed, in full."},
                    "at": TIME
                    | {"description": "When it was said, if not now. " + TIME["description"]},
                },
                ["text"],
            ),
            _guarded(remember),
        ),
        Tool(
            "recall",
            "What the memory knows about a question, as text ready to read: current facts, "
            "recent episodes and unverified claims, within a token budget. Never calls a model.",
            object_schema(
                {
                    "query": text | {"description": "The question or topic, in plain words."},
                    "token_budget": {
                        "type": "integer",
                        "description": f"At most this many tokens of text (default 1000, at "
                        f"most {MAX_TOKEN_BUDGET}).",
                    },
                    "as_of": TIME
                    | {"description": "Answer with what was true then. " + TIME["description"]},
                },
                ["query"],
            ),
            _guarded(recall),
            read_only=True,
        ),
        Tool(
            "facts",
            "List what the memory currently holds as facts (each with its statement, subject, "
            "relation, value, status and who said it), newest last. Filter by subject or "
            "relation; include_history adds superseded and disputed values. For a question, "
            "recall is better: it ranks and fits a token budget.",
            object_schema(
                {
                    "subject": text
                    | {
                        "description": "Only facts about this subject: 'user' for the person, "
                        "or an entity's name."
                    },
                    "relation": text
                    | {"description": "Only this relation, e.g. prefers, uses_tool, located_at."},
                    "include_history": {
                        "type": "boolean",
                        "description": "Also list values that were superseded or disputed "
                        "(default false: current facts only).",
                    },
                    "limit": {
                        "type": "integer",
                        "description": f"At most this many facts, the newest (default and "
                        f"maximum {MAX_FACTS}).",
                    },
                }
            ),
            _guarded(facts),
            read_only=True,
        ),
        Tool(
            "history",
            "Every value one fact has had, oldest first, each with the window it was valid in: "
            "for 'what did they use before?'.",
            object_schema(
                {
                    "subject": text
                    | {"description": "Whose fact: 'user' for the person, or an entity's name."},
                    "relation": text
                    | {"description": "Which fact, e.g. prefers, located_at, works_as, uses_tool."},
                },
                ["subject", "relation"],
            ),
            _guarded(history),
            read_only=True,
        ),
        Tool(
            "confirm",
            "Re-affirm a fact the person confirmed is still true (it is no longer shown as "
            "possibly stale).",
            object_schema({"fact_id": fact_id}, ["fact_id"]),
            _guarded(confirm),
        ),
        Tool(
            "dispute",
            "Mark a fact as wrong, with why: it leaves recall and stays in history.",
            object_schema(
                {
                    "fact_id": fact_id,
                    "reason": text | {"description": "Why the fact is wrong, in a sentence."},
                },
                ["fact_id", "reason"],
            ),
            _guarded(dispute),
        ),
    ]


def build_server(
    memory: Memory,
    binding: Binding,
    attempts: AttemptLog | None = None,
    extra: Sequence[Tool] = (),
) -> McpServer:
    """The MCP server; the caller owns ``memory`` (and ``attempts``' store). With ``attempts``
    (an :class:`AttemptLog` whose scope is the binding's) the convergence tools are added;
    ``extra`` tools come last (the agents' ``hook`` tool)."""
    tools = memory_tools(memory, binding)
    instructions = INSTRUCTIONS
    if attempts is not None:
        if attempts.scope != binding.scope:
            raise ValueError("the attempt log's scope must be the server's scope")
        tools = [*tools, *attempt_tools(attempts)]
        instructions += " " + ATTEMPT_INSTRUCTIONS
    return McpServer("veil", __version__, [*tools, *extra], instructions)


def run_stdio(
    memory: Memory,
    binding: Binding,
    attempts: AttemptLog | None = None,
    extra: Sequence[Tool] = (),
) -> None:
    """Serve over stdin/stdout until the client closes the stream."""
    build_server(memory, binding, attempts, extra).serve()


__all__ = ["Binding", "build_server", "memory_tools", "run_stdio"]
