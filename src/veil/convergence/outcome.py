"""Outcome detection from a tool result. Pure.

The harness hands over what it has after a tool call — the tool name, its arguments, the output
text, the shell exit code and whether the tool itself errored — and :func:`detect` says how it
came out. Evidence, in order of trust:

1. **The tool errored** (``is_error``): ``fail``.
2. **A test runner's summary line** (pytest, unittest, SymPy's ``bin/test``, go test, cargo
   test, jest, vitest, mocha, rspec, JUnit via Maven/Gradle): ``fail`` when it reports failures
   or errors, ``pass`` when it reports passes and none failed (and the exit code, if any, is 0).
   The failure count is kept so that :func:`resolve` can turn a ``fail`` with fewer failures
   than last time into ``partial``.
3. **An edit** that applied (exit code 0 or none) is ``unknown``: whether it helped is only
   known when something verifies it. A failed edit is ``fail``.
4. **The exit code**: 0 → ``pass``, anything else → ``fail``.
5. **No exit code**: a Python traceback in the output → ``fail``; otherwise ``unknown``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from veil.convergence.attempt import Action, Outcome

MAX_EVIDENCE_CHARS = 300


@dataclass(frozen=True)
class RunnerSummary:
    """What a test runner's summary said. ``failed`` includes errors."""

    runner: str
    passed: int
    failed: int
    line: str


@dataclass(frozen=True)
class Detection:
    """The outcome of one tool call, the runner summary it came from (if any) and the evidence."""

    outcome: Outcome
    failures: int | None = None
    passed: int | None = None
    runner: str | None = None
    evidence: str = ""


def _count(pattern: str, text: str) -> int:
    match = re.search(pattern, text)
    return int(match.group(1)) if match else 0


def _pytest(line: str) -> tuple[int, int] | None:
    # "==== 1 failed, 2 passed, 1 error in 0.12s ====" and the -q form without the rules.
    if not re.search(r"\b\d+ (?:passed|failed|errors?|xfailed|xpassed|skipped|deselected)\b", line):
        return None
    if not re.search(r"\bin \d+(?:\.\d+)?s\b|\bin [\d:.]+ ?\(|\bin \d+(?:\.\d+)? seconds\b", line):
        return None
    if "tests finished" in line:
        return None
    failed = _count(r"\b(\d+) failed\b", line) + _count(r"\b(\d+) errors?\b", line)
    return _count(r"\b(\d+) passed\b", line), failed


def _sympy(line: str) -> tuple[int, int] | None:
    if "tests finished:" not in line:
        return None
    failed = _count(r"\b(\d+) failed\b", line) + _count(r"\b(\d+) exceptions?\b", line)
    return _count(r"\b(\d+) passed\b", line), failed


def _cargo(line: str) -> tuple[int, int] | None:
    if not re.search(r"^test result: (?:ok|FAILED)\.", line):
        return None
    return _count(r"\b(\d+) passed\b", line), _count(r"\b(\d+) failed\b", line)


def _jest(line: str) -> tuple[int, int] | None:
    # jest: "Tests:       1 failed, 4 passed, 5 total"; vitest: "Tests  1 failed | 4 passed (5)"
    if not re.match(r"^\s*Tests:?\s+\d+ (?:failed|passed|skipped|todo)", line):
        return None
    return _count(r"\b(\d+) passed\b", line), _count(r"\b(\d+) failed\b", line)


def _mocha_passing(line: str) -> tuple[int, int] | None:
    match = re.match(r"^\s*(\d+) passing \(", line)
    return (int(match.group(1)), 0) if match else None


def _mocha_failing(line: str) -> tuple[int, int] | None:
    match = re.match(r"^\s*(\d+) failing\s*$", line)
    return (0, int(match.group(1))) if match else None


def _rspec(line: str) -> tuple[int, int] | None:
    match = re.match(r"^\s*(\d+) examples?, (\d+) failures?", line)
    if not match:
        return None
    total, failed = int(match.group(1)), int(match.group(2))
    pending = _count(r"\b(\d+) pending\b", line)
    return max(0, total - failed - pending), failed


def _junit(line: str) -> tuple[int, int] | None:
    # Maven surefire: "Tests run: 5, Failures: 1, Errors: 0, Skipped: 0"; Gradle: "5 tests
    # completed, 1 failed".
    match = re.search(
        r"Tests run: (\d+), Failures: (\d+), Errors: (\d+)(?:, Skipped: (\d+))?", line
    )
    if match:
        run, fails, errors = int(match.group(1)), int(match.group(2)), int(match.group(3))
        skipped = int(match.group(4) or 0)
        return max(0, run - fails - errors - skipped), fails + errors
    match = re.search(r"\b(\d+) tests? completed, (\d+) failed", line)
    if match:
        return int(match.group(1)) - int(match.group(2)), int(match.group(2))
    return None


_LineParser = Callable[[str], "tuple[int, int] | None"]
_LINE_RUNNERS: tuple[tuple[str, _LineParser, bool], ...] = (
    # (runner, parser, sum over lines?) — mocha and go print one line per part; the others one
    # summary per run (the last is the aggregate for Maven, which also prints per-class lines).
    ("sympy", _sympy, False),
    ("pytest", _pytest, False),
    ("cargo", _cargo, True),
    ("jest", _jest, False),
    ("rspec", _rspec, False),
    ("junit", _junit, False),
    ("mocha", _mocha_passing, True),
    ("mocha", _mocha_failing, True),
)


def runner_summary(output: str) -> RunnerSummary | None:
    """The test-runner verdict in ``output``, or ``None`` when no known summary is present."""
    lines = output.splitlines()
    found: dict[str, RunnerSummary] = {}
    for runner, parser, additive in _LINE_RUNNERS:
        for line in lines:
            counts = parser(line)
            if counts is None:
                continue
            passed, failed = counts
            before = found.get(runner)
            if additive and before is not None:
                passed, failed = passed + before.passed, failed + before.failed
            found[runner] = RunnerSummary(runner, passed, failed, line.strip())
    for runner in ("unittest", "go"):
        summary = _unittest(output) if runner == "unittest" else _go(output)
        if summary is not None:
            found[runner] = summary
    if not found:
        return None
    # Several runners matched (a chained command): add them up.
    if len(found) == 1:
        return next(iter(found.values()))
    return RunnerSummary(
        "+".join(sorted(found)),
        sum(s.passed for s in found.values()),
        sum(s.failed for s in found.values()),
        " | ".join(s.line for s in found.values()),
    )


def _unittest(output: str) -> RunnerSummary | None:
    ran = list(re.finditer(r"^Ran (\d+) tests? in [\d.]+s\s*$", output, re.M))
    if not ran:
        return None
    last = ran[-1]
    rest = output[last.end() :]
    verdict = re.search(r"^(OK|FAILED)\b(.*)$", rest, re.M)
    total = int(last.group(1))
    if verdict is None:
        return None
    detail = verdict.group(2)
    failed = _count(r"failures=(\d+)", detail) + _count(r"errors=(\d+)", detail)
    skipped = _count(r"skipped=(\d+)", detail) + _count(r"expected failures=(\d+)", detail)
    line = f"Ran {total} tests; {verdict.group(0).strip()}"
    return RunnerSummary("unittest", max(0, total - failed - skipped), failed, line)


def _go(output: str) -> RunnerSummary | None:
    failed = len(re.findall(r"^\s*--- FAIL: ", output, re.M))
    passed = len(re.findall(r"^\s*--- PASS: ", output, re.M))
    pkg_fail = re.findall(r"^FAIL\s+\S+\s+[\d.]+s\s*$", output, re.M)
    pkg_ok = re.findall(r"^ok\s+\S+\s+(?:[\d.]+s|\(cached\))", output, re.M)
    if not (failed or passed or pkg_fail or pkg_ok):
        return None
    if not failed and pkg_fail:
        failed = len(pkg_fail)  # a build failure or a panic: no per-test lines
    if not passed and pkg_ok:
        passed = len(pkg_ok)
    line = (pkg_fail or pkg_ok or [f"--- FAIL x{failed}, --- PASS x{passed}"])[-1]
    return RunnerSummary("go", passed, failed, line.strip())


def detect(
    tool_name: str,
    arguments: object,
    output: str,
    exit_code: int | None,
    is_error: bool,
    *,
    action: Action = "command",
) -> Detection:
    """The outcome of one tool call (rules in the module docstring).

    ``tool_name`` and ``arguments`` are accepted so the harness can hand over the call as is;
    they do not change the verdict (the action kind does).
    """
    del tool_name, arguments
    evidence = _evidence(output)
    if is_error:
        return Detection("fail", evidence=evidence)
    summary = runner_summary(output)
    if summary is not None:
        if summary.failed > 0 or (exit_code not in (None, 0) and summary.passed == 0):
            outcome: Outcome = "fail"
        elif exit_code not in (None, 0):
            outcome = "fail"  # the tests passed but something else in the command failed
        elif summary.passed > 0:
            outcome = "pass"
        else:
            outcome = "unknown"  # no tests ran
        return Detection(outcome, summary.failed, summary.passed, summary.runner, summary.line)
    if action == "edit":
        return Detection("fail" if exit_code not in (None, 0) else "unknown", evidence=evidence)
    if exit_code is not None:
        return Detection("pass" if exit_code == 0 else "fail", evidence=evidence)
    if "Traceback (most recent call last):" in output:
        return Detection("fail", evidence=evidence)
    return Detection("unknown", evidence=evidence)


def resolve(detection: Detection, previous_failures: int | None) -> Outcome:
    """``partial`` when a failing run has fewer failures than the previous run of the same
    target (a count of 0 with failures is impossible: that is a pass); otherwise unchanged."""
    if (
        detection.outcome == "fail"
        and detection.failures is not None
        and previous_failures is not None
        and 0 < detection.failures < previous_failures
    ):
        return "partial"
    return detection.outcome


_ERRORISH = re.compile(r"error|exception|fail|fatal|panic|traceback|not found|no such", re.I)


def _evidence(output: str) -> str:
    """A short excerpt: the last error-looking line, else the last non-empty line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if not lines:
        return ""
    errorish = [line for line in lines if _ERRORISH.search(line)]
    return (errorish or lines)[-1][:MAX_EVIDENCE_CHARS]
