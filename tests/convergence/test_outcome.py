"""Outcome detection from tool results, one case per test runner, and real summaries taken from
the SWE-bench trajectories in ../shared/data/trajectories (set A, mini-swe-agent + Gemini 3 Pro,
MIT): the step is cited beside each."""

from __future__ import annotations

import pytest

from veil.convergence.outcome import Detection, detect, resolve, runner_summary


@pytest.mark.parametrize(
    ("output", "runner", "passed", "failed"),
    [
        ("==== 2 failed, 10 passed, 1 error in 0.52s ====", "pytest", 10, 3),
        ("3 passed in 0.12s", "pytest", 3, 0),
        ("Ran 5 tests in 0.010s\n\nFAILED (failures=1, errors=1)", "unittest", 3, 2),
        ("Ran 4 tests in 0.002s\n\nOK (skipped=1)", "unittest", 3, 0),
        ("--- FAIL: TestAdd (0.00s)\n--- PASS: TestSub (0.00s)\nFAIL\tex/m\t0.01s", "go", 1, 1),
        ("ok  \texample.com/m\t0.012s", "go", 1, 0),
        ("test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured", "cargo", 3, 1),
        ("test result: ok. 7 passed; 0 failed; 0 ignored", "cargo", 7, 0),
        ("Tests:       1 failed, 4 passed, 5 total", "jest", 4, 1),
        (" Tests  2 failed | 8 passed (10)", "jest", 8, 2),
        ("  5 passing (20ms)\n  1 failing\n", "mocha", 5, 1),
        ("12 examples, 2 failures, 1 pending", "rspec", 9, 2),
        ("Tests run: 5, Failures: 1, Errors: 1, Skipped: 1", "junit", 2, 2),
        ("12 tests completed, 3 failed", "junit", 9, 3),
    ],
)
def test_runner_summaries(output: str, runner: str, passed: int, failed: int) -> None:
    summary = runner_summary(output)
    assert summary is not None
    assert (summary.runner, summary.passed, summary.failed) == (runner, passed, failed)


REAL = [
    # mini-gemini3pro-verified/astropy__astropy-13236 step 21
    ("=================== 1 failed, 186 passed, 6 skipped in 1.30s ===================", 186, 1),
    # mini-gemini3pro-verified/astropy__astropy-13236 step 32
    ("============= 1 failed, 458 passed, 19 skipped, 1 xfailed in 3.25s =============", 458, 1),
    # mini-gemini3pro-verified/astropy__astropy-8707 step 50
    ("======================== 4 passed, 146 errors in 31.46s ========================", 4, 146),
    # mini-gemini3pro-verified/astropy__astropy-12907 step 12 (the form of a passing run)
    ("============================== 15 passed in 0.15s ==============================", 15, 0),
    # mini-gemini3pro-verified/sympy__sympy-15599 step 8 (SymPy's bin/test)
    ("=== tests finished: 81 passed, 1 failed, 3 expected to fail, in 3.86 seconds ===", 81, 1),
]


@pytest.mark.parametrize(("line", "passed", "failed"), REAL)
def test_real_summaries(line: str, passed: int, failed: int) -> None:
    summary = runner_summary("...\n" + line + "\n")
    assert summary is not None and (summary.passed, summary.failed) == (passed, failed)
    found = detect(
        "bash", {"command": "pytest"}, line, 0 if failed == 0 else 1, False, action="test"
    )
    assert found.outcome == ("pass" if failed == 0 else "fail")
    assert found.failures == failed


def test_tool_error_is_a_fail() -> None:
    assert detect("edit", {}, "no such file", None, True, action="edit").outcome == "fail"


def test_exit_code_decides_without_a_summary() -> None:
    assert detect("bash", "ls", "a\nb", 0, False).outcome == "pass"
    assert detect("bash", "ls x", "ls: x: No such file", 2, False).outcome == "fail"


def test_an_applied_edit_is_unknown_until_verified() -> None:
    assert detect("bash", "sed -i s/a/b/ f.py", "", 0, False, action="edit").outcome == "unknown"
    assert (
        detect("bash", "sed -i …", "sed: -e expression", 1, False, action="edit").outcome == "fail"
    )


def test_no_exit_code_uses_tracebacks() -> None:
    out = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nValueError: v'
    assert detect("bash", "python x.py", out, None, False, action="run").outcome == "fail"
    assert detect("bash", "python x.py", "all good", None, False, action="run").outcome == "unknown"


def test_passing_tests_but_failing_command_is_a_fail() -> None:
    assert (
        detect("bash", "pytest; false", "3 passed in 0.1s", 1, False, action="test").outcome
        == "fail"
    )


def test_partial_is_fewer_failures_than_last_time() -> None:
    fail3 = Detection("fail", failures=3)
    assert resolve(fail3, previous_failures=5) == "partial"
    assert resolve(fail3, previous_failures=3) == "fail"
    assert resolve(fail3, previous_failures=None) == "fail"
    assert resolve(Detection("pass", failures=0), previous_failures=5) == "pass"


def test_evidence_is_short_and_relevant() -> None:
    out = "collecting\n" + "x" * 50 + "\nE   AssertionError: " + "y" * 1000 + "\ndone"
    found = detect("bash", "pytest", out, 1, False, action="test")
    assert found.evidence.startswith("E   AssertionError") and len(found.evidence) <= 300
