"""The verb catalogue: every memory verb defined once (docs/architecture.md, "Verbs").

:data:`CATALOGUE` maps each verb's name to its :class:`Verb` — one typed function, one
description, one set of defaults. The surfaces are generated from it: the agent's ``veil_*``
tools (:mod:`veil.agent.memory_tools`), ``veil mcp``'s tools (:mod:`veil.server.mcp_server`),
the HTTP routes' bodies and queries (:mod:`veil.server.schemas`), ``veil memory``'s actions
(:mod:`veil.cli.memory_args`) and both framework adapters (:mod:`veil.integrations`). Each
surface offers the verbs listed for it in :data:`SURFACES` with the catalogue's schema; what
a surface binds (whose memory, whose word) is never an argument.

Importing this package imports no memory layer (a verb imports what it works on when it
runs), so ``veil``'s command line is built from it without slowing ``veil -p``.
"""

from __future__ import annotations

from typing import Literal

from veil.verbs import attempt_verbs, memory_verbs, working_verbs
from veil.verbs.signature import ArgumentError, Param
from veil.verbs.verb import Binding, Earlier, Restored, Services, Verb, WorkingMemory

Surface = Literal["agent", "mcp", "http", "cli", "pydantic_ai", "agents_sdk"]

VERBS: tuple[Verb, ...] = (
    memory_verbs.remember,
    memory_verbs.recall,
    memory_verbs.facts,
    memory_verbs.history,
    memory_verbs.confirm,
    memory_verbs.dispute,
    working_verbs.expand,
    working_verbs.load,
    working_verbs.manifest,
    working_verbs.pin,
    working_verbs.evict,
    working_verbs.conflicts,
    working_verbs.resolve,
    working_verbs.mark_turn,
    attempt_verbs.attempts,
    attempt_verbs.record_attempt,
)
CATALOGUE: dict[str, Verb] = {v.name: v for v in VERBS}

SURFACES: dict[Surface, tuple[str, ...]] = {
    "agent": (
        "recall",
        "remember",
        "history",
        "manifest",
        "load",
        "pin",
        "evict",
        "expand",
        "attempts",
        "conflicts",
        "resolve",
        "mark_turn",
    ),
    "mcp": (
        "remember",
        "recall",
        "facts",
        "history",
        "confirm",
        "dispute",
        "attempts",
        "record_attempt",
        "expand",
    ),
    "http": ("remember", "recall", "facts", "history", "confirm", "dispute"),
    "cli": ("remember", "recall", "facts", "history", "confirm", "dispute"),
    "pydantic_ai": ("recall", "remember", "expand"),
    "agents_sdk": ("recall", "remember", "expand"),
}
"""Which verbs each surface offers, in the order it lists them."""


def offered(surface: Surface) -> tuple[Verb, ...]:
    """The verbs ``surface`` offers, in its order."""
    return tuple(CATALOGUE[name] for name in SURFACES[surface])


__all__ = [
    "CATALOGUE",
    "SURFACES",
    "VERBS",
    "ArgumentError",
    "Binding",
    "Earlier",
    "Param",
    "Restored",
    "Services",
    "Surface",
    "Verb",
    "WorkingMemory",
    "offered",
]
