"""Resume: what a session's working memory was, read back from the context projection.

The engine's state is a projection of the tape (``context.*`` events, see
:mod:`veil.context.projection`); a new :class:`~veil.context.engine.ContextEngine` for a
session that already ran reads it here — the items in capture order, the clock, the threshold,
the task and the contradictions — and applies it (:func:`restore_into` puts the items and the
contradictions back; the engine takes the clock, threshold, task and calibration). Reads only:
nothing is written on resume.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, cast

from veil.context.calibration import Calibration
from veil.context.conflicts import Belief, Conflict, ConflictBook, content_digest
from veil.context.items import ContextItem
from veil.context.projection import CONFLICTS, ITEMS, STATE
from veil.context.records import item_from_row
from veil.context.search import IndexQueue
from veil.context.threshold import Threshold
from veil.context.workingset import WorkingSet
from veil.tape import Store


@dataclass(frozen=True)
class ResumedItem:
    item: ContextItem
    indexed: bool
    """Whether a demoted item was already made searchable (``context.indexed``)."""


@dataclass(frozen=True)
class Resumed:
    """A session's working memory as the projection holds it (empty for a new session)."""

    items: tuple[ResumedItem, ...] = ()
    tick: int = 0
    threshold: Threshold | None = None
    task: str = ""
    conflicts: tuple[Conflict, ...] = ()
    calibration: Calibration = field(default_factory=Calibration)


def read_session(store: Store, *, scope: str, session_id: str) -> Resumed:
    """The session's items (in capture order), clock, threshold, task and contradictions."""
    where = {"session_id": session_id}
    rows = store.fetch(ITEMS, scope=scope, where=where, order_by=["seq"])
    items = tuple(ResumedItem(item_from_row(row), bool(row["indexed"])) for row in rows)
    conflicts = tuple(_conflict(row) for row in store.fetch(CONFLICTS, scope=scope, where=where))
    state = store.fetch(STATE, scope=scope, where=where)
    if not state:
        return Resumed(items, conflicts=conflicts)
    row = state[0]
    last = row["last_regret_tick"]
    threshold = Threshold(
        float(cast(float, row["threshold"])), int(cast(int, last)) if last is not None else None
    )
    return Resumed(
        items,
        tick=int(cast(int, row["tick"])),
        threshold=threshold,
        task=str(row["task"] or ""),
        conflicts=conflicts,
        calibration=Calibration(
            float(cast(float, row["ratio"] or 1.0)), int(cast(int, row["samples"] or 0))
        ),
    )


def read_item(store: Store, *, scope: str, item_id: str, session_id: str) -> ContextItem | None:
    """An item of another session of this project, adopted by ``session_id`` (scope-bound:
    never another project's)."""
    rows = store.fetch(ITEMS, scope=scope, where={"item_id": item_id})
    if not rows:
        return None
    return replace(item_from_row(rows[0]), session_id=session_id)


def restore_into(
    resumed: Resumed, ws: WorkingSet, book: ConflictBook, to_index: IndexQueue
) -> bool:
    """Put a resumed session's items back into ``ws`` in capture order (a demoted item that was
    not yet searchable is queued on ``to_index`` again) and what they and its contradictions
    tell conflict detection into ``book``. Whether one of the items is the session's intent."""
    has_intent = False
    for entry in resumed.items:
        item = entry.item
        ws.add(item)
        if item.tier != "live" and not entry.indexed:
            to_index.demoted(item.id)
        has_intent = has_intent or item.turn_kind == "intent"
        recall_files(book, item)
    for conflict in resumed.conflicts:
        book.restore(conflict)
    return has_intent


def recall_files(book: ConflictBook, item: ContextItem) -> None:
    """What conflict detection knows about files from a resumed item: an earlier whole-file
    read is a belief about its content; one of our own writes explains a later change."""
    path = item.code_refs[0] if item.code_refs else None
    if path is None:
        return
    if item.effect == "write":
        book.note_write(path, item.created_tick)
    elif item.effect == "read":
        digest = content_digest(item.content)
        belief = Belief(item.id, path, "content", digest, item.tool_call_id, item.session_id)
        book.add(belief, item.created_tick, file_path=path)


def _conflict(row: dict[str, Any]) -> Conflict:
    a, b = (Belief(**cast(dict[str, Any], row[k])) for k in ("a", "b"))
    return Conflict(
        str(row["conflict_id"]),
        str(row["subject"]),
        str(row["relation"]),
        a,
        b,
        bool(row["resolved"]),
        cast(str | None, row["kept"]),
        cast(str | None, row["reason"]),
    )
