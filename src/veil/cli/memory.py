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
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # the memory layer is imported when an action runs: `veil -p` stays quick
    from veil.memory import Fact, Memory, MemoryConfig, WriteReport

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


def open_memory(
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


def dump(out: TextIO, value: object) -> None:
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
    with open_memory(args, target, model="model" in verb.needs) as memory:
        try:
            result = verb.call(Services(memory=memory), who, arguments)
        except (VeilMemoryError, LookupError, ValueError, TypeError) as exc:
            raise MemoryCommandError(str(exc).strip("'\"")) from None
        if args.memory_json:
            from veil.server.schemas import wire

            dump(out, wire(result))
            return _remembered_status(result)
        return _PRESENT[verb.name](args, memory, target, result, out)


def _remembered_status(result: object) -> int:
    """``remember``'s status: 1 when nothing was extracted, or when every item extracted was
    refused (one line on stderr: how many and the first reason); 0 otherwise — with a line
    on stderr when some items were not stored."""
    from veil.memory import WriteReport

    if not isinstance(result, WriteReport):
        return 0
    if result.error is not None:
        print(
            f"veil memory remember: nothing extracted ({result.error}); the evidence is kept "
            f"on the tape as {result.evidence_id}",
            file=sys.stderr,
        )
        return 1
    if not result.invalid:
        return 0
    refused = (
        f"{len(result.invalid)} extracted item(s) not stored (first: {result.invalid[0].reason})"
    )
    counts = result.counts()
    if not any(n for key, n in counts.items() if key != "invalid"):
        print(
            f"veil memory remember: nothing stored: {refused}; the evidence is kept on the tape "
            f"as {result.evidence_id}",
            file=sys.stderr,
        )
        return 1
    print(f"veil memory remember: {refused}", file=sys.stderr)
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

    out.write(f"remembered {report.evidence_id}: {counts(report.counts())}\n")
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


def counts(counts: dict[str, int]) -> str:
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


def when(moment: datetime | None) -> str:
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
    rows = [(when(f.valid_from), when(f.valid_to), f.status, f.statement) for f in facts]
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
    with open_memory(args, target) as memory:
        try:
            written = memory.export(target.scope, path)
        except OSError as exc:
            raise MemoryCommandError(f"{path}: {exc.strerror or exc}") from None
        facts = len(memory.facts(target.scope, include_history=True))
    if args.memory_json:
        dump(out, {"path": str(written), "scope": target.scope, "facts": facts})
    else:
        out.write(
            f"exported the memory of {target.scope} ({counts({'facts': facts})}) to {written}\n"
        )
    return 0


def _export_to_stdout(args: argparse.Namespace, target: Target, out: TextIO) -> int:
    """``export -``: the JSONL on stdout (written to a temporary file first, as always)."""
    import tempfile

    with (
        tempfile.TemporaryDirectory(prefix="veil-export-") as tmp,
        open_memory(args, target) as memory,
    ):
        written = memory.export(target.scope, Path(tmp) / "export.jsonl")
        with written.open(encoding="utf-8") as handle:
            for line in handle:
                out.write(line)
    return 0


def _import(args: argparse.Namespace, target: Target, out: TextIO) -> int:
    from veil.cli.memory_import import run_import  # here: this module is imported by it

    return run_import(args, target, out)


def _forget(args: argparse.Namespace, target: Target, out: TextIO) -> int:
    if not args.yes:
        raise MemoryCommandError(
            f"this erases every event and fact of {target.scope} in {target.db} for good; "
            "run again with --yes"
        )
    with open_memory(args, target) as memory:
        receipt = memory.forget(target.scope)
    if args.memory_json:
        from veil.server.schemas import erasure_out

        dump(out, erasure_out(receipt).model_dump(mode="json"))
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
