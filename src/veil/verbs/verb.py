"""A memory verb: one typed function, one description, one set of defaults — and what a
surface needs to offer it.

Contract: a :class:`Verb` is built by :func:`verb` from a function ``fn(on: Services, who:
Binding, *, <arguments>)``. The two positional parameters are never arguments: ``on`` is what
the verb works on (the long-term memory, the working memory, the attempt log) and ``who`` is
what a surface binds from its credentials or its session — whose memory (``user_id``), whose
word a write counts as (``author``), the session, the current goal (SPEC 4, 8). No surface lets
a caller name them. The keyword-only parameters are the arguments, read by
:mod:`veil.verbs.signature`: their types, defaults and descriptions are the schema every
surface offers.

``needs`` says what must be present for the verb to work (any one of them): a surface that
offers only what can work (the agent, the adapters) asks :meth:`Verb.available`; the HTTP API
and the MCP server offer their verbs always and answer a missing model with their own error.

``text`` renders a result for a model to read (the agent's tools, the adapters); the HTTP API,
the MCP server and ``veil memory --json`` encode the same result with the wire types of
:mod:`veil.server.schemas`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from veil.verbs.signature import Param, object_schema, parameters_of, parse_arguments

if TYPE_CHECKING:
    from veil.context import ContextEngine
    from veil.convergence.record import AttemptLog
    from veil.memory import Memory
    from veil.memory.model import Author

Need = Literal["memory", "model", "working", "engine", "attempts"]
"""``memory``: a long-term memory; ``model``: one that can extract (``complete``); ``working``:
a working memory to search and restore from; ``engine``: the agent's own context engine;
``attempts``: an attempt log."""


@dataclass(frozen=True)
class Earlier:
    """A result moved out of the context, as recall lists it."""

    pointer: str
    tool: str
    target: str
    tokens: int


@dataclass(frozen=True)
class Restored:
    """A result brought back by its pointer, byte-identical to what was kept."""

    item_id: str
    pointer: str
    tool: str
    target: str
    tokens: int
    content: str


class WorkingMemory(Protocol):
    """What recall and expand use of a working memory (the harness's engine, an adapter's
    window, the project's store read by ``veil mcp``)."""

    @property
    def expand_tool(self) -> str:
        """The name of the tool that restores a pointer on this surface."""
        ...

    def search(self, query: str, *, limit: int) -> Sequence[Earlier]:
        """Results out of the context that match ``query``, best first (none is fine)."""
        ...

    def expand(self, pointer: str) -> Restored:
        """The result ``pointer`` stands for; ``LookupError`` when it names nothing."""
        ...

    def load(self, pointer: str) -> Restored:
        """Like :meth:`expand`, by hand (the agent's ``load``); may be the same."""
        ...


@dataclass(frozen=True)
class Services:
    """What verbs work on; a surface fills what it has."""

    memory: Memory | None = None
    working: WorkingMemory | None = None
    engine: ContextEngine | None = None
    attempts: AttemptLog | None = None

    def has(self, need: Need) -> bool:
        if need == "model":
            return self.memory is not None and self.memory.complete is not None
        return getattr(self, need) is not None


@dataclass(frozen=True)
class Binding:
    """What a surface binds for every call: never an argument a caller can set."""

    user_id: str = ""
    author: Author = "user"
    session_id: str | None = None
    goal_id: str | None = None
    """The agent's current goal (``attempts`` without a goal reads it)."""


Run = Callable[..., Any]


@dataclass(frozen=True)
class Verb:
    """One verb of the catalogue (see the module docstring)."""

    name: str
    description: str
    params: tuple[Param, ...]
    fn: Run
    needs: frozenset[Need]
    read_only: bool
    text: Callable[[Any], str]
    afn: Callable[..., Awaitable[Any]] | None = None
    schema: dict[str, Any] = field(default_factory=lambda: {}, compare=False)

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    def available(self, on: Services) -> bool:
        """Whether the verb can work over ``on``."""
        return any(on.has(n) for n in self.needs)

    def call(self, on: Services, who: Binding, arguments: Mapping[str, object]) -> Any:
        """Check ``arguments`` against the schema, then run the verb."""
        return self.fn(on, who, **parse_arguments(self.params, arguments))

    async def acall(self, on: Services, who: Binding, arguments: Mapping[str, object]) -> Any:
        """:meth:`call` for an event loop: the async twin when the verb has one (the memory's
        ``arecall``/``aremember``), else the call on a worker thread."""
        import asyncio  # here: importing the catalogue stays quick

        parsed = parse_arguments(self.params, arguments)
        if self.afn is not None:
            return await self.afn(on, who, **parsed)
        return await asyncio.to_thread(self.fn, on, who, **parsed)


def verb(
    *,
    needs: Sequence[Need],
    read_only: bool,
    text: Callable[[Any], str],
    twin: Callable[..., Awaitable[Any]] | None = None,
) -> Callable[[Run], Verb]:
    """Make a function a :class:`Verb` (its name, docstring and signature are the schema)."""

    def make(fn: Run) -> Verb:
        description, params = parameters_of(fn)
        return Verb(
            name=fn.__name__,
            description=description,
            params=params,
            fn=fn,
            needs=frozenset(needs),
            read_only=read_only,
            text=text,
            afn=twin,
            schema=object_schema(params),
        )

    return make


__all__ = [
    "Binding",
    "Earlier",
    "Need",
    "Restored",
    "Services",
    "Verb",
    "WorkingMemory",
    "verb",
]
