"""``veil mcp``: an MCP server over stdio offering the catalogue's MCP verbs (:mod:`veil.verbs`):
remember, recall, facts, history, confirm, dispute — with an attempt log the convergence verbs
``attempts`` and ``record_attempt``, with the project's working memory ``expand``.

Binding (SPEC 4, 8): the scope and the authority of every write come from the server's
command line (``--scope``, ``--authority``), fixed for the life of the process. No tool takes a
``user_id``, ``scope``, ``author`` or ``actor`` argument, so a model talking to the server
cannot claim to be someone else or reach another tenant's memory — the known fault of earlier
implementations ("trust taken from whatever the caller claims over MCP").

Each tool's name, description and argument schema are its verb's; its result is the verb's
result in the HTTP API's wire types (:func:`veil.server.schemas.wire`), as JSON;
the protocol is :mod:`veil.server.mcp_protocol`.
A server started without a model answers ``remember`` with an error result
(:data:`~veil.server.schemas.NO_MODEL`'s message); the other tools work. The initialize result
names the server ``veil`` with Veil's version.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from veil import __version__
from veil.convergence.record import AttemptLog
from veil.memory import Memory, NoModel, VeilMemoryError
from veil.server.keys import Authority, is_reserved
from veil.server.mcp_protocol import JSONObject, McpServer, Tool, ToolFailed
from veil.server.schemas import NO_MODEL, wire
from veil.tape.events import validate_scope
from veil.verbs import Binding as VerbBinding
from veil.verbs import Services, Verb, WorkingMemory, offered

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


@dataclass(frozen=True)
class Binding:
    """Who this server acts for: one scope, one authority (from the command line)."""

    scope: str
    authority: Authority

    def __post_init__(self) -> None:
        validate_scope(self.scope)
        if is_reserved(self.scope):
            raise ValueError(f"scope {self.scope!r} is reserved")


def verb_tools(services: Services, binding: Binding) -> list[Tool]:
    """The catalogue's MCP verbs that ``services`` can serve, bound to ``binding``: no tool
    takes a scope or an author. ``remember`` is offered with a memory that has no model and
    answers with :data:`NO_MODEL`'s message (the server says at start that it cannot
    remember)."""
    who = VerbBinding(user_id=binding.scope, author=binding.authority)

    def tool(v: Verb) -> Tool:
        def run(arguments: JSONObject) -> JSONObject:
            try:
                return wire(v.call(services, who, arguments))
            except NoModel:
                raise ToolFailed(NO_MODEL.message) from None
            except (LookupError, ValueError, TypeError, VeilMemoryError) as exc:
                raise ToolFailed(str(exc).strip("'\"")) from None

        as_text = _content if v.name == "expand" else None
        return Tool(v.name, v.description, v.schema, run, v.read_only, as_text)

    has_memory = services.memory is not None
    return [
        tool(v)
        for v in offered("mcp")
        if v.available(services) or ("model" in v.needs and has_memory)
    ]


def _content(out: JSONObject) -> str:
    """``expand``'s answer reads as the restored result itself."""
    return str(out["content"])


def build_server(
    memory: Memory,
    binding: Binding,
    attempts: AttemptLog | None = None,
    extra: Sequence[Tool] = (),
    working: WorkingMemory | None = None,
) -> McpServer:
    """The MCP server; the caller owns ``memory`` (and ``attempts``' store). With ``attempts``
    (an :class:`AttemptLog` whose scope is the binding's) the convergence verbs are offered,
    with ``working`` (the project's working memory) ``expand`` and recall's earlier results;
    ``extra`` tools come last (the agents' ``hook`` tool)."""
    instructions = INSTRUCTIONS
    if attempts is not None:
        if attempts.scope != binding.scope:
            raise ValueError("the attempt log's scope must be the server's scope")
        instructions += " " + ATTEMPT_INSTRUCTIONS
    services = Services(memory=memory, working=working, attempts=attempts)
    tools = verb_tools(services, binding)
    return McpServer("veil", __version__, [*tools, *extra], instructions)


def run_stdio(
    memory: Memory,
    binding: Binding,
    attempts: AttemptLog | None = None,
    extra: Sequence[Tool] = (),
    working: WorkingMemory | None = None,
) -> None:
    """Serve over stdin/stdout until the client closes the stream."""
    build_server(memory, binding, attempts, extra, working).serve()


__all__ = ["Binding", "build_server", "run_stdio", "verb_tools"]
