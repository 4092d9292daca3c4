"""What a tool call of the agent behind the proxy addressed, for working memory (the engine
knows no tool by name; the hosts do). Pure.

Each host's tool vocabulary lives in its module under :mod:`veil.hosts` (Claude Code's ``Read``,
``Edit``, ``Bash``…; Codex's ``exec_command``, ``apply_patch``…), shared with the hooks; this
module turns its description into the engine's :class:`~veil.context.transcript.Addressed`. A
tool no host knows: its arguments name it (the engine's generic target). Veil's own ``expand``
(:data:`EXPAND_TOOLS`: as each host and Veil's adapters name it) is an expansion: its result
is the item it restores.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from veil import hosts
from veil.context.transcript import Addressed, Call

EXPAND_TOOLS = hosts.expand_calls()


def describe(call: Call, root: Path | None = None) -> Addressed:
    """What ``call`` addressed; paths relative to ``root`` when they lie inside it (with no
    root, as the agent wrote them)."""
    use = hosts.describe(call.name, call.arguments, root)
    if use is None:
        return Addressed()
    one = use.files[0] if len(use.files) == 1 else None
    return Addressed(
        target=use.target,
        reads=one if use.effect == "read" else None,
        partial=use.partial,
        writes=one if use.effect == "write" else None,
    )


def describer(root: Path | None) -> Callable[[Call], Addressed]:
    """:func:`describe` for the project at ``root`` (what a transcript takes)."""
    return lambda call: describe(call, root)
