"""What a capture becomes: a new context item, and what a tool call did. Pure.

The engine knows no tool by name: the caller says what a call addressed and read or wrote;
here that becomes the item's kind (a whole or partial file read is a ``file`` item), its
effect, its code references (the path, then paths the output prints) and, when the caller
named no target, a target built from the label and the call's scalar arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from veil.clock import format_time
from veil.context.config import ContextConfig
from veil.context.items import ContextItem, Effect, ItemKind, TurnKind
from veil.context.signals import paths_in, tags_of
from veil.tape import new_id

MAX_CODE_REFS = 16


@dataclass(frozen=True)
class CallEffect:
    """What a tool call did, as the item records it."""

    kind: ItemKind
    effect: Effect | None
    code_refs: tuple[str, ...]


def call_effect(
    output: str, *, reads: str | None, partial: bool, writes: str | None, is_error: bool
) -> CallEffect:
    """A read result is a ``file`` item (``read_part`` when only a range); a failed read has no
    effect; a write is a write, whatever the output says."""
    path = reads or writes or ""
    refs = tuple(dict.fromkeys([p for p in (path, *paths_in(output)) if p]))[:MAX_CODE_REFS]
    effect: Effect | None = None
    if writes:
        effect = "write"
    elif reads and not is_error:
        effect = "read_part" if partial else "read"
    return CallEffect("file" if reads else "tool_output", effect, refs)


def generic_target(arguments: Mapping[str, Any]) -> str | None:
    """What a call addressed when the caller did not say: its scalar arguments in name order
    (the stub names the tool already)."""
    parts = [str(v) for _, v in sorted(arguments.items()) if isinstance(v, (str, int, float))]
    return " ".join(parts).strip()[:500] or None


@dataclass(frozen=True)
class Origin:
    """Where and when an item is made: the session clock, the wall clock, the session, and the
    configuration and token counter that size it."""

    tick: int
    now: datetime
    session_id: str
    config: ContextConfig
    count_tokens: Callable[[str], int]


def new_item(
    kind: ItemKind,
    content: str,
    origin: Origin,
    *,
    target: str | None = None,
    tool_name: str | None = None,
    tool_call_id: str | None = None,
    code_refs: tuple[str, ...] = (),
    tags: tuple[str, ...] | None = None,
    pinned: bool = False,
    manual: bool = False,
    turn_kind: TurnKind | None = None,
    effect: Effect | None = None,
    parent: str | None = None,
    shown: str | None = None,
) -> ContextItem:
    """A fresh live item: accessed once, now, with the kind's initial FSRS stability on both
    horizons; tags from its target and content unless given. ``shown``: the shorter text the
    prompt carries instead of ``content`` (a tool's truncated output; ``content`` is then the
    full output), which is what the item's tokens count."""
    config, tick = origin.config, origin.tick
    partial = shown is not None and shown != content
    return ContextItem(
        id=new_id("ci"),
        kind=kind,
        content=content,
        tokens=origin.count_tokens(shown if shown is not None and partial else content),
        tags=tags if tags is not None else tags_of(f"{target or ''} {content}"),
        code_refs=code_refs,
        pinned=pinned,
        manual=manual,
        stability=config.initial_stability[kind],
        difficulty=config.initial_difficulty[kind],
        durable_stability=config.initial_stability[kind],
        last_access_tick=tick,
        last_access_at=format_time(origin.now),
        access_count=1,
        tier="live",
        turn_kind=turn_kind,
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        target=target,
        session_id=origin.session_id,
        created_tick=tick,
        manual_tick=tick if manual else None,
        effect=effect,
        parent=parent,
        partial=partial,
    )
