from __future__ import annotations

import os
import stat
from pathlib import Path

from veil.agent.tools._common import MAX_BYTES, MAX_LINES

from .conftest import RunTool


def numbered(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


def test_read_returns_the_text_as_is(run: RunTool, project: Path) -> None:
    (project / "a.py").write_text("x = 1\n\ny = 2")
    result = run("read", path="a.py")
    assert not result.is_error
    assert result.content == "x = 1\n\ny = 2"
    assert result.full_output is None
    assert result.details["total_lines"] == 3


def test_read_offset_and_limit_with_continuation_note(run: RunTool, project: Path) -> None:
    (project / "a.txt").write_text(numbered(10))
    result = run("read", path="a.txt", offset=3, limit=2)
    assert result.content == (
        "line 3\nline 4\n\n[showing lines 3-4 of 10; call read with offset=5 to continue]"
    )
    assert result.full_output is None  # the model asked for a part; nothing was cut by us
    assert run("read", path="a.txt", offset=9).content == "line 9\nline 10\n"


def test_read_offset_past_the_end(run: RunTool, project: Path) -> None:
    (project / "a.txt").write_text(numbered(3))
    result = run("read", path="a.txt", offset=4)
    assert result.is_error
    assert "past the end" in result.content and "3 lines" in result.content


def test_read_truncates_long_files_head_first_keeping_full_output(
    run: RunTool, project: Path
) -> None:
    text = numbered(MAX_LINES + 500)
    (project / "big.txt").write_text(text)
    result = run("read", path="big.txt")
    assert result.content.startswith("line 1\nline 2\n")
    assert f"line {MAX_LINES}\n" in result.content
    assert f"line {MAX_LINES + 1}\n" not in result.content
    assert result.content.endswith(
        f"[showing lines 1-{MAX_LINES} of {MAX_LINES + 500}; "
        f"call read with offset={MAX_LINES + 1} to continue]"
    )
    assert result.full_output == text
    assert result.details["truncated"] is True
    follow = run("read", path="big.txt", offset=MAX_LINES + 1)
    assert follow.content == numbered(MAX_LINES + 500).split("\n", MAX_LINES)[-1]


def test_read_truncates_by_bytes(run: RunTool, project: Path) -> None:
    text = ("x" * 999 + "\n") * 100  # 100 KB in 100 lines
    (project / "wide.txt").write_text(text)
    result = run("read", path="wide.txt")
    kept = result.content.split("\n\n[showing")[0]
    assert len(kept.encode()) <= MAX_BYTES
    assert "[showing lines 1-51 of 100; call read with offset=52 to continue]" in result.content
    assert result.full_output == text


def test_read_a_single_huge_line(run: RunTool, project: Path) -> None:
    (project / "min.js").write_text("a" * (MAX_BYTES * 2) + "\nnext\n")
    result = run("read", path="min.js")
    assert not result.is_error
    assert "line 1 is longer than" in result.content
    assert "offset=2" in result.content
    assert result.full_output is not None


def test_read_binary_and_non_utf8_files_are_errors(run: RunTool, project: Path) -> None:
    (project / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (project / "latin1.txt").write_bytes("café".encode("latin-1"))
    binary = run("read", path="img.png")
    assert binary.is_error and "binary file" in binary.content
    latin = run("read", path="latin1.txt")
    assert latin.is_error and "not UTF-8" in latin.content


def test_read_missing_file_suggests_similar_names(run: RunTool, project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "config.py").write_text("")
    result = run("read", path="src/confg.py")
    assert result.is_error
    assert "not found: src/confg.py" in result.content
    assert "Did you mean: src/config.py?" in result.content
    nodir = run("read", path="nope/x.py")
    assert nodir.is_error and "directory nope does not exist" in nodir.content


def test_read_directory_and_empty_file(run: RunTool, project: Path) -> None:
    (project / "d").mkdir()
    (project / "empty").write_text("")
    assert "use ls" in run("read", path="d").content
    assert run("read", path="empty").content == "[empty file]"


def test_read_keeps_crlf_and_drops_bom(run: RunTool, project: Path) -> None:
    (project / "w.txt").write_bytes("\ufeffa\r\nb\r\n".encode())
    assert run("read", path="w.txt").content == "a\r\nb\r\n"


def test_write_creates_parents_and_reports(run: RunTool, project: Path) -> None:
    result = run("write", path="a/b/c.txt", content="one\ntwo\n")
    assert not result.is_error
    assert result.content == "Created a/b/c.txt: 8 bytes, 2 lines."
    assert result.details == {"path": "a/b/c.txt", "bytes": 8, "lines": 2, "created": True}
    assert (project / "a/b/c.txt").read_bytes() == b"one\ntwo\n"


def test_write_overwrites_exactly_keeping_mode(run: RunTool, project: Path) -> None:
    script = project / "run.sh"
    script.write_text("old\n")
    script.chmod(0o755)
    result = run("write", path="run.sh", content="new\r\nno final newline é")
    assert result.content.startswith("Overwrote run.sh")
    assert script.read_bytes() == "new\r\nno final newline é".encode()
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert [p.name for p in project.iterdir()] == ["run.sh"]  # no temp file left behind


def test_write_is_atomic_replace(run: RunTool, project: Path) -> None:
    target = project / "f.txt"
    target.write_text("old")
    inode = target.stat().st_ino
    run("write", path="f.txt", content="new")
    assert target.stat().st_ino != inode  # a rename, not an in-place rewrite


def test_write_new_file_mode_follows_umask(run: RunTool, project: Path) -> None:
    old = os.umask(0o027)
    try:
        run("write", path="n.txt", content="")
    finally:
        os.umask(old)
    assert stat.S_IMODE((project / "n.txt").stat().st_mode) == 0o640


def test_write_refuses_directories_and_file_parents(run: RunTool, project: Path) -> None:
    (project / "d").mkdir()
    (project / "f").write_text("")
    assert "is a directory" in run("write", path="d", content="x").content
    blocked = run("write", path="f/x.txt", content="x")
    assert blocked.is_error and blocked.content.startswith("write failed:")


def test_write_refuses_lone_surrogates(run: RunTool, project: Path) -> None:
    result = run("write", path="s.txt", content="bad \ud800")
    assert result.is_error and "not valid Unicode" in result.content
    assert not (project / "s.txt").exists()
