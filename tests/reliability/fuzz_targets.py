"""Fuzz targets for the three parsers that read untrusted text (docs/reliability.md, "Fuzzing").

Each target is a ``check(data: bytes) -> None`` that returns when the input was handled
correctly and raises when it was not: :class:`Violation` for a broken promise, any other
exception for a crash. ``tests/reliability/run_fuzz.py`` drives them with atheris (libFuzzer,
coverage-guided); ``tests/reliability/test_fuzz.py`` replays the inputs that once failed.

What counts as correct:

``extraction`` — :func:`veil.memory.extraction.parse_output` + ``validate_items``, the parser of
the model's raw text in ``Memory.remember``. The parse either gives ``facts``/``episodes`` lists
or raises :class:`ExtractionParseError` (reported as the write's error); validation never
raises: every item becomes a validated fact/episode or an ``InvalidItem`` (a report entry).
Every validated field is a bounded string and every item the report keeps must be writable to
the tape (canonical JSON, UTF-8: no NaN, no lone surrogate) — the extraction outcome event is
sealed here exactly as ``remember`` seals it. Inputs with at least one valid item (up to 20,000
characters) also go through a real ``Memory.remember`` (scripted model returning the input): it
must return a report with the extraction outcome on the tape, and ``store.check()`` must pass.

``fingerprint`` — :func:`veil.convergence.fingerprint.fingerprint` / ``normalise`` /
``signature`` on arbitrary error text: never raise, ``None`` or ``fp1:<16 hex>``, normalised
text without ANSI escapes, blank or repeated lines.

``importer`` — ``Memory.import_`` on arbitrary file bytes. The only clear error is
:class:`ImportFormatError` (docs/export-format.md: "raises ImportFormatError naming the line;
nothing is written"), and after it the tape must be unchanged. An accepted import must leave
``store.check().ok``, every read of the scope working (facts, claims, episodes, recall,
export), and its export must re-import as a no-op. A second mode writes a *valid* export with
fuzzed text in the evidence, facts and episodes: it must import with ``restore=True`` and export
back to the same event lines (the documented round trip).

Every target also fails an input that takes longer than ``slow_s`` seconds (a hang). The
extraction and fingerprint targets can *pump* an input — repeat one slice of it up to
:data:`PUMP_CHARS` characters — so the fuzzer can find work that grows faster than the input
(quadratic regexes, a flood of braces) without having to build 64 kB inputs byte by byte.

Input layout (byte 0 is a mode byte; seeds carry one):

* extraction, fingerprint: ``mode & 3 == 1`` → bytes 1 and 2 choose the slice of the rest that
  is pumped; otherwise the rest as is. Text is UTF-8 with ``surrogateescape`` (lone surrogates
  reach the parser, as they can from a model).
* importer: bit 0 → ``restore=True``; bit 1 → ``user_id`` from the file's header, else
  ``user:fuzz-dst``; bit 2 → round-trip mode (the rest is the text to embed).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.reliability.support import CanaryModel, fact
from veil.convergence.fingerprint import FINGERPRINT_VERSION, fingerprint, normalise, signature
from veil.memory import ImportFormatError, Memory, MemoryConfig
from veil.memory.events import extraction
from veil.memory.extraction import (
    MAX_FIELD_CHARS,
    ExtractionParseError,
    parse_output,
    validate_items,
)
from veil.memory.model import EPISODE_KINDS, VOLATILITIES
from veil.tape import Event, Store, canonical_json, open_store
from veil.tape.events import seal
from veil.tape.recorder import Recorder
from veil.testing import FakeClock, HashEmbedder

REPO = Path(__file__).resolve().parents[2]
PUMP_CHARS = 64_000
SLOW_S = 2.0
"""An input that takes longer than this is a failure (a hang); a pumped 64 kB input takes about
0.2 s through the fingerprint checks, the quadratic regexes it found took 30 s and more."""

FINGERPRINT_CORPUS = REPO / "tests" / "data" / "fingerprints" / "corpus.json"
INJECTION_CORPUS = REPO / "tests" / "data" / "injection"


class Violation(AssertionError):
    """A broken promise (as opposed to a crash). ``key`` is stable across inputs, for dedup."""

    def __init__(self, key: str, detail: str = "") -> None:
        super().__init__(f"{key}: {detail}" if detail else key)
        self.key = key


def require(ok: object, key: str, detail: object = "") -> None:
    if not ok:
        raise Violation(key, str(detail)[:2000])


def writable(value: object, what: str) -> None:
    """``value`` can go on the tape: canonical JSON (no NaN) that encodes to UTF-8."""
    try:
        canonical_json(value).encode("utf-8")  # pyright: ignore[reportArgumentType]
    except (TypeError, ValueError, RecursionError) as exc:
        raise Violation(f"{what} is not writable to the tape", repr(exc)) from exc


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def pumped(data: bytes) -> str:
    """The text of an extraction/fingerprint input (see the module docstring)."""
    if not data:
        return ""
    if data[0] & 3 != 1 or len(data) < 4:
        return decode(data[1:])
    text = decode(data[3:])
    i = data[1] * len(text) // 256
    j = min(len(text), i + 1 + data[2] * (len(text) - i) // 256)
    segment = text[i:j]
    if not segment:
        return text
    repeats = max(1, (PUMP_CHARS - len(text)) // len(segment) + 1)
    return text[:i] + segment * repeats + text[j:]


def memory_store(clock: FakeClock) -> Store:
    """An in-memory SQLite store: the same transactions and projections as on disk, without
    the fsync of every commit and the VACUUM of every erase (the checks erase after each run)."""
    return open_store("sqlite:///:memory:", embedder=HashEmbedder(), clock=clock)


@dataclass
class Target:
    name: str
    make: Callable[[Path], Callable[[bytes], None]]
    """``make(workdir)`` → the check; called once per process."""
    seeds: Callable[[Path], list[bytes]]
    max_len: int
    doc: str
    slow_s: float = SLOW_S


# ---- extraction ------------------------------------------------------------------------

EVIDENCE_TEXT = "I prefer vim and I work on tokalpha. My sister Ana lives in Porto."
EVIDENCE_AT = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
_RELATION = re.compile(r"[a-z0-9_]{1,64}")


@dataclass
class ExtractionCheck:
    workdir: Path
    output: str = ""
    remembers: int = 0
    memory: Memory = field(init=False)
    evidence: Event = field(init=False)

    def __post_init__(self) -> None:
        self.memory = Memory(
            memory_store(FakeClock(EVIDENCE_AT)),
            complete=self._complete,
            embedder=HashEmbedder(),
            clock=FakeClock(EVIDENCE_AT),
        )
        self.evidence = Event(
            id="ev_fuzz",
            scope="user:fuzz",
            kind="memory.evidence",
            at=EVIDENCE_AT,
            actor="user",
            payload={"text": EVIDENCE_TEXT},
        )

    def _complete(self, messages: Any, *, json_schema: Any = None) -> str:
        return self.output

    def __call__(self, data: bytes) -> None:
        text = pumped(data)
        memory = self.memory
        writer = Recorder(memory.store, self.evidence.scope, "veil", memory.clock)
        try:
            parsed = parse_output(text)
        except ExtractionParseError as exc:
            error = f"unparseable model output: {exc}"
            seal(extraction(writer, self.evidence, status="failed", error=error, calls=2))
            return
        require(
            set(parsed) == {"facts", "episodes"}
            and all(isinstance(v, list) for v in parsed.values()),  # pyright: ignore[reportUnnecessaryIsInstance]
            "parse_output returned something else than two lists",
            parsed,
        )
        facts, episodes, invalid = validate_items(parsed)
        require(
            len(facts) + len(episodes) + len(invalid)
            == len(parsed["facts"]) + len(parsed["episodes"]),
            "an item was neither validated nor reported invalid",
        )
        for f in facts:
            for name in ("subject", "relation", "object", "statement", "claimant"):
                value = getattr(f, name)
                require(isinstance(value, str), f"fact {name} is not a string", repr(value))
                require(len(value) <= MAX_FIELD_CHARS, f"fact {name} is too long", len(value))
            require(f.subject and f.object and f.claimant, "fact with an empty required field")
            require(_RELATION.fullmatch(f.relation), "fact relation is not snake_case", f.relation)
            require(f.volatility is None or f.volatility in VOLATILITIES, "bad volatility")
            require(f.supersedes is None or isinstance(f.supersedes, str), "bad supersedes")  # pyright: ignore[reportUnnecessaryIsInstance]
            writable(asdict(f), "a validated fact")
        for e in episodes:
            require(e.kind in EPISODE_KINDS, "bad episode kind", e.kind)
            require(e.text and len(e.text) <= MAX_FIELD_CHARS, "episode text empty or too long")
            require(
                e.due is None or date.fromisoformat(e.due).isoformat() == e.due,
                "due is not an ISO date",
                e.due,
            )
            writable(asdict(e), "a validated episode")
        for item in invalid:
            require(item.reason.startswith(("fact: ", "episode: ")), "reason", item.reason)
        # The report's invalid items go on the tape inside the extraction outcome event.
        try:
            seal(
                extraction(writer, self.evidence, status="ok", error=None, calls=1, invalid=invalid)
            )
        except ValueError as exc:
            raise Violation("the extraction outcome cannot be written", repr(exc)) from exc
        if (facts or episodes) and len(text) <= 20_000:
            self._remember(text)

    def _remember(self, text: str) -> None:
        """The whole write path with this output: a report, never an exception."""
        self.output = text
        store = self.memory.store
        scope = "user:fuzz"
        report = self.memory.remember(EVIDENCE_TEXT, user_id=scope)
        require(report.error is None and report.llm_calls == 1, "remember error", report.error)
        outcomes = store.read(scope, kinds=["memory.extraction"])
        require(
            any(e.payload.get("evidence_id") == report.evidence_id for e in outcomes),
            "remember returned without the extraction outcome on the tape",
        )
        self.remembers += 1
        check = store.check()
        require(check.ok, "store.check() failed after remember", check.problems)
        store.erase(scope)


def extraction_seeds(workdir: Path) -> list[bytes]:
    good = {
        "facts": [
            fact("user", "prefers", "vim", "The user prefers vim."),
            fact("user", "works_on", "tokalpha", "The user works on tokalpha."),
            {
                **fact("Ana", "located_at", "Porto", "Ana lives in Porto.", claimant="user"),
                "volatility": "slow",
            },
            {**fact("user", "prefers", "emacs", "The user prefers emacs."), "supersedes": "f_1"},
        ],
        "episodes": [
            {"kind": "interaction", "text": "The user talked about editors.", "due": None},
            {"kind": "commitment", "text": "Send the report.", "due": "2026-01-09"},
            {"kind": "failure", "text": "The build failed.", "due": None},
        ],
    }
    outputs: list[str] = [
        json.dumps(good),
        json.dumps(good, indent=2),
        "Here you go:\n```json\n" + json.dumps(good) + "\n```\nAnything else?",
        json.dumps({"facts": [], "episodes": []}),
        json.dumps({"facts": [1, "two", None, ["x"]], "episodes": [42]}),
        json.dumps({"facts": [{"subject": "user"}], "episodes": [{"kind": "nope"}]}),
        json.dumps(good)[:60],
        "Sure! The user likes tea.",
        '{"a": [' * 50 + '"deep"' + "]}" * 50,
        json.dumps([good]),
        json.dumps({"facts": {"subject": "user"}, "episodes": []}),
        json.dumps({"facts": [{**good["facts"][0], "volatility": "forever", "claimant": 7}]}),
        json.dumps({"episodes": [{"kind": "commitment", "text": "x", "due": "next friday"}]}),
    ]
    model = CanaryModel()
    for path in sorted(INJECTION_CORPUS.glob("*.json")):
        for case in json.loads(path.read_text())["cases"]:
            planted = {k: v for k, v in case["planted"].items() if k != "supersede_trusted"}
            outputs.append(json.dumps({"facts": [{**planted, "claimant": "user"}], "episodes": []}))
            user = f'<evidence author="{case["author"]}" at="2026-01-05T09:00">\n{case["text"]}\n'
            outputs.append(model([{"role": "user", "content": user + "</evidence>"}]))
    seeds = [b"\x00" + o.encode("utf-8") for o in outputs]
    seeds += [b"\x01\x10\x20" + o.encode("utf-8") for o in outputs[:4]]
    return seeds


# ---- fingerprint -----------------------------------------------------------------------

_FP = re.compile(rf"{FINGERPRINT_VERSION}:[0-9a-f]{{16}}")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def fingerprint_check(workdir: Path) -> Callable[[bytes], None]:
    def check(data: bytes) -> None:
        text = pumped(data)
        fp = fingerprint(text)
        require(fp is None or _FP.fullmatch(fp), "fingerprint is not fp1:<16 hex>", fp)
        sig = signature(text)
        if sig is not None:
            require(sig.kind in ("python", "tests", "text"), "unknown signature kind", sig.kind)
        require((fp is None) == (sig is None or not sig.text), "fingerprint without signature")
        out = normalise(text)
        require(not _ANSI.search(out), "ANSI escape left in normalised text")
        lines = out.split("\n")
        require(out == "" or all(line.strip() for line in lines), "blank normalised line")
        require(all(a != b for a, b in itertools.pairwise(lines)), "repeated line")

    return check


def fingerprint_seeds(workdir: Path) -> list[bytes]:
    texts: list[str] = [
        item["text"] for item in json.loads(FINGERPRINT_CORPUS.read_text())["items"]
    ]
    texts += [
        "\x1b[31mFAILED\x1b[0m tests/test_x.py::test_a - TypeError: bad\n"
        "E   TypeError: unsupported operand\n1 failed, 3 passed in 0.12s",
        "ERROR: test_b (pkg.tests.T)\nTraceback (most recent call last):\n"
        '  File "/tmp/tmpab12cd34/x.py", line 3, in f\nValueError: 0x7f3a12 at 12:01:02',
        "error: /var/folders/ab/T/x.c:12:5: 'foo' undeclared "
        "(first use) 123e4567-e89b-12d3-a456-426614174000",
        'C:\\Users\\me\\AppData\\Local\\Temp\\pytest-of-me\\x.py:7 "quoted value" `cmd`',
    ]
    seeds = [b"\x00" + t.encode("utf-8") for t in texts]
    seeds += [b"\x01\x00\x40" + t.encode("utf-8") for t in texts[:: max(1, len(texts) // 12)]]
    return seeds


# ---- importer --------------------------------------------------------------------------

DST = "user:fuzz-dst"
ROUND_TRIP_CHARS = 4096
"""The round trip puts the text into every evidence, fact and episode of a 70-event export."""


@dataclass
class ImportCheck:
    workdir: Path
    memory: Memory = field(init=False)
    base: list[str] = field(init=False)
    accepted: int = 0
    refused: int = 0

    def __post_init__(self) -> None:
        clock = FakeClock(datetime(2026, 3, 1, tzinfo=UTC))
        self.memory = Memory(memory_store(clock), embedder=HashEmbedder(), clock=clock)
        self.base = make_export(self.workdir).read_text(encoding="utf-8").split("\n")

    @property
    def store(self) -> Store:
        return self.memory.store

    def __call__(self, data: bytes) -> None:
        if not data:
            return
        flags, body = data[0], data[1:]
        path = self.workdir / "in.jsonl"
        if flags & 4:
            self._round_trip(body.decode("utf-8", "replace")[:ROUND_TRIP_CHARS], path)
            return
        path.write_bytes(body)
        restore = bool(flags & 1)
        user_id = None if flags & 2 else DST
        head, scopes = self.store.head(), self.store.scopes()
        try:
            report = self.memory.import_(path, restore=restore, user_id=user_id)
        except ImportFormatError:
            self.refused += 1
            require(self.store.head() == head, "a refused import wrote events")
            require(self.store.scopes() == scopes, "a refused import changed the scopes")
            return
        except Exception:
            if self.store.head() != head:
                raise Violation("an import failed after writing events") from None
            raise
        self.accepted += 1
        try:
            self._accepted(report.user_id, report.events)
        finally:
            self.store.erase(report.user_id)

    def _accepted(self, scope: str, events: int) -> None:
        check = self.store.check()
        require(check.ok, "store.check() failed after an accepted import", check.problems)
        memory = self.memory
        memory.facts(scope, include_history=True)
        memory.facts(scope)
        memory.claims(scope)
        memory.episodes(scope)
        memory.recall("", user_id=scope)
        memory.recall("user vim", user_id=scope)
        again = memory.export(scope, self.workdir / "again.jsonl")
        head = self.store.head()
        report = memory.import_(again, restore=True, user_id=scope)
        require(
            report.already_present == report.events and self.store.head() == head,
            "the export of an accepted import does not re-import as a no-op",
        )

    def _round_trip(self, text: str, path: Path) -> None:
        """A valid export whose strings hold ``text`` imports and exports back unchanged."""
        if not text.strip():
            return
        lines: list[str] = []
        for raw in self.base:
            if not raw:
                continue
            record = json.loads(raw)
            if record.get("type") == "event":
                payload = record["payload"]
                if record["kind"] == "memory.evidence":
                    payload["text"] = text
                elif record["kind"] == "memory.fact":
                    payload["fact"]["statement"] = text
                elif record["kind"] == "memory.episode":
                    payload["episode"]["text"] = text
            lines.append(canonical_json(record))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        try:
            report = self.memory.import_(path, restore=True)
        except ImportFormatError as exc:
            raise Violation("a valid export was refused", str(exc)) from exc
        try:
            check = self.store.check()
            require(check.ok, "store.check() failed after a round trip", check.problems)
            out = self.memory.export(report.user_id, self.workdir / "out.jsonl")
            written = [line for line in lines if '"type":"event"' in line]
            exported = [
                line
                for line in out.read_text(encoding="utf-8").split("\n")
                if '"type":"event"' in line
            ]
            require(written == exported, "export → import → export changed the events")
        finally:
            self.store.erase(report.user_id)


def make_export(workdir: Path) -> Path:
    """A real export: first-hand facts, a supersession, a quarantined claim, reinforcement,
    confirm/dispute/outcome, episodes (one with a due date), consolidation, wiki, audit."""
    path = workdir / "seed-export.jsonl"
    if path.exists():
        return path
    db = workdir / "seed.db"
    clock = FakeClock(datetime(2026, 1, 5, 9, 0, tzinfo=UTC))
    canary = CanaryModel()

    def model(messages: list[dict[str, Any]], *, json_schema: Any = None) -> str:
        out = canary(messages, json_schema=json_schema)
        if json_schema is not None and "facts" not in json.dumps(json_schema):
            return out
        data = json.loads(out)
        due = (clock.now().date() + timedelta(days=2)).isoformat()
        data["episodes"].append({"kind": "commitment", "text": "Send the draft.", "due": due})
        return json.dumps(data)

    with Memory(
        db, complete=model, embedder=HashEmbedder(), clock=clock, config=MemoryConfig(audit=True)
    ) as memory:
        scope = "user:seed"
        memory.remember("I prefer vim. I work on tokalpha with Caroline.", user_id=scope)
        memory.remember("I prefer vim.", user_id=scope)
        clock.advance(days=3)
        memory.remember("These days I prefer emacs. I work on tokbeta.", user_id=scope)
        memory.remember("Note from the web: the user prefers nano.", user_id=scope, author="tool")
        memory.remember(
            [
                {"role": "user", "content": "I work on tokgamma."},
                {"role": "assistant", "content": "ok"},
            ],
            user_id=scope,
        )
        facts = memory.facts(scope)
        memory.confirm(facts[0].id, user_id=scope)
        memory.dispute(facts[-1].id, user_id=scope, reason="not any more")
        memory.record_outcome(facts[0].id, user_id=scope, ok=True)
        for week in range(4):
            clock.advance(days=7)
            memory.remember(f"Week {week}: I work on tokweek{week}.", user_id=scope)
        memory.maintain(scope)
        memory.export(scope, path)
    db.unlink(missing_ok=True)
    return path


def importer_seeds(workdir: Path) -> list[bytes]:
    export = make_export(workdir).read_bytes()
    lines = export.split(b"\n")
    seeds = [bytes([flags]) + export for flags in (0, 1, 2, 3)]
    seeds.append(b"\x00" + lines[0] + b"\n")
    seeds.append(b"\x01" + b"\n".join(lines[:3]) + b"\n")
    seeds += [
        b"\x04I prefer tea.",
        "\x04caf\u00e9 \u2028 line \u0085 next \u2029 \x00 \ufeff \U0001f600".encode(),
        b"\x04\r\n\t\\\"'",
    ]
    return seeds


TARGETS: dict[str, Target] = {
    "extraction": Target(
        "extraction",
        ExtractionCheck,
        extraction_seeds,
        8192,
        "model output → parse_output + validate_items (+ remember when items are valid)",
    ),
    "fingerprint": Target(
        "fingerprint",
        fingerprint_check,
        fingerprint_seeds,
        8192,
        "error text → fingerprint / signature / normalise",
    ),
    "importer": Target(
        "importer",
        ImportCheck,
        importer_seeds,
        65536,
        "export file → Memory.import_ (+ check, reads, re-import; round trip of valid exports)",
        slow_s=10.0,  # an accepted 64 kB import is checked, read, exported and re-imported
    ),
}


# ---- recording failures ----------------------------------------------------------------


def failure_key(exc: BaseException) -> str:
    """Stable identity of a failure: the violation's key, or the exception type and the
    innermost frame in veil or the harness."""
    if isinstance(exc, Violation):
        return exc.key
    where = "?"
    for frame in traceback.extract_tb(exc.__traceback__):
        if "/veil/" in frame.filename or "/tests/reliability/" in frame.filename:
            where = f"{Path(frame.filename).name}:{frame.name}:{frame.lineno}"
    return f"{type(exc).__name__} in {where}"


@dataclass
class Harness:
    """Runs one target on each input, records failures (deduplicated by key, smallest input
    kept) and the execution count in ``workdir/status.json``; never lets an exception reach
    libFuzzer, so one run finds every distinct failure instead of stopping at the first."""

    target: Target
    workdir: Path
    slow_s: float | None = None
    runs: int = 0
    failures: dict[str, dict[str, Any]] = field(default_factory=lambda: {})
    check: Callable[[bytes], None] = field(init=False)
    _saved: float = 0.0

    def __post_init__(self) -> None:
        (self.workdir / "failures").mkdir(parents=True, exist_ok=True)
        self.check = self.target.make(self.workdir)

    def __call__(self, data: bytes) -> None:
        self.runs += 1
        started = time.perf_counter()
        try:
            self.check(data)
        except Exception as exc:
            self.record(failure_key(exc), data, "".join(traceback.format_exception(exc)))
        seconds = time.perf_counter() - started
        if seconds > (self.slow_s or self.target.slow_s):
            self.record("slow input", data, f"{seconds:.1f} s")
        if started - self._saved > 2.0:
            self.save()

    def record(self, key: str, data: bytes, detail: str) -> None:
        entry = self.failures.get(key)
        if entry is None:
            entry = self.failures[key] = {"key": key, "count": 0, "bytes": None}
        entry["count"] += 1
        if entry["bytes"] is None or len(data) < entry["bytes"]:
            name = re.sub(r"[^A-Za-z0-9]+", "-", key)[:60].strip("-")
            file = self.workdir / "failures" / f"{name}-{hashlib.sha1(data).hexdigest()[:12]}"
            file.write_bytes(data)
            entry.update(bytes=len(data), input=str(file), detail=detail[-4000:])
        self.save()

    def save(self) -> None:
        self._saved = time.perf_counter()
        status = {"target": self.target.name, "runs": self.runs, "failures": self.failures}
        tmp = self.workdir / "status.json.tmp"
        tmp.write_text(json.dumps(status, indent=1), encoding="utf-8")
        tmp.replace(self.workdir / "status.json")


def write_seeds(target: Target, corpus: Path, workdir: Path) -> int:
    corpus.mkdir(parents=True, exist_ok=True)
    seeds = target.seeds(workdir)
    for seed in seeds:
        (corpus / f"seed-{hashlib.sha1(seed).hexdigest()[:16]}").write_bytes(seed)
    return len(seeds)


def replay(target: Target, inputs: Sequence[bytes], workdir: Path) -> None:
    """Run ``inputs`` through the target's check in this process (regression tests)."""
    workdir.mkdir(parents=True, exist_ok=True)
    check = target.make(workdir)
    try:
        for data in inputs:
            started = time.perf_counter()
            check(data)
            seconds = time.perf_counter() - started
            require(seconds <= target.slow_s * 5, "slow input", f"{seconds:.1f} s")
    finally:
        memory = getattr(check, "memory", None)
        if isinstance(memory, Memory):
            memory.store.close()
