"""Export and import: a documented, versioned JSONL interchange format (docs/export-format.md).

Line 1 is a header; then every event of the user's scope in tape order, then the facts and
episodes they project to (for readers; import ignores them and rebuilds from the events).
Import is atomic (one batch) and idempotent by event id. ``restore=True`` reproduces the
memory exactly (recorded times included); otherwise imported facts are capped at third-party
trust, so nothing imported can outrank what the user says.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from veil.clock import format_time, parse_time
from veil.memory.model import Episode, Fact
from veil.tape import Event, JSONValue, Store, canonical_json
from veil.tape.events import validate_scope

FORMAT = "veil.memory.export"
VERSION = 1
IMPORTABLE_PREFIXES = ("memory.", "audit.")


class ImportFormatError(ValueError):
    """The file is not a Veil export this version can read; nothing was imported."""


@dataclass(frozen=True)
class ImportReport:
    user_id: str
    events: int
    already_present: int
    restored: bool


def _event_line(event: Event) -> dict[str, JSONValue]:
    return {
        "type": "event",
        "id": event.id,
        "kind": event.kind,
        "at": format_time(event.at),
        "recorded_at": format_time(event.recorded_at) if event.recorded_at else None,
        "actor": event.actor,
        "payload": event.payload,
        "provenance": event.provenance,
    }


def _value(value: Any) -> JSONValue:
    if isinstance(value, datetime):
        return format_time(value)
    if isinstance(value, tuple | list):
        return [_value(v) for v in cast(list[Any], value)]
    if isinstance(value, dict):
        return {str(k): _value(v) for k, v in cast(dict[Any, Any], value).items()}
    return cast(JSONValue, value)


def export_lines(
    store: Store, user_id: str, facts: list[Fact], episodes: list[Episode], now: datetime
) -> Iterator[str]:
    events = store.read(user_id)
    yield canonical_json(
        {
            "format": FORMAT,
            "version": VERSION,
            "user_id": user_id,
            "exported_at": format_time(now),
            "events": len(events),
            "facts": len(facts),
            "episodes": len(episodes),
        }
    )
    for event in events:
        yield canonical_json(_event_line(event))
    for fact in facts:
        yield canonical_json({"type": "fact", **cast(dict[str, JSONValue], _value(asdict(fact)))})
    for episode in episodes:
        yield canonical_json(
            {"type": "episode", **cast(dict[str, JSONValue], _value(asdict(episode)))}
        )


def write_export(path: Path, lines: Iterator[str]) -> int:
    tmp = path.with_name(path.name + ".tmp")
    count = 0
    with tmp.open("w", encoding="utf-8") as out:
        for line in lines:
            out.write(line + "\n")
            count += 1
    tmp.replace(path)
    return count


def read_export(
    path: Path, *, user_id: str | None, restore: bool, source: str
) -> tuple[str, list[Event]]:
    """Parse and validate a whole file before anything is written."""
    with path.open(encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    if not lines:
        raise ImportFormatError(f"{path}: empty file")
    try:
        header = json.loads(lines[0])
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"{path}:1: header is not JSON: {exc}") from None
    if not isinstance(header, dict) or cast(dict[str, Any], header).get("format") != FORMAT:
        raise ImportFormatError(f"{path}:1: not a {FORMAT} file")
    head = cast(dict[str, Any], header)
    if head.get("version") != VERSION:
        raise ImportFormatError(
            f"{path}:1: version {head.get('version')!r}; this Veil reads version {VERSION}"
        )
    scope = validate_scope(user_id or str(head.get("user_id", "")))
    events: list[Event] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise ImportFormatError(f"{path}:{number}: not JSON: {exc}") from None
        if not isinstance(item, dict):
            raise ImportFormatError(f"{path}:{number}: each line must be an object")
        record = cast(dict[str, Any], item)
        if record.get("type") != "event":
            continue
        try:
            events.append(_event_from(record, scope, restore=restore, source=source))
        except (KeyError, TypeError, ValueError) as exc:
            raise ImportFormatError(f"{path}:{number}: bad event: {exc}") from None
    return scope, events


def _event_from(record: dict[str, Any], scope: str, *, restore: bool, source: str) -> Event:
    kind = str(record["kind"])
    if not kind.startswith(IMPORTABLE_PREFIXES):
        raise ValueError(f"kind {kind!r} is not importable")
    payload = record["payload"]
    provenance: Any = record.get("provenance") or {}
    if not isinstance(payload, dict) or not isinstance(provenance, dict):
        raise ValueError("payload and provenance must be objects")
    body: dict[str, JSONValue] = dict(cast(dict[str, JSONValue], payload))
    if not restore and kind == "memory.fact":
        fact = dict(cast(dict[str, JSONValue], body["fact"]))
        fact["trust"] = 0
        fact["source"] = source
        body["fact"] = fact
    recorded = record.get("recorded_at")
    return Event(
        id=str(record["id"]),
        scope=scope,
        kind=kind,
        at=parse_time(str(record["at"])),
        actor=str(record["actor"]),
        payload=body,
        provenance=cast(dict[str, JSONValue], provenance),
        recorded_at=parse_time(str(recorded)) if restore and recorded else None,
    )
