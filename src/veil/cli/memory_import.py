"""``veil memory import``: a Veil export, or a dated chat history remembered message by message
(the rules are in :mod:`veil.cli.memory`'s docstring, "import PATH" and "Restoring your own
export"). Kept apart from the other actions: the import is most of the command's code.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from datetime import UTC, timedelta, timezone, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from veil.cli.memory import MemoryCommandError, Target, counts, dump, open_memory, when

if TYPE_CHECKING:
    from veil.memory import Memory
    from veil.memory.transcripts import Transcript


def _zone(text: str | None) -> tzinfo | None:
    if text is None:
        return None
    value = text.strip()
    if value.upper() in ("UTC", "Z"):
        return UTC
    offset = re.fullmatch(r"([+-])(\d\d)(?::?(\d\d))?", value)
    if offset is not None:
        sign, hours, minutes = offset.groups()
        delta = timedelta(hours=int(hours), minutes=int(minutes or 0))
        if delta < timedelta(hours=24):
            return timezone(-delta if sign == "-" else delta)
    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise MemoryCommandError(
            f"--timezone {text!r}: not a timezone (UTC, an offset like +02:00, or a name like "
            "Europe/Paris)"
        ) from None


def _export_header(path: Path) -> dict[str, object] | None:
    """The header of a Veil export (its first line), or None when the file is not one."""
    from veil.memory.portability import FORMAT

    try:
        with path.open("rb") as handle:
            first = handle.readline(1_000_000).decode("utf-8-sig")
        head: object = json.loads(first)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if isinstance(head, dict) and cast(dict[str, object], head).get("format") == FORMAT:
        return cast(dict[str, object], head)
    return None


def run_import(args: argparse.Namespace, target: Target, out: TextIO) -> int:
    """``import PATH``: an export (validated whole, one batch) or a chat history."""
    from veil.memory import MemoryConfig
    from veil.memory.transcripts import TranscriptError, read_transcript

    path = Path(args.path)
    if not path.is_file():
        raise MemoryCommandError(f"{path}: no such file")
    header = _export_header(path)
    if header is not None:
        return _import_export(args, target, path, header, out)
    try:
        transcript = read_transcript(
            path, me=args.me, timezone=_zone(args.timezone), sample=args.sample
        )
    except TranscriptError as exc:
        raise MemoryCommandError(str(exc)) from None
    if args.start > len(transcript.messages):
        raise MemoryCommandError(
            f"--start {args.start}: {path} has {len(transcript.messages)} messages"
        )
    config = MemoryConfig(user_names=(transcript.me,)) if transcript.me else None
    with open_memory(args, target, model=True, config=config) as memory:
        return _import_chat(args, memory, target, transcript, path, out)


def _import_export(
    args: argparse.Namespace, target: Target, path: Path, header: dict[str, object], out: TextIO
) -> int:
    from veil.memory import ImportFormatError

    with open_memory(args, target) as memory:
        try:
            report = memory.import_(path, restore=args.restore, user_id=target.scope)
        except ImportFormatError as exc:
            if not (args.restore and _imported_capped(memory, path, target.scope)):
                raise MemoryCommandError(_conflict_hint(str(exc), args.restore, path)) from None
            # `import` then `import --restore` of one's own backup: put it back exactly
            receipt = memory.forget(target.scope)
            print(
                f"veil memory import: replacing the earlier import of {path} (trust capped): "
                f"erased {receipt.events} events (receipt {receipt.id})",
                file=sys.stderr,
            )
            try:
                report = memory.import_(path, restore=True, user_id=target.scope)
            except ImportFormatError as again:
                raise MemoryCommandError(str(again)) from None
    if args.memory_json:
        summary = {
            "format": "veil",
            "scope": report.user_id,
            "events": report.events,
            "already_present": report.already_present,
            "restored": report.restored,
        }
        dump(out, summary)
    else:
        kept = "exactly (--restore)" if report.restored else "trust capped at third party"
        out.write(
            f"imported {report.events} events into {report.user_id} "
            f"({report.already_present} already present; {kept})\n"
        )
    if not report.restored and header.get("user_id") == target.scope:
        print(
            f"veil memory import: {path} is an export of this same memory ({target.scope}); "
            "its facts now count as third-party claims. If it is your own backup, run "
            f"`veil memory import --restore {path}` to keep their trust (it replaces this import)",
            file=sys.stderr,
        )
    return 0


def _imported_capped(memory: Memory, path: Path, scope: str) -> bool:
    """Whether every event of ``scope`` is one of the export's as an import without
    ``--restore`` wrote it (trust capped): then restoring it exactly loses nothing."""
    from veil.memory.portability import read_export

    _, capped = read_export(path, user_id=scope, restore=False, source=f"import:{path.name}")
    written = {e.id: e.payload for e in capped}
    stored = memory.store.read(scope)
    return bool(stored) and all(written.get(e.id) == e.payload for e in stored)


def _conflict_hint(message: str, restore: bool, path: Path) -> str:
    if "already in" not in message:
        return message
    if restore:
        return (
            f"{path} was imported before without --restore (trust capped) and this memory has "
            "changed since, so it cannot be replaced in place; nothing was written. To restore "
            f"it exactly: `veil memory export OTHER.jsonl` to keep what is there, `veil memory "
            f"forget --yes`, then `veil memory import --restore {path}`"
        )
    return (
        f"{path}: its events are already in this memory with their own trust (where it was "
        "exported, or imported with --restore); nothing was written"
    )


def _import_chat(
    args: argparse.Namespace,
    memory: Memory,
    target: Target,
    transcript: Transcript,
    path: Path,
    out: TextIO,
) -> int:
    from veil.memory import VeilMemoryError
    from veil.memory.transcripts import authors

    messages = transcript.messages
    totals: dict[str, int] = {}
    done = 0
    failure: str | None = None
    progress = _progress(len(messages))
    for number in range(args.start, len(messages) + 1):
        message = messages[number - 1]
        try:
            report = memory.remember(
                message.text,
                user_id=target.scope,
                author=message.author,
                at=message.at,
                source=f"import:{path.name}#{number}",
            )
        except (VeilMemoryError, ValueError, TypeError) as exc:
            failure = f"message {number} ({message.where}) was not remembered: {exc}"
            break
        if report.error is not None:
            failure = (
                f"message {number} ({message.where}): nothing extracted ({report.error}); its "
                f"text is on the tape as {report.evidence_id}"
            )
            break
        done += 1
        for key, count in report.counts().items():
            totals[key] = totals.get(key, 0) + count
        progress(number)
    imported = messages[args.start - 1 : args.start - 1 + done]
    by_author = authors(imported)
    if args.memory_json:
        dump(out, {"format": transcript.shape, "scope": target.scope, "me": transcript.me,
                    "messages": done, "total": len(messages), "start": args.start,
                    "authors": by_author, "counts": totals,
                    "from": imported[0].at.isoformat() if imported else None,
                    "to": imported[-1].at.isoformat() if imported else None,
                    "error": failure})  # fmt: skip
    else:
        whose = f" as {transcript.me}'s memory (--me: another speaker)" if transcript.me else ""
        who = ", ".join(f"{n} by {a}" for a, n in by_author.items()) or "none"
        tally = counts(totals)
        span = f"{when(imported[0].at)} .. {when(imported[-1].at)} UTC" if imported else "-"
        out.write(
            f"imported {done} of {len(messages)} messages from {path} ({transcript.shape})"
            f"{whose} into {target.scope}: {who}; dated {span}; {tally}\n"
        )
    if failure is not None:
        resume = args.start + done
        print(
            f"veil memory import: {failure}; messages {args.start}..{resume - 1} were imported; "
            f"continue with --start {resume}",
            file=sys.stderr,
        )
        return 1
    return 0


def _progress(total: int) -> Callable[[int], None]:
    """A progress line on a terminal's stderr; nothing when stderr is not a terminal."""
    if not sys.stderr.isatty() or total < 5:
        return lambda _: None

    def show(number: int) -> None:
        sys.stderr.write(f"\r{number}/{total} messages" + ("\n" if number == total else ""))
        sys.stderr.flush()

    return show
