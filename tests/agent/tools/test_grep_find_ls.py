from __future__ import annotations

import os
from pathlib import Path

import pytest

from veil.agent.tools import grep as grep_module
from veil.agent.tools._walk import glob_to_regex, parse_gitignore

from .conftest import RunTool


@pytest.fixture
def tree(project: Path) -> Path:
    files = {
        "README.md": "# Demo\nTODO: write docs\n",
        "src/app.py": "import os\n\ndef main():\n    # TODO: real work\n    return 0\n",
        "src/util.py": "def helper():\n    return 'todo in lowercase'\n",
        "src/sub/deep.py": "x = 1  # TODO deep\n",
        "src/web/app.ts": "// TODO ts\n",
        ".hidden.cfg": "TODO hidden\n",
        ".git/config": "TODO in git\n",
        "node_modules/pkg/index.js": "TODO in node_modules\n",
        ".venv/lib/site.py": "TODO in venv\n",
        "src/__pycache__/app.cpython-311.pyc": "TODO in pycache\n",
        "build/out.py": "TODO in build\n",
        "logs/run.log": "TODO in log\n",
        "logs/keep.log": "TODO kept log\n",
        ".gitignore": "build/\n*.log\n!keep.log\n",
    }
    for name, text in files.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (project / "src" / "blob.bin").write_bytes(b"TODO\x00\x01\x02")
    return project


def test_grep_finds_lines_with_paths_and_numbers(run: RunTool, tree: Path) -> None:
    result = run("grep", pattern="TODO")
    assert not result.is_error
    assert result.content.split("\n") == [
        ".hidden.cfg:1: TODO hidden",
        "README.md:2: TODO: write docs",
        "logs/keep.log:1: TODO kept log",
        "src/app.py:4:     # TODO: real work",
        "src/sub/deep.py:1: x = 1  # TODO deep",
        "src/web/app.ts:1: // TODO ts",
    ]
    assert result.details["matches"] == 6


def test_grep_skips_ignored_dirs_gitignore_and_binaries(run: RunTool, tree: Path) -> None:
    content = run("grep", pattern="TODO").content
    for hidden in ("git", "node_modules", "venv", "pycache", "build", "in log", "blob"):
        assert hidden not in content


def test_grep_searches_an_ignored_dir_when_asked(run: RunTool, tree: Path) -> None:
    assert run("grep", pattern="TODO", path="build").content == "build/out.py:1: TODO in build"


def test_grep_path_and_glob(run: RunTool, tree: Path) -> None:
    assert run("grep", pattern="TODO", path="src", glob="*.ts").content == (
        "src/web/app.ts:1: // TODO ts"
    )
    by_path = run("grep", pattern="TODO", glob="src/**/*.py").content
    assert by_path == "src/app.py:4:     # TODO: real work\nsrc/sub/deep.py:1: x = 1  # TODO deep"
    braces = run("grep", pattern="TODO", path="src", glob="*.{ts,md}").content
    assert braces == "src/web/app.ts:1: // TODO ts"
    single = run("grep", pattern="(?i)todo", path="src/util.py")
    assert single.content == "src/util.py:2:     return 'todo in lowercase'"


def test_grep_no_match_is_not_an_error(run: RunTool, tree: Path) -> None:
    result = run("grep", pattern="nothing-like-this")
    assert not result.is_error
    assert result.content.startswith("No matches")


def test_grep_bad_regex_is_a_clear_error(run: RunTool, tree: Path) -> None:
    result = run("grep", pattern="foo(")
    assert result.is_error
    assert "invalid regular expression 'foo('" in result.content
    missing = run("grep", pattern="x", path="nope")
    assert missing.is_error and "not found" in missing.content


def test_grep_anchors_apply_per_line(run: RunTool, project: Path) -> None:
    (project / "a.txt").write_text("first\nsecond\r\nthird\n")
    assert run("grep", pattern="^second$").content == "a.txt:2: second"
    assert run("grep", pattern=r"\Athird\Z").content == "a.txt:3: third"


def test_grep_match_limit(run: RunTool, project: Path) -> None:
    (project / "many.txt").write_text("hit\n" * 300)
    result = run("grep", pattern="hit")
    lines = result.content.split("\n")
    assert len(lines) == grep_module.MAX_MATCHES + 1
    assert lines[-1].startswith(f"[match limit of {grep_module.MAX_MATCHES} reached")
    assert result.details["limit_reached"] is True


def test_grep_long_lines_are_cut(run: RunTool, project: Path) -> None:
    (project / "wide.txt").write_text("needle " + "x" * 2000 + "\n")
    content = run("grep", pattern="needle").content
    assert content.endswith(" [...]")
    assert len(content) < grep_module.MAX_LINE_CHARS + 50


def test_grep_does_not_follow_symlinks_out(run: RunTool, project: Path) -> None:
    outside = project.parent / "secret.txt"
    outside.write_text("needle outside\n")
    os.symlink(outside, project / "link.txt")
    (project.parent / "outdir").mkdir()
    (project.parent / "outdir" / "f.txt").write_text("needle outside dir\n")
    os.symlink(project.parent / "outdir", project / "linkdir")
    (project / "in.txt").write_text("needle inside\n")
    assert run("grep", pattern="needle").content == "in.txt:1: needle inside"


def test_find_by_name_and_by_path(run: RunTool, tree: Path) -> None:
    assert run("find", pattern="*.py").content.split("\n") == [
        "src/app.py",
        "src/sub/deep.py",
        "src/util.py",
    ]
    assert run("find", pattern="**/*.py").content == run("find", pattern="*.py").content
    assert run("find", pattern="src/*.py").content == "src/app.py\nsrc/util.py"
    assert run("find", pattern="*.py", path="src/sub").content == "src/sub/deep.py"
    assert run("find", pattern="sub/*", path="src").content == "src/sub/deep.py"
    assert run("find", pattern="*.{ts,md}").content == "README.md\nsrc/web/app.ts"
    assert run("find", pattern="app.?s").content == "src/web/app.ts"


def test_find_ignore_rules_and_hidden_files(run: RunTool, tree: Path) -> None:
    everything = run("find", pattern="*").content.split("\n")
    assert ".gitignore" in everything and ".hidden.cfg" in everything
    assert "logs/keep.log" in everything and "logs/run.log" not in everything
    assert not [p for p in everything if p.startswith((".git/", "node_modules", ".venv", "build"))]
    assert not [p for p in everything if "__pycache__" in p]


def test_find_no_match_errors_and_limit(
    run: RunTool, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run("find", pattern="*.nothing").content.startswith("No files matching")
    (project / "f.txt").write_text("")
    assert "not a directory" in run("find", pattern="*", path="f.txt").content
    assert run("find", pattern="[", path="missing").is_error
    from veil.agent.tools import find as find_module

    monkeypatch.setattr(find_module, "MAX_RESULTS", 3)
    for i in range(5):
        (project / f"n{i}.md").write_text("")
    result = run("find", pattern="*.md")
    assert (
        result.content == "n0.md\nn1.md\nn2.md\n[showing 3 of 5 files; narrow the pattern or path]"
    )
    assert result.full_output is not None and result.full_output.count("\n") == 4


def test_ls_lists_one_directory(run: RunTool, tree: Path) -> None:
    result = run("ls")
    assert result.content.split("\n") == [
        ".git/",
        ".gitignore",
        ".hidden.cfg",
        ".venv/",
        "build/",
        "logs/",
        "node_modules/",
        "README.md",
        "src/",
    ]
    assert run("ls", path="src/sub").content == "deep.py"


def test_ls_errors_and_limit(run: RunTool, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "f.txt").write_text("")
    (project / "empty").mkdir()
    assert "use read" in run("ls", path="f.txt").content
    assert run("ls", path="nope").is_error
    assert run("ls", path="empty").content == "empty is empty."
    from veil.agent.tools import ls as ls_module

    monkeypatch.setattr(ls_module, "MAX_ENTRIES", 2)
    result = run("ls")
    assert result.content == "empty/\nf.txt"
    (project / "g.txt").write_text("")
    assert run("ls").content == "empty/\nf.txt\n[showing 2 of 3 entries]"


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "d/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "d/e/a.py", True),
        ("src/**", "src/a/b", True),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("[!a]b", "cb", True),
        ("[!a]b", "ab", False),
        ("[[]x", "[x", True),
        ("{a,b}.c", "b.c", True),
        ("?.c", "ab.c", False),
        ("x+y(1).txt", "x+y(1).txt", True),
    ],
)
def test_glob_translation(glob: str, path: str, matches: bool) -> None:
    import re

    assert bool(re.fullmatch(glob_to_regex(glob), path)) is matches


def test_gitignore_parsing() -> None:
    rules = parse_gitignore("# comment\n\n/root.txt\ndir/\n*.log\n!keep.log\n\\#hash\n")
    assert [(r.negate, r.dir_only) for r in rules] == [
        (False, False),
        (False, True),
        (False, False),
        (True, False),
        (False, False),
    ]
    assert rules[0].regex.fullmatch("root.txt") and not rules[0].regex.fullmatch("a/root.txt")
    assert rules[2].regex.fullmatch("a/b/x.log")
    assert rules[4].regex.fullmatch("#hash")


def test_nested_gitignore_overrides(run: RunTool, project: Path) -> None:
    (project / ".gitignore").write_text("*.tmp\n")
    (project / "sub").mkdir()
    (project / "sub" / ".gitignore").write_text("!want.tmp\n/local/\n")
    for rel in ("a.tmp", "sub/want.tmp", "sub/other.tmp", "sub/local/x.txt", "local/y.txt"):
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text("")
    found = run("find", pattern="*").content.split("\n")
    assert "sub/want.tmp" in found and "local/y.txt" in found
    assert "a.tmp" not in found and "sub/other.tmp" not in found
    assert "sub/local/x.txt" not in found
