"""Export and import: a documented, versioned JSONL interchange format (docs/export-format.md).

Line 1 is a header; then every event of the user's scope in tape order, then the facts and
episodes they project to (for readers; import ignores them and rebuilds from the events).
Import is atomic (one batch) and idempotent by event id. ``restore=True`` reproduces the
memory exactly (recorded times included); otherwise imported facts are capped at third-party
trust, so nothing imported can outrank what the user says.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from veil.clock import format_time, parse_time
from veil.memory import events as kinds
from veil.memory.model import Episode, Fact
from veil.tape import Event, JSONValue, Store, canonical_json
from veil.tape.events import seal, validate_scope
from veil.tape.kinds import check_payload as tape_check_payload

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
    """Parse and validate a whole file before anything is written: every problem is an
    :class:`ImportFormatError` naming the line, raised before the store is touched."""
    if user_id is not None:
        validate_scope(user_id)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ImportFormatError(f"{path}:{line}: not UTF-8: {exc.reason}") from None
    # Only the JSON Lines separators: str.splitlines() would also split inside a JSON string
    # at U+2028/U+2029/U+0085 (which canonical JSON writes unescaped), breaking the line.
    lines = _NEWLINE.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise ImportFormatError(f"{path}: empty file")
    header = _json_line(path, 1, lines[0], "header is not JSON")
    if not isinstance(header, dict) or cast(dict[str, Any], header).get("format") != FORMAT:
        raise ImportFormatError(f"{path}:1: not a {FORMAT} file")
    head = cast(dict[str, Any], header)
    if head.get("version") != VERSION:
        raise ImportFormatError(
            f"{path}:1: version {_short(head.get('version'))}; this Veil reads version {VERSION}"
        )
    if user_id is None:
        try:
            user_id = validate_scope(head.get("user_id"))  # pyright: ignore[reportArgumentType]
        except ValueError as exc:
            raise ImportFormatError(f"{path}:1: bad user_id: {exc}") from None
    scope = user_id
    events: list[Event] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        item = _json_line(path, number, line, "not JSON")
        if not isinstance(item, dict):
            raise ImportFormatError(f"{path}:{number}: each line must be an object")
        record = cast(dict[str, Any], item)
        if record.get("type") != "event":
            continue
        try:
            event = _event_from(record, scope, restore=restore, source=source)
            seal(event)  # the tape's own checks: id, kind, actor, JSON, UTF-8
        except (ValueError, RecursionError) as exc:
            raise ImportFormatError(f"{path}:{number}: bad event: {exc}") from None
        if event.id in first_line:
            raise ImportFormatError(
                f"{path}:{number}: event {event.id} already appears on line {first_line[event.id]}"
            )
        first_line[event.id] = number
        events.append(event)
    return scope, events


_NEWLINE = re.compile(r"\r\n|\r|\n")


def _json_line(path: Path, number: int, line: str, what: str) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError) as exc:  # ValueError: also too-long integers
        raise ImportFormatError(f"{path}:{number}: {what}: {_short(exc)}") from None


def _short(value: object) -> str:
    text = repr(value) if not isinstance(value, Exception) else str(value)
    return text if len(text) <= 200 else text[:200] + "…"


def _event_from(record: dict[str, Any], scope: str, *, restore: bool, source: str) -> Event:
    """The event another tape recorded, copied into ``scope``. Not built by a
    :class:`~veil.tape.recorder.Recorder` (a writer of new events): its id (which makes the import
    idempotent), time, actor and provenance are the original writer's. ``restore=False`` caps
    an imported fact's trust and names the import as its source."""
    event_id, kind, actor = record.get("id"), record.get("kind"), record.get("actor")
    if not isinstance(event_id, str) or not isinstance(kind, str) or not isinstance(actor, str):
        raise ValueError('"id", "kind" and "actor" must be strings')
    if not kind.startswith(IMPORTABLE_PREFIXES):
        raise ValueError(f"kind {_short(kind)} is not importable")
    payload = record.get("payload")
    provenance: Any = record.get("provenance") or {}
    if not isinstance(payload, dict) or not isinstance(provenance, dict):
        raise ValueError("payload and provenance must be objects")
    body: dict[str, JSONValue] = dict(cast(dict[str, JSONValue], payload))
    check_payload(kind, body)
    if not restore and kind == kinds.FACT.name:
        fact = dict(cast(dict[str, JSONValue], body["fact"]))
        fact["trust"] = 0
        fact["source"] = source
        body["fact"] = fact
    recorded = record.get("recorded_at")
    if recorded is not None and not isinstance(recorded, str):
        raise ValueError('"recorded_at" must be a string or null')
    return Event(
        id=event_id,
        scope=scope,
        kind=kind,
        at=_time(record.get("at"), "at"),
        actor=actor,
        payload=body,
        provenance=cast(dict[str, JSONValue], provenance),
        recorded_at=_time(recorded, "recorded_at") if restore and recorded else None,
    )


def _time(value: object, name: str) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"{name!r} must be an ISO-8601 time")
    try:
        return parse_time(value)
    except (ValueError, OverflowError):
        raise ValueError(
            f"{name!r}: {_short(value)} is not an ISO-8601 time with an offset"
        ) from None


def check_payload(kind: str, payload: dict[str, JSONValue]) -> None:
    """Raise ``ValueError`` (:class:`~veil.tape.events.InvalidEvent`) unless ``payload`` is
    one the memory's kind ``kind`` could have written: the declaration in
    :mod:`veil.memory.events` the tape checks every append against (types, enumerations, ISO
    times and dates, 64-bit integers; other keys are kept)."""
    tape_check_payload(kind, payload)
