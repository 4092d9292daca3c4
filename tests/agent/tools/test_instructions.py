from __future__ import annotations

import os
from pathlib import Path

from veil.agent.instructions import project_instructions


def test_no_files_gives_empty_text(tmp_path: Path) -> None:
    assert project_instructions(tmp_path, home=tmp_path) == ""


def test_files_from_parents_outermost_first_with_paths(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    pkg = repo / "pkg"
    pkg.mkdir(parents=True)
    (tmp_path / "AGENTS.md").write_text("home rules\n")
    (repo / "AGENTS.md").write_text("repo rules\n")
    (repo / "CLAUDE.md").write_text("claude rules")
    (pkg / "AGENTS.md").write_text("pkg rules\n")
    text = project_instructions(pkg, home=tmp_path)
    assert text == (
        f"--- {tmp_path / 'AGENTS.md'} ---\nhome rules\n\n"
        f"--- {repo / 'AGENTS.md'} ---\nrepo rules\n\n"
        f"--- {repo / 'CLAUDE.md'} ---\nclaude rules\n\n"
        f"--- {pkg / 'AGENTS.md'} ---\npkg rules\n"
    )


def test_search_stops_at_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = home / "project"
    project.mkdir(parents=True)
    (tmp_path / "AGENTS.md").write_text("above home\n")
    (project / "AGENTS.md").write_text("project\n")
    text = project_instructions(project, home=home)
    assert "above home" not in text and "project\n" in text


def test_outside_home_goes_up_to_the_root(tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    (tmp_path / "AGENTS.md").write_text("parent\n")
    text = project_instructions(project, home=tmp_path / "elsewhere")
    assert "parent\n" in text


def test_duplicates_appear_once(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("same rules\n")
    os.symlink(tmp_path / "AGENTS.md", tmp_path / "CLAUDE.md")
    text = project_instructions(tmp_path, home=tmp_path)
    assert text.count("same rules") == 1


def test_budget_goes_to_the_innermost_files(tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    (tmp_path / "AGENTS.md").write_text("outer line\n" * 50)
    (inner / "AGENTS.md").write_text("inner line\n" * 50)  # 550 bytes
    text = project_instructions(inner, home=tmp_path, max_bytes=600)
    assert text.count("inner line") == 50
    assert "[truncated: showing 44 of 550 bytes]" in text
    assert text.count("outer line") == 4
    assert text.index("outer line") < text.index("inner line")  # still outermost first
    tight = project_instructions(inner, home=tmp_path, max_bytes=100)
    assert "outer line" not in tight
    assert "[omitted: 550 bytes" in tight


def test_unreadable_and_non_utf8_files(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_bytes(b"caf\xe9\n")
    (tmp_path / "CLAUDE.md").mkdir()  # a directory by that name is not a file
    text = project_instructions(tmp_path, home=tmp_path)
    assert "caf\ufffd" in text and "CLAUDE.md" not in text


def test_empty_files_are_skipped_and_one_huge_line_is_cut(tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    (tmp_path / "AGENTS.md").write_text("   \n")
    (inner / "AGENTS.md").write_text("x" * 5000)
    text = project_instructions(inner, home=tmp_path, max_bytes=2000)
    assert (
        text
        == f"--- {inner / 'AGENTS.md'} ---\n{'x' * 2000}\n[truncated: showing 2000 of 5000 bytes]\n"
    )
