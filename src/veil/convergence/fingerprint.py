"""Error fingerprints: the same failure maps to the same short id even when its text drifts. Pure.

Error text drifts between attempts without the failure changing: line numbers move after an
edit, object addresses and temporary directories change every run, timings never repeat, the
offending value in a message is a different one. :func:`normalise` removes exactly that drift,
keeping the exception type and the stable words; :func:`fingerprint` hashes the result with a
version prefix (``fp1:…``) so a change to the rules can never silently collide with fingerprints
recorded under older rules.

What is kept, and why:

- **Python tracebacks**: the exception type and the *innermost frame's function* (where the
  failure happened), plus the normalised message. The outer frames are dropped: the same
  failure reached from a different call path (a test instead of a reproduction script) is still
  the same failure, and the outer frames are where paths and line numbers drift most.
- **Test runner output** (pytest ``FAILED``/``ERROR`` lines, unittest ``FAIL:``/``ERROR:``
  headers): the set of failing test ids, sorted, and the set of exception types raised (pytest's
  ``E   TypeError: …`` lines, unittest's unindented ``TypeError: …`` lines). Counts and timings
  are dropped, and so is the message pytest appends to a ``FAILED`` line (``- TypeError: …``):
  pytest cuts it to the terminal width, so the same failure prints ``- Type...`` in one run and
  ``- TypeError: con...`` in another.
- **Anything else**: the lines that say something went wrong (``error``, ``exception``,
  ``fail``, ``fatal``, ``panic``, ``not found``, …), else the last lines, normalised.

Normalisation rules, applied in this order (each has a unit test):

1. ANSI escape sequences removed.
2. UUIDs → ``<uuid>``.
3. Timestamps (ISO dates with optional time and zone, clock times) → ``<time>``.
4. Hex addresses and pointers (``0x7f3a…``) and long hex runs (hashes) → ``<hex>``.
5. Temporary directories (``/tmp/…``, ``/var/folders/…``, ``pytest-of-…``, ``tmpXXXXXX``)
   → ``<tmp>``.
6. File paths → their basename (``/testbed/django/db/models/query.py`` → ``query.py``).
7. Line/column positions (``line 12``, ``file.py:12:5``, ``(12, 5)`` after a path) → ``<n>``.
8. Durations (``0.12s``, ``3 ms``, ``in 2.5 seconds``) → ``<dur>``.
9. Quoted literal values (``'…'``, ``"…"``, `````…`````) → ``<str>``, except a quoted
   identifier, dotted or file name (``'srcdir'``, ``'django.db'``, ``'query.py'``), which names
   code rather than data: a missing attribute ``'events'`` after a missing ``'srcdir'`` is the
   agent getting one step further, not the same failure.
10. Remaining standalone numbers → ``<n>`` (digits inside identifiers such as ``int64`` or
    ``test_issue_123`` are kept: they name things).
11. Whitespace collapsed; repeated identical lines kept once.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

FINGERPRINT_VERSION = "fp1"
"""Changes whenever a rule changes meaning; fingerprints of different versions never compare
equal, because the version is part of the fingerprint text."""

MAX_INPUT_CHARS = 200_000
"""Only the last this-many characters of an output are examined (errors are at the end)."""

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_TIMESTAMP = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
    r"|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"
)
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b")
_TMP = re.compile(
    r"(?:/private)?/(?:tmp|var/tmp|var/folders)/[^\s'\"`:,;)\]]*"
    r"|\bpytest-of-[^\s'\"`:,;)\]]*"
    r"|\btmp[a-zA-Z0-9_]{6,}\b"
    r"|[A-Za-z]:\\(?:[^\s\\:]+\\)*(?:Temp|tmp)\\[^\s'\"`:,;)\]]*"
)
"""A Windows directory name has no ``:``; stopping there keeps the scan from each drive letter
to the next one, instead of to the end of a whitespace-free run (quadratic in a long line of
``C:\\…`` paths)."""
_PATH = re.compile(
    r"(?:[A-Za-z]:\\|\\\\|(?<![\w.~@+-]))(?:[\w.~@+-]+[/\\])+([\w.~@+-]+)"
    r"|(?<![\w<])/(?:[\w.~@+-]+/)*([\w.~@+-]+)"
)
"""Linear time: a path starts at a drive (``C:\\``), a UNC prefix or the first character of a
name (the lookbehind: never inside one, where every start would rescan the rest of the name),
and its last segment takes the same characters as the others (``~`` included), so backing off
one segment always ends the match instead of retrying every shorter chain."""
_LINE = re.compile(r"\b(line|ln|col|column)\s+\d+", re.IGNORECASE)
_POSITION = re.compile(r"(\.\w{1,8}):\d+(?::\d+)?")
_DURATION = re.compile(
    r"\b\d+(?:\.\d+)?\s?(?:ms|us|µs|ns|s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?)\b"
)
_QUOTED = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|`[^`\n]*`")
_NAME = re.compile(r"[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*")
_NUMBER = re.compile(r"(?<![\w.<])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w>])")
_SPACE = re.compile(r"[ \t]+")


def normalise(text: str) -> str:
    """Apply the drift rules (module docstring) to ``text``; line structure is kept."""
    text = _ANSI.sub("", text)
    text = _UUID.sub("<uuid>", text)
    text = _TIMESTAMP.sub("<time>", text)
    text = _HEX.sub("<hex>", text)
    text = _TMP.sub("<tmp>", text)
    text = _PATH.sub(lambda m: m.group(1) or m.group(2), text)
    text = _LINE.sub(lambda m: f"{m.group(1).lower()} <n>", text)
    text = _POSITION.sub(lambda m: f"{m.group(1)}:<n>", text)
    text = _DURATION.sub("<dur>", text)
    text = _QUOTED.sub(_quoted, text)
    text = _NUMBER.sub("<n>", text)
    lines: list[str] = []
    for raw in text.splitlines():
        line = _SPACE.sub(" ", raw).strip()
        if line and (not lines or lines[-1] != line):
            lines.append(line)
    return "\n".join(lines)


def _quoted(match: re.Match[str]) -> str:
    """A quoted value becomes ``<str>``; a quoted identifier, dotted name or file name is kept:
    it names code (an attribute, a keyword, a module), and a different name is a different
    failure, while a different value (``'11111'`` vs ``'55555'``) is drift."""
    inner = match.group(0)[1:-1]
    return match.group(0) if _NAME.fullmatch(inner) else "<str>"


# ---- what part of an output is the error -------------------------------------------------------

_TRACEBACK = "Traceback (most recent call last):"
_FRAME = re.compile(r'^[ \t]*File "([^"]*)", line \d+(?:, in (\S+))?', re.M)
_EXC_LINE = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?::\s?(.*))?$")
_PYTEST_FAILED = re.compile(r"^(FAILED|ERROR) ([^\s(]\S*)", re.M)
_RAISED = re.compile(
    r"^(?:E\s+)?((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Warning|Failure|Failed))\b:?",
    re.M,
)
_UNITTEST_HEADER = re.compile(r"^(FAIL|ERROR): (\S+) \(([^)]*)\)", re.M)
_ERROR_WORDS = re.compile(
    r"error|exception|fail|fatal|panic|denied|not found|no such|cannot|can't|could not|"
    r"undefined|invalid|unexpected|refused|timed? ?out|abort|segmentation|traceback|"
    r"\bE\s{2,}",
    re.IGNORECASE,
)
_MAX_LINES = 6


@dataclass(frozen=True)
class Signature:
    """The stable part of an error, before hashing. ``kind`` says which rule produced it."""

    kind: str  # "python" | "tests" | "text"
    text: str


def signature(text: str) -> Signature | None:
    """The stable description of the failure in ``text``; ``None`` when there is nothing.

    Tracebacks take precedence over test-runner lines only when no test ids are present:
    a test run's identity is which tests fail and how, not the traceback of the first one.
    """
    text = _ANSI.sub("", text[-MAX_INPUT_CHARS:])
    if not text.strip():
        return None
    tests = _test_failures(text)
    if tests:
        return Signature("tests", "\n".join(tests))
    python = _python_traceback(text)
    if python is not None:
        return Signature("python", python)
    return Signature("text", _error_lines(text))


def fingerprint(text: str | None) -> str | None:
    """``fp1:<16 hex>`` for the failure in ``text``, or ``None`` for empty text.

    Same failure with drifting text → same fingerprint; the hash is SHA-256 of the signature
    kind and text, truncated to 64 bits (collisions between distinct signatures: ~2⁻³²
    after 65k distinct failures, irrelevant against the normalisation's own merging).
    """
    if text is None:
        return None
    sig = signature(text)
    if sig is None or not sig.text:
        return None
    # surrogatepass: text decoded with errors="surrogateescape" holds lone surrogates.
    data = f"{sig.kind}\n{sig.text}".encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(data).hexdigest()[:16]
    return f"{FINGERPRINT_VERSION}:{digest}"


def _python_traceback(text: str) -> str | None:
    start = text.rfind(_TRACEBACK)
    if start < 0:
        return None
    block = text[start + len(_TRACEBACK) :]
    frames: list[tuple[str, str]] = _FRAME.findall(block)
    where = "?"
    if frames:
        path, func = frames[-1]
        # A SyntaxError's frame has no function: the file is the location.
        where = f"{_basename(path)}:{func or '-'}"
    # The exception line is the first unindented ``Name`` or ``Name: message`` line after the
    # innermost frame (frames and their source lines are indented).
    after = block[match.end() :] if (match := _last(_FRAME.finditer(block))) else block
    exc_type, message = "?", ""
    for line in after.splitlines():
        found = _EXC_LINE.match(line.rstrip())
        if found:
            exc_type, message = found.group(1), found.group(2) or ""
            break
    if exc_type == "?":
        return None if not frames else f"? in {where}"
    exc_type = exc_type.rsplit(".", 1)[-1]
    return f"{exc_type} in {where}\n{normalise(message)}".strip()


def _last(matches: Iterator[re.Match[str]]) -> re.Match[str] | None:
    last = None
    for match in matches:
        last = match
    return last


def _basename(path: str) -> str:
    return re.split(r"[/\\]", path)[-1]


def _test_failures(text: str) -> list[str]:
    found: set[str] = set()
    for status, test_id in _PYTEST_FAILED.findall(text):
        found.add(f"{status} {normalise(test_id)}")
    for status, name, where in _UNITTEST_HEADER.findall(text):
        found.add(f"{status} {where}.{name}")
    if not found:
        return []
    raised = {name.rsplit(".", 1)[-1] for name in _RAISED.findall(text)}
    return sorted(found) + ([f"raised {' '.join(sorted(raised))}"] if raised else [])


def _error_lines(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    picked = [line for line in lines if _ERROR_WORDS.search(line)]
    chosen = picked[-_MAX_LINES:] if picked else lines[-_MAX_LINES:]
    return normalise("\n".join(chosen))
