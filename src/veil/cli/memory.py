"""``veil memory ACTION``: the long-term memory from the shell, for people and scripts.

Actions: ``remember TEXT`` (``-``: read stdin), ``recall QUERY``, ``facts``, ``history SUBJECT
RELATION``, ``confirm FACT_ID``, ``dispute FACT_ID REASON`` — the catalogue's verbs
(:mod:`veil.verbs`), run by :func:`_run_verb` — and ``export PATH``, ``import PATH``,
``forget --yes``.

Which memory: ``--db`` (a path or a store URL), else the project's ``.veil/memory.db`` — the
store the harness, the Claude Code hooks and ``veil mcp --project`` use; the project is the
git repository around the current directory, else the directory. Whose memory: ``--user ID``
(same as ``--scope ID``), else the project's scope. Reading actions never create a store: a
store that does not exist is an error.

Only ``remember`` and ``import`` of a chat history call a model (one call per message); they
take it from ``--model``, else ``$VEIL_MODEL`` (``scripted:FILE`` replays a script of
extraction replies). Everything else works without one.

Output: text for people on stdout, or with ``--json`` one JSON document in the HTTP API's
wire types (:mod:`veil.server.schemas`). Exit status: 0 done; 1 the work failed part-way (the
model's extraction failed — the evidence is kept on the tape — or an import stopped at a
message); 2 nothing was done because of a predictable mistake (no store, no model, a bad
date, an unreadable file, ``forget`` without ``--yes``) — one line on stderr, never a
traceback.

``import PATH`` reads a Veil export (docs/export-format.md; ``--restore`` keeps its trust and
times exactly, else every fact is capped at third-party trust) or a dated chat history
(:mod:`veil.memory.transcripts`: JSONL, a JSON list, a LoCoMo conversation), remembered one
message at a time with that message's own time (``remember(at=)``). A chat import that fails
at message N says so and how to go on from there (``--start N``).

Restoring your own export: a plain ``import`` caps trust whatever the file, and when the export
is of the memory it goes into (the same scope) it says so on stderr and names ``--restore``.
``--restore`` after such an import replaces it: when every event of the memory is one of the
file's, as that capped import wrote it, the memory is erased (a receipt is printed) and the
file restored exactly. If the memory holds anything else, nothing is done and the message says
how to go on.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

if TYPE_CHECKING:  # the memory layer is imported when an action runs: `veil -p` stays quick
    from veil.memory import Fact, Memory, MemoryConfig, WriteReport
    from veil.memory.transcripts import Transcript

ACTIONS = (
    "remember", "recall", "facts", "history", "confirm", "dispute", "export", "import", "forget",
)  # fmt: skip
WRITES = {"remember", "import", "forget"}


class MemoryCommandError(Exception):
    """A predictable mistake: ``veil memory: <message>`` on stderr and exit status 2."""


@dataclass(frozen=True)
class Target:
    """The store and scope an invocation works on; ``home`` is the project's ``.veil/`` when
    the store is the project's default (created, with its ``.gitignore``, on first write)."""

    db: str
    scope: str
    home: Path | None = None


def run_memory(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run one action; see the module docstring for the exit statuses."""
    stream: TextIO = out or sys.stdout
    action: str = args.memory_action
    try:
        target = resolve_target(args.db, args.scope, create=action in WRITES - {"forget"})
        return _ACTIONS[action](args, target, stream)
    except MemoryCommandError as exc:
        print(f"veil memory {action}: {exc}", file=sys.stderr)
        return 2


def resolve_target(db: str | None, scope: str | None, *, create: bool) -> Target:
    """``--db`` / ``--user`` or the project's; a SQLite store that does not exist is a
    :class:`MemoryCommandError` unless ``create``."""
    from veil.agent.project import project_root, project_scope
    from veil.tape import sqlite_path
    from veil.tape.events import validate_scope

    root = project_root(Path.cwd()) if db is None or scope is None else None
    home: Path | None = None
    if db is None:
        assert root is not None
        home = root / ".veil"
        db = str(home / "memory.db")
    path = sqlite_path(db)
    if not create and path is not None and not path.exists():
        hint = "check --db" if home is None else "remember something first, or pass --db"
        raise MemoryCommandError(f"no store at {db} ({hint})")
    if scope is None:
        assert root is not None
        scope = project_scope(root)
    try:
        validate_scope(scope)
    except ValueError as exc:
        raise MemoryCommandError(f"--user {scope!r}: {exc}") from None
    return Target(db, scope, home if create else None)


def _open(
    args: argparse.Namespace,
    target: Target,
    *,
    model: bool = False,
    config: MemoryConfig | None = None,
) -> Memory:
    """The memory (with a model's ``complete`` when ``model``); the project's ``.veil/`` is
    created only once the model is known to be configured."""
    from veil.agent.project import veil_dir
    from veil.embed import EmbedderUnavailable, embedder_from_spec
    from veil.memory import Memory
    from veil.tape import BackendUnavailable

    complete = _complete(args) if model else None
    if target.home is not None:
        veil_dir(target.home.parent)
    try:
        embedder = embedder_from_spec(args.embedder)
        return Memory(target.db, complete=complete, embedder=embedder, config=config, actor="cli")
    except (EmbedderUnavailable, BackendUnavailable, ValueError) as exc:
        raise MemoryCommandError(str(exc)) from None


def _complete(args: argparse.Namespace) -> Any:
    import os

    from veil.llm.configure import HOW_TO_CONFIGURE, ModelNotConfigured
    from veil.llm.registry import extraction_complete_from_spec

    spec = args.memory_model or args.model or os.environ.get("VEIL_MODEL")
    if not spec:
        raise MemoryCommandError(
            f"no model configured; remembering needs one to extract facts. {HOW_TO_CONFIGURE}"
        )
    try:
        return extraction_complete_from_spec(spec)
    except (ModelNotConfigured, ValueError, OSError) as exc:
        raise MemoryCommandError(str(exc)) from None


def _dump(out: TextIO, value: object) -> None:
    out.write(json.dumps(value, indent=2, ensure_ascii=False, default=str) + "\n")


def _moment(text: str | None, option: str, *, end_of_day: bool = False) -> datetime | None:
    """An ISO-8601 time with an offset, or a date (its end, or start, in UTC)."""
    if text is None:
        return None
    value = text.strip()
    if len(value) == 10:
        try:
            day = date.fromisoformat(value)
        except ValueError:
            day = None
        if day is not None:
            moment = datetime.combine(day, time(0), UTC)
            return moment + timedelta(days=1, microseconds=-1) if end_of_day else moment
    try:
        parsed = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
    except ValueError:
        raise MemoryCommandError(
            f"{option} {text!r}: not an ISO-8601 time (2024-05-01T09:30:00+00:00) or date"
        ) from None
    if parsed.tzinfo is None:
        raise MemoryCommandError(f"{option} {text!r} needs a timezone offset (e.g. +00:00)")
    return parsed.astimezone(UTC)


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


# ---- actions -------------------------------------------------------------------------------


def _run_verb(args: argparse.Namespace, target: Target, out: TextIO) -> int:
    """A catalogue verb (:mod:`veil.verbs`): its arguments from the command line, checked by
    the verb; the result printed for people, or ``--json`` in the HTTP API's wire types."""
    from veil.memory import VeilMemoryError
    from veil.verbs import CATALOGUE, Binding, Services

    verb = CATALOGUE[args.memory_action]
    arguments: dict[str, object] = {}
    for param in verb.params:
        value = getattr(args, param.name)
        if param.kind == "time":
            option = f"--{param.name.replace('_', '-')}"
            value = _moment(value, option, end_of_day=param.name == "as_of")
        elif param.name == "text" and value == "-":
            value = sys.stdin.read()
        arguments[param.name] = value
    if verb.name == "remember" and not str(arguments["text"]).strip():
        raise MemoryCommandError("nothing to remember: the text is empty")
    who = Binding(user_id=target.scope, author=getattr(args, "author", "user"))
    with _open(args, target, model="model" in verb.needs) as memory:
        try:
            result = verb.call(Services(memory=memory), who, arguments)
        except (VeilMemoryError, LookupError, ValueError, TypeError) as exc:
            raise MemoryCommandError(str(exc).strip("'\"")) from None
        if args.memory_json:
            from veil.server.schemas import wire

            _dump(out, wire(result))
            return _remembered_status(result)
        return _PRESENT[verb.name](args, memory, target, result, out)


def _remembered_status(result: object) -> int:
    from veil.memory import WriteReport

    if isinstance(result, WriteReport) and result.error is not None:
        print(
            f"veil memory remember: nothing extracted ({result.error}); the evidence is kept "
            f"on the tape as {result.evidence_id}",
            file=sys.stderr,
        )
        return 1
    return 0


def _present_report(
    args: argparse.Namespace, memory: Memory, target: Target, report: Any, out: TextIO
) -> int:
    _print_report(out, memory, target.scope, report)
    return _remembered_status(report)


def _print_report(out: TextIO, memory: Memory, scope: str, report: WriteReport) -> None:
    from veil.memory import VeilMemoryError

    def statement(fact_id: str) -> str:
        try:
            return memory.fact(fact_id, user_id=scope).statement
        except VeilMemoryError:
            return fact_id

    out.write(f"remembered {report.evidence_id}: {_counts(report.counts())}\n")
    for label, ids in (
        ("stored", report.facts),
        ("superseded", report.superseded),
        ("reinforced", report.reinforced),
        ("contested", report.contested),
        ("quarantined (unverified claim)", report.quarantined),
    ):
        for fact_id in ids:
            out.write(f"  {label}: {statement(fact_id)} ({fact_id})\n")
    for item in report.invalid:
        out.write(f"  not stored: {item.reason}\n")


def _counts(counts: dict[str, int]) -> str:
    """``2 facts, 1 superseded`` (only what is not zero), or ``nothing new``."""
    words: list[str] = []
    for key, n in counts.items():
        if n:
            noun = key[:-1] if n == 1 and key in ("facts", "episodes") else key
            words.append(f"{n} {noun}")
    return ", ".join(words) or "nothing new"


def _present_recall(
    args: argparse.Namespace, memory: Memory, target: Target, answer: Any, out: TextIO
) -> int:
    text: str = answer.recall.text if answer.recall is not None else ""
    if text.strip():
        out.write(text.rstrip("\n") + "\n")
    else:
        print("veil memory recall: nothing in this memory matches", file=sys.stderr)
    return 0


def _table(out: TextIO, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Columns padded to line up; the last one (free text) is not padded."""
    every = [tuple(header), *(tuple(r) for r in rows)]
    widths = [max(len(r[i]) for r in every) for i in range(len(header) - 1)]
    for row in every:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        out.write("  ".join([*cells, row[-1]]).rstrip() + "\n")


def _when(moment: datetime | None) -> str:
    return "-" if moment is None else f"{moment.astimezone(UTC):%Y-%m-%d %H:%M}"


def _present_facts(
    args: argparse.Namespace, memory: Memory, target: Target, found: Any, out: TextIO
) -> int:
    facts: Sequence[Fact] = found.facts
    rows = [(f.id, f.status, f.subject, f.relation, f.statement) for f in facts]
    _table(out, ("ID", "STATUS", "SUBJECT", "RELATION", "STATEMENT"), rows)
    if found.truncated:
        print(
            f"veil memory facts: the newest {len(facts)} of {found.total} (--limit N shows more)",
            file=sys.stderr,
        )
    return 0


def _present_history(
    args: argparse.Namespace, memory: Memory, target: Target, found: Any, out: TextIO
) -> int:
    facts: Sequence[Fact] = found
    if not facts:
        print(
            f"veil memory history: no values of {args.subject} {args.relation} "
            "(`veil memory facts` lists the subjects and relations)",
            file=sys.stderr,
        )
        return 0
    rows = [(_when(f.valid_from), _when(f.valid_to), f.status, f.statement) for f in facts]
    _table(out, ("VALID FROM (UTC)", "VALID TO", "STATUS", "STATEMENT"), rows)
    return 0


def _present_fact(
    args: argparse.Namespace, memory: Memory, target: Target, fact: Any, out: TextIO
) -> int:
    out.write(f"{fact.id} is now {fact.status}: {fact.statement}\n")
    return 0


_PRESENT: dict[str, Callable[[argparse.Namespace, Memory, Target, Any, TextIO], int]] = {
    "remember": _present_report,
    "recall": _present_recall,
    "facts": _present_facts,
    "history": _present_history,
    "confirm": _present_fact,
    "dispute": _present_fact,
}
"""How ``veil memory`` shows each verb's result to people."""


def _export(args: argparse.Namespace, target: Target, out: TextIO) -> int:
    if args.path == "-":
        return _export_to_stdout(args, target, out)
    path = Path(args.path)
    with _open(args, target) as memory:
        try:
            written = memory.export(target.scope, path)
        except OSError as exc:
            raise MemoryCommandError(f"{path}: {exc.strerror or exc}") from None
        facts = len(memory.facts(target.scope, include_history=True))
    if args.memory_json:
        _dump(out, {"path": str(written), "scope": target.scope, "facts": facts})
    else:
        out.write(
            f"exported the memory of {target.scope} ({_counts({'facts': facts})}) to {written}\n"
        )
    return 0


def _export_to_stdout(args: argparse.Namespace, target: Target, out: TextIO) -> int:
    """``export -``: the JSONL on stdout (written to a temporary file first, as always)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="veil-export-") as tmp, _open(args, target) as memory:
        written = memory.export(target.scope, Path(tmp) / "export.jsonl")
        with written.open(encoding="utf-8") as handle:
            for line in handle:
                out.write(line)
    return 0


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


def _import(args: argparse.Namespace, target: Target, out: TextIO) -> int:
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
    with _open(args, target, model=True, config=config) as memory:
        return _import_chat(args, memory, target, transcript, path, out)


def _import_export(
    args: argparse.Namespace, target: Target, path: Path, header: dict[str, object], out: TextIO
) -> int:
    from veil.memory import ImportFormatError

    with _open(args, target) as memory:
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
        _dump(out, summary)
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
        _dump(out, {"format": transcript.shape, "scope": target.scope, "me": transcript.me,
                    "messages": done, "total": len(messages), "start": args.start,
                    "authors": by_author, "counts": totals,
                    "from": imported[0].at.isoformat() if imported else None,
                    "to": imported[-1].at.isoformat() if imported else None,
                    "error": failure})  # fmt: skip
    else:
        whose = f" as {transcript.me}'s memory (--me: another speaker)" if transcript.me else ""
        who = ", ".join(f"{n} by {a}" for a, n in by_author.items()) or "none"
        counts = _counts(totals)
        span = f"{_when(imported[0].at)} .. {_when(imported[-1].at)} UTC" if imported else "-"
        out.write(
            f"imported {done} of {len(messages)} messages from {path} ({transcript.shape})"
            f"{whose} into {target.scope}: {who}; dated {span}; {counts}\n"
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


def _forget(args: argparse.Namespace, target: Target, out: TextIO) -> int:
    if not args.yes:
        raise MemoryCommandError(
            f"this erases every event and fact of {target.scope} in {target.db} for good; "
            "run again with --yes"
        )
    with _open(args, target) as memory:
        receipt = memory.forget(target.scope)
    if args.memory_json:
        from veil.server.schemas import erasure_out

        _dump(out, erasure_out(receipt).model_dump(mode="json"))
    else:
        out.write(
            f"erased {target.scope}: {receipt.events} events (receipt {receipt.id}, {receipt.at})\n"
        )
    return 0


_ACTIONS: dict[str, Callable[[argparse.Namespace, Target, TextIO], int]] = {
    **dict.fromkeys(_PRESENT, _run_verb),
    "export": _export,
    "import": _import,
    "forget": _forget,
}
