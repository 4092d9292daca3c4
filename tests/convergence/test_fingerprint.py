"""Fingerprints: each normalisation rule, the traceback and test-runner rules, and collision
precision/recall on a hand-labelled corpus of real agent error outputs
(tests/data/fingerprints/corpus.json; its header cites the trajectories)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from veil.convergence.fingerprint import FINGERPRINT_VERSION, fingerprint, normalise, signature

CORPUS = Path(__file__).resolve().parents[1] / "data" / "fingerprints" / "corpus.json"
MIN_PRECISION = 0.95
MIN_RECALL = 0.90


def load_corpus() -> dict[str, Any]:
    return json.loads(CORPUS.read_text())


def collision_stats(items: list[dict[str, Any]]) -> tuple[int, int, int]:
    """(true collisions, false collisions, missed collisions) over all pairs."""
    prints = [fingerprint(i["text"]) for i in items]
    tp = fp = fn = 0
    for (a, pa), (b, pb) in itertools.combinations(zip(items, prints, strict=True), 2):
        same, collide = a["failure"] == b["failure"], pa == pb
        tp += same and collide
        fp += collide and not same
        fn += same and not collide
    return tp, fp, fn


def test_corpus_is_cited_and_small() -> None:
    corpus = load_corpus()
    assert corpus["trajectories"] and "source" in corpus
    cited = set(corpus["trajectories"])
    for item in corpus["items"]:
        assert item["trajectory"] in cited
        lines = item["text"].splitlines()
        assert 1 <= len(lines) <= 7 and all(len(line) <= 300 for line in lines)


def test_corpus_precision_and_recall() -> None:
    items = load_corpus()["items"]
    assert len(items) >= 100
    tp, fp, fn = collision_stats(items)
    assert tp >= 40, "the corpus must contain enough same-failure pairs to mean something"
    precision, recall = tp / (tp + fp), tp / (tp + fn)
    print(f"corpus: {len(items)} items, precision {precision:.3f}, recall {recall:.3f}")
    assert precision >= MIN_PRECISION
    assert recall >= MIN_RECALL


def test_version_prefix_and_empty() -> None:
    fp = fingerprint("ValueError: boom")
    assert fp is not None and fp.startswith(f"{FINGERPRINT_VERSION}:") and len(fp) == 20
    assert fingerprint("") is None and fingerprint("   \n ") is None and fingerprint(None) is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("\x1b[31mERROR\x1b[0m here", "ERROR here"),
        ("id 123e4567-e89b-12d3-a456-426614174000 gone", "id <uuid> gone"),
        ("at 2024-03-05T10:11:12.5+01:00 and 10:11:12", "at <time> and <time>"),
        ("<Foo object at 0x7f3a2b1c9d00>", "<Foo object at <hex>>"),
        ("commit deadbeef1234 broke it", "commit <hex> broke it"),
        ("wrote /tmp/pytest-of-me/pytest-3/x0/out.txt", "wrote <tmp>"),
        ("in /tmp/tmpab12cd34/x.py", "in <tmp>"),
        ("see /testbed/django/db/models/query.py now", "see query.py now"),
        ('File "query.py", line 345, in filter', 'File "query.py", line <n>, in filter'),
        ("query.py:12:5: E501 too long", "query.py:<n>: E501 too long"),
        ("ran in 0.25s and 12 ms", "ran in <dur> and <dur>"),
        ("KeyError: 'a b'", "KeyError: <str>"),
        ("has no attribute 'srcdir'", "has no attribute 'srcdir'"),
        ("expected 3, got 4.5", "expected <n>, got <n>"),
        ("int64 test_issue_123 x2", "int64 test_issue_123 x2"),
        ("  a   b  \n\n  a   b  \nc", "a b\nc"),
    ],
)
def test_normalisation_rules(raw: str, expected: str) -> None:
    assert normalise(raw) == expected


TRACE = """Traceback (most recent call last):
  File "/testbed/reproduce.py", line {outer}, in <module>
    main()
  File "/testbed/pkg/core.py", line {inner}, in compute
    return table[key]
KeyError: {value}
"""


def test_traceback_uses_innermost_frame_and_type() -> None:
    a = TRACE.format(outer=3, inner=40, value="'12345'")
    b = TRACE.format(outer=9, inner=41, value="'99'")
    assert fingerprint(a) == fingerprint(b)
    sig = signature(a)
    assert (
        sig is not None
        and sig.kind == "python"
        and sig.text.startswith("KeyError in core.py:compute")
    )
    other_function = a.replace("in compute", "in combine")
    assert fingerprint(other_function) != fingerprint(a)
    other_type = a.replace("KeyError", "IndexError")
    assert fingerprint(other_type) != fingerprint(a)


def test_syntax_error_location_is_the_file() -> None:
    a = """Traceback (most recent call last):
  File "/testbed/x/pyplot.py", line 224
    if x: if y: pass
          ^^
SyntaxError: invalid syntax"""
    b = a.replace("224", "230").replace("if x: if y", "if a: if b")
    assert fingerprint(a) == fingerprint(b)
    assert fingerprint(a) != fingerprint(a.replace("pyplot.py", "figure.py"))


def test_test_runner_output_uses_failing_test_ids() -> None:
    run1 = (
        "FAILED tests/test_a.py::test_x - Type...\n"
        "E       TypeError: bad\n= 1 failed, 10 passed in 0.31s ="
    )
    run2 = (
        "FAILED tests/test_a.py::test_x - TypeError: bad thi...\n"
        "E       TypeError: bad\n= 1 failed, 12 passed in 1.02s ="
    )
    assert fingerprint(run1) == fingerprint(run2)
    assert fingerprint(run1) != fingerprint(run1.replace("test_x", "test_y"))
    assert fingerprint(run1) != fingerprint(run1.replace("E       TypeError", "E   ValueError"))


def test_plain_error_lines() -> None:
    a = "ls: cannot access 'reproduce_issue.py': No such file or directory"
    b = "ls: cannot access 'other.py': No such file or directory"
    assert fingerprint(a) != fingerprint(b)
    assert fingerprint("bash: line 1: pytest: command not found") == fingerprint(
        "bash: line 7: pytest: command not found"
    )
