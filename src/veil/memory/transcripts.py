"""Dated chat histories read as evidence, each message with its own time (``remember(at=)``).

:func:`read_transcript` accepts three shapes and returns the messages in file order:

- **JSONL**: one JSON object per line;
- **JSON**: a list of such objects, or ``{"messages": [...]}``;
- **LoCoMo**: a conversation as the LoCoMo benchmark publishes it — an object with a
  ``conversation`` holding ``session_<n>`` lists of turns ``{"speaker", "text"}`` and a
  ``session_<n>_date_time`` for each (``"1:56 pm on 8 May, 2023"``), or a list of such
  samples — each a conversation between other people, so one is chosen with ``sample`` (its
  ``sample_id`` or its 1-based position) unless the list holds only one.

A message object has its text in ``text`` or ``content`` (a string, or a list of
``{"type": "text", "text"}`` parts) and its time in ``at``, ``timestamp``, ``time``,
``date`` or ``created_at``: an ISO-8601 string (``Z`` allowed), a LoCoMo date-time, or a Unix
time in seconds (milliseconds when it is larger than 10^11). A LoCoMo turn takes its
session's time. Who wrote it: ``role`` (``user``/``human``, ``assistant``/``ai``/``bot``/
``model``, ``system``, ``tool``/``function``) gives the author; a ``speaker`` (or ``name``)
is the user when it is ``me`` — by default the conversation's ``speaker_a`` (LoCoMo), else
the first speaker of the file — and a third party otherwise, and the text is prefixed with
the speaker's name so the extraction model knows who said it. LoCoMo's image turns add
their caption.

Veil never guesses a timezone: a time without an offset is an error unless ``timezone`` says
which one it is in. Every mistake is a :class:`TranscriptError` whose one-line message names
the file and the message (line or session and turn); nothing is returned half-read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any, Literal, cast

from veil.memory.model import Author

TEXT_FIELDS = ("text", "content")
TIME_FIELDS = ("at", "timestamp", "time", "date", "created_at")
SPEAKER_FIELDS = ("speaker", "name")
ROLES: Mapping[str, Author] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "tool",
}
LOCOMO_TIME_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y")
MILLISECONDS_FROM = 10**11
_SESSION = re.compile(r"^session_(\d+)$")
_NEWLINE = re.compile(r"\r?\n")


class TranscriptError(ValueError):
    """A chat history that cannot be read; the message names the file and the place."""


@dataclass(frozen=True)
class ChatMessage:
    """One message to remember: its text (speaker-prefixed when the file names speakers),
    its own time (timezone-aware), its author and where it was in the file."""

    text: str
    at: datetime
    author: Author
    where: str
    speaker: str | None = None


@dataclass(frozen=True)
class Transcript:
    """A chat history in file order. ``me`` is the speaker taken as the user (``None`` when the
    file names no speakers)."""

    shape: Literal["jsonl", "json", "locomo"]
    messages: tuple[ChatMessage, ...]
    me: str | None


def read_transcript(
    path: Path,
    *,
    me: str | None = None,
    timezone: tzinfo | None = None,
    sample: str | None = None,
) -> Transcript:
    """Read a chat history (see the module docstring). ``me`` names the speaker whose memory
    this is; ``timezone`` is the zone of times written without an offset; ``sample`` picks one
    conversation of a LoCoMo list."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise TranscriptError(f"{path}: not UTF-8 text") from None
    if not text.strip():
        raise TranscriptError(f"{path}: empty: no messages to import")
    shape, raw, first_speaker = _records(path, text, sample)
    reader = _Reader(path, me or first_speaker, timezone)
    messages = tuple(reader.message(record, where, at) for record, where, at in raw)
    if not messages:
        raise TranscriptError(f"{path}: no messages to import")
    speakers = list(dict.fromkeys(m.speaker for m in messages if m.speaker is not None))
    if me is not None and speakers and me.casefold() not in {s.casefold() for s in speakers}:
        raise TranscriptError(
            f"{path}: no speaker is called {me!r} (the speakers are {', '.join(speakers)})"
        )
    return Transcript(shape, messages, reader.me if speakers else None)


RawMessage = tuple[object, str, object]
"""A message record, where it is (for errors) and the time it inherits (LoCoMo) or None."""


Shape = Literal["jsonl", "json", "locomo"]


def _records(
    path: Path, text: str, sample: str | None
) -> tuple[Shape, list[RawMessage], str | None]:
    """The shape, the message records, and the conversation's first speaker if it names one."""
    try:
        whole: object = json.loads(text)
    except json.JSONDecodeError:
        return "jsonl", list(_jsonl(path, text)), None
    if isinstance(whole, dict) and "conversation" in whole:
        chosen = cast(dict[str, Any], whole)
        return "locomo", list(_locomo(path, chosen, "")), _speaker_a(chosen)
    if isinstance(whole, dict) and isinstance(cast(dict[str, Any], whole).get("messages"), list):
        whole = cast(dict[str, Any], whole)["messages"]
    if isinstance(whole, list):
        items = cast(list[object], whole)
        if items and all(isinstance(i, dict) and "conversation" in i for i in items):
            chosen, label = _choose(path, [cast(dict[str, Any], i) for i in items], sample)
            return "locomo", list(_locomo(path, chosen, label)), _speaker_a(chosen)
        return "json", [(item, f"message {n}", None) for n, item in enumerate(items, 1)], None
    if isinstance(whole, dict) and len(_NEWLINE.split(text.strip())) == 1:
        return "jsonl", [(whole, "line 1", None)], None
    kind = type(cast(object, whole)).__name__
    raise TranscriptError(
        f"{path}: a JSON {kind}, not a chat history (JSONL of messages, a JSON "
        'list of messages, {"messages": [...]}, or a LoCoMo conversation)'
    )


def _speaker_a(sample: Mapping[str, Any]) -> str | None:
    conversation = sample.get("conversation")
    if isinstance(conversation, dict):
        name = cast(dict[str, Any], conversation).get("speaker_a")
        return name.strip() if isinstance(name, str) and name.strip() else None
    return None


def _choose(
    path: Path, samples: Sequence[dict[str, Any]], sample: str | None
) -> tuple[dict[str, Any], str]:
    """One conversation of a LoCoMo list, by ``sample_id`` or 1-based position."""
    ids = [str(s.get("sample_id", n)) for n, s in enumerate(samples, 1)]
    if sample is None:
        if len(samples) == 1:
            return samples[0], ""
        raise TranscriptError(
            f"{path}: holds {len(samples)} conversations between different people "
            f"({', '.join(ids[:5])}{', …' if len(ids) > 5 else ''}); choose one with --sample "
            "(its sample_id or its position, from 1)"
        )
    for n, (ident, chosen) in enumerate(zip(ids, samples, strict=True), 1):
        if sample in (ident, str(n)):
            return chosen, f"sample {ident} "
    raise TranscriptError(f"{path}: no conversation {sample!r} (there are {', '.join(ids)})")


def _jsonl(path: Path, text: str) -> Iterator[RawMessage]:
    # only JSON Lines' separators: str.splitlines() also splits inside a JSON string (U+2028)
    for number, line in enumerate(_NEWLINE.split(text), 1):
        if not line.strip():
            continue
        try:
            record: object = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TranscriptError(
                f"{path}: line {number} is not JSON ({exc.msg}, column {exc.colno})"
            ) from None
        yield record, f"line {number}", None


def _locomo(path: Path, sample: Mapping[str, Any], prefix: str) -> Iterator[RawMessage]:
    conversation = sample.get("conversation")
    if not isinstance(conversation, dict):
        raise TranscriptError(f"{path}: {prefix}conversation is not an object")
    turns = cast(dict[str, Any], conversation)
    sessions = sorted(
        (int(m.group(1)), key) for key in turns if (m := _SESSION.match(key)) is not None
    )
    if not sessions:
        raise TranscriptError(f"{path}: {prefix}conversation has no session_<n> lists of turns")
    for _, key in sessions:
        session = turns[key]
        if not isinstance(session, list):
            raise TranscriptError(f"{path}: {prefix}{key} is not a list of turns")
        when = turns.get(f"{key}_date_time")
        if when is None:
            raise TranscriptError(f"{path}: {prefix}{key} has no {key}_date_time")
        for n, turn in enumerate(cast(list[object], session), 1):
            yield turn, f"{prefix}{key} turn {n}", when


class _Reader:
    def __init__(self, path: Path, me: str | None, timezone: tzinfo | None) -> None:
        self.path, self.me, self.timezone = path, me, timezone

    def fail(self, where: str, problem: str) -> TranscriptError:
        return TranscriptError(f"{self.path}: {where}: {problem}")

    def message(self, record: object, where: str, inherited: object) -> ChatMessage:
        if not isinstance(record, dict):
            raise self.fail(where, f"a JSON {type(record).__name__}, not a message object")
        fields = cast(dict[str, Any], record)
        text = self.text(fields, where)
        when = next((fields[k] for k in TIME_FIELDS if fields.get(k) is not None), inherited)
        if when is None:
            raise self.fail(where, f"no time: give each message one of {', '.join(TIME_FIELDS)}")
        at = self.time(when, where)
        speaker = next((fields[k] for k in SPEAKER_FIELDS if fields.get(k)), None)
        role = fields.get("role")
        if role is not None:
            author = ROLES.get(str(role).strip().lower())
            if author is None:
                raise self.fail(where, f"role {role!r} is not one of {', '.join(sorted(ROLES))}")
        else:
            author = "user"
        if speaker is not None:
            name = str(speaker).strip()
            if self.me is None:
                self.me = name
            if role is None:
                author = "user" if name.casefold() == self.me.casefold() else "third_party"
            return ChatMessage(f"{name}: {text}", at, author, where, name)
        return ChatMessage(text, at, author, where)

    def text(self, fields: Mapping[str, Any], where: str) -> str:
        value = next((fields[k] for k in TEXT_FIELDS if k in fields), None)
        if isinstance(value, list):
            parts = [
                str(cast(dict[str, Any], p).get("text", ""))
                for p in cast(list[object], value)
                if isinstance(p, dict) and cast(dict[str, Any], p).get("type", "text") == "text"
            ]
            value = "\n".join(p for p in parts if p)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(where, "no text: give each message a non-empty text or content")
        caption = fields.get("blip_caption")
        if isinstance(caption, str) and caption.strip():
            value = f"{value} [shares an image: {caption.strip()}]"
        return value.strip()

    def time(self, value: object, where: str) -> datetime:
        if isinstance(value, bool):
            raise self.fail(where, f"time {value!r} is not a time")
        if isinstance(value, int | float):
            seconds = value / 1000 if abs(value) > MILLISECONDS_FROM else value
            try:
                return datetime.fromtimestamp(seconds, UTC)
            except (OverflowError, OSError, ValueError):
                raise self.fail(where, f"time {value!r} is out of range") from None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(where, f"time {value!r} is not a time")
        parsed = parse_when(value)
        if parsed is None:
            raise self.fail(
                where,
                f"time {value!r} is neither ISO-8601 (2024-05-01T09:30:00+00:00) nor a "
                "LoCoMo date-time (1:56 pm on 8 May, 2023)",
            )
        if parsed.tzinfo is None:
            if self.timezone is None:
                raise self.fail(
                    where,
                    f"time {value!r} has no timezone; say which with --timezone (e.g. "
                    "--timezone UTC or --timezone Europe/Paris)",
                )
            parsed = parsed.replace(tzinfo=self.timezone)
        return parsed.astimezone(UTC)


def parse_when(value: str) -> datetime | None:
    """An ISO-8601 or LoCoMo date-time (naive when it names no offset), or ``None``."""
    text = value.strip()
    try:
        return datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        pass
    for pattern in LOCOMO_TIME_FORMATS:
        try:
            return datetime.strptime(text, pattern)
        except ValueError:
            continue
    return None


def authors(messages: Sequence[ChatMessage]) -> dict[str, int]:
    """How many messages each author wrote, in the order they first appear."""
    counts: dict[str, int] = {}
    for message in messages:
        counts[message.author] = counts.get(message.author, 0) + 1
    return counts
