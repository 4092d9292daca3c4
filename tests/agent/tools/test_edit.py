from __future__ import annotations

from pathlib import Path

from .conftest import RunTool

SOURCE = "def f():\n    return 1\n\n\ndef g():\n    return 1\n"


def test_one_match_is_replaced_with_a_diff(run: RunTool, project: Path) -> None:
    (project / "m.py").write_text(SOURCE)
    result = run(
        "edit", path="m.py", old_text="def g():\n    return 1", new_text="def g():\n    return 2"
    )
    assert not result.is_error, result.content
    assert (project / "m.py").read_text() == SOURCE.replace(
        "    return 1\n", "    return 2\n"
    ).replace("def f():\n    return 2", "def f():\n    return 1")
    assert result.content.startswith("Edited m.py at line 5: replaced 2 line(s) with 2 line(s).")
    assert "--- a/m.py\n+++ b/m.py\n" in result.content
    assert "-    return 1\n+    return 2\n" in result.content
    assert result.details["first_changed_line"] == 5
    assert result.details["diff"] in result.content


def test_zero_matches_changes_nothing_and_shows_the_closest_region(
    run: RunTool, project: Path
) -> None:
    (project / "m.py").write_text(SOURCE)
    result = run("edit", path="m.py", old_text="def g():\n  return 1", new_text="x")
    assert result.is_error
    assert result.content.startswith("No change made: old_text was not found in m.py.")
    assert "most similar region is lines" in result.content
    assert "def g():\n    return 1" in result.content
    assert (project / "m.py").read_text() == SOURCE


def test_zero_matches_without_anything_similar(run: RunTool, project: Path) -> None:
    (project / "m.py").write_text(SOURCE)
    result = run("edit", path="m.py", old_text="zzzzzzzzzzzzzzzz", new_text="x")
    assert result.is_error
    assert "most similar" not in result.content


def test_many_matches_report_count_and_lines(run: RunTool, project: Path) -> None:
    (project / "m.py").write_text(SOURCE)
    result = run("edit", path="m.py", old_text="    return 1\n", new_text="    return 3\n")
    assert result.is_error
    assert "occurs 2 times in m.py (starting at lines 2, 6)" in result.content
    assert "more surrounding lines" in result.content
    assert (project / "m.py").read_text() == SOURCE


def test_overlapping_matches_are_ambiguous(run: RunTool, project: Path) -> None:
    (project / "a.txt").write_text("aaa\n")
    result = run("edit", path="a.txt", old_text="aa", new_text="b")
    assert result.is_error and "occurs 2 times" in result.content


def test_crlf_file_edited_with_lf_text_stays_crlf(run: RunTool, project: Path) -> None:
    (project / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = run("edit", path="w.txt", old_text="two\nthree", new_text="2\n3\n3.5")
    assert not result.is_error, result.content
    assert (project / "w.txt").read_bytes() == b"one\r\n2\r\n3\r\n3.5\r\n"
    assert "\r" not in result.content


def test_crlf_old_text_also_matches(run: RunTool, project: Path) -> None:
    (project / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    run("edit", path="w.txt", old_text="one\r\n", new_text="uno\r\n")
    assert (project / "w.txt").read_bytes() == b"uno\r\ntwo\r\n"


def test_mixed_endings_are_matched_byte_for_byte(run: RunTool, project: Path) -> None:
    (project / "m.txt").write_bytes(b"a\r\nb\nc\n")
    run("edit", path="m.txt", old_text="b\nc", new_text="B\nC")
    assert (project / "m.txt").read_bytes() == b"a\r\nB\nC\n"


def test_missing_final_newline_and_bom_are_preserved(run: RunTool, project: Path) -> None:
    (project / "n.txt").write_bytes("\ufeffalpha\nbeta".encode())
    result = run("edit", path="n.txt", old_text="beta", new_text="gamma")
    assert not result.is_error
    assert (project / "n.txt").read_bytes() == "\ufeffalpha\ngamma".encode()
    (project / "t.txt").write_text("x\ny\n")
    run("edit", path="t.txt", old_text="y", new_text="z")
    assert (project / "t.txt").read_text() == "x\nz\n"


def test_deleting_text(run: RunTool, project: Path) -> None:
    (project / "d.txt").write_text("keep\ndrop\nkeep too\n")
    run("edit", path="d.txt", old_text="drop\n", new_text="")
    assert (project / "d.txt").read_text() == "keep\nkeep too\n"


def test_refusals(run: RunTool, project: Path) -> None:
    (project / "a.txt").write_text("same\n")
    (project / "bin").write_bytes(b"\x00\x01same")
    empty = run("edit", path="a.txt", old_text="", new_text="x")
    assert empty.is_error and "must not be empty" in empty.content
    same = run("edit", path="a.txt", old_text="same", new_text="same")
    assert same.is_error and "identical" in same.content
    missing = run("edit", path="b.txt", old_text="x", new_text="y")
    assert missing.is_error and "not found" in missing.content
    assert run("edit", path="bin", old_text="same", new_text="x").is_error
    assert (project / "a.txt").read_text() == "same\n"


def test_edit_keeps_file_mode(run: RunTool, project: Path) -> None:
    script = project / "s.sh"
    script.write_text("echo 1\n")
    script.chmod(0o750)
    run("edit", path="s.sh", old_text="1", new_text="2")
    assert script.stat().st_mode & 0o777 == 0o750
    assert script.read_text() == "echo 2\n"
