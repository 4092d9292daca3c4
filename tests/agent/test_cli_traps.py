"""Traps a new user of the ``veil`` command line fell into (issue 28), each run the way the user
ran it: the real CLI as a subprocess in a temporary git repository, a scripted model, and
assertions on what the person sees (stdout, stderr, exit status) and what the project holds."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}
DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    environ = {**os.environ, **GIT_ENV}
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "init"]):
        subprocess.run(cmd, cwd=root, check=True, env=environ)
    return root


def veil(repo: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("VEIL_")} | GIT_ENV
    return subprocess.run(
        [sys.executable, "-m", "veil.cli.main", *args],
        cwd=repo,
        env=environ,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def script(path: Path, turns: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


def extraction(path: Path, *facts: tuple[str, str, str]) -> str:
    """A script of one extraction reply: ``(relation, object, statement)`` facts of the user."""
    found = [
        {"subject": "user", "relation": r, "object": o, "statement": s, "volatility": "durable",
         "claimant": "user", "supersedes": None}
        for r, o, s in facts
    ]  # fmt: skip
    return script(path, [{"content": json.dumps({"facts": found, "episodes": []})}])


def one_line(done: subprocess.CompletedProcess[str], status: int) -> str:
    """The run's only stderr line, after checking its status and that nothing leaked."""
    assert done.returncode == status, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


# ---- A. usage errors exit 2 -------------------------------------------------------------------


def test_a_window_too_small_and_other_option_mistakes_exit_2_with_one_line(
    repo: Path, tmp_path: Path
) -> None:
    model = script(tmp_path / "s.json", [{"content": "ok"}])
    small = one_line(veil(repo, "-p", "x", "--model", model, "--window", "100"), 2)
    assert re.fullmatch(
        r"veil: --window 100 is too small: the system prompt and tool schemas take \d+ tokens "
        r"and the reply's reserve 256; use at least \d+",
        small,
    ), small
    needed = int(small.rsplit(" ", 1)[1])  # the least that works, exactly
    assert veil(repo, "-p", "x", "--model", model, "--window", str(needed)).returncode == 0
    assert veil(repo, "-p", "x", "--model", model, "--window", str(needed - 1)).returncode == 2
    missing = one_line(veil(repo, "-p", "x", "--model", model, "--trace", "nowhere/t.jsonl"), 2)
    assert missing == "veil: --trace nowhere/t.jsonl: no directory nowhere to write it in"
    folder = one_line(veil(repo, "-p", "x", "--model", model, "--trace", "."), 2)
    assert folder == "veil: --trace . is a directory: name the file to append to"
    # argparse's own: a port out of range, a negative rate — before anything is opened
    for args, words in (
        (("serve", "--port", "99999"), "99999 is not a port (0 to 65535)"),
        (("serve", "--rate", "-1"), "must be 0 (off) or a positive number"),
        (("serve", "--burst", "0"), "0 must be greater than 0"),
        (("proxy", "--port", "-1"), "-1 is not a port"),
    ):
        done = veil(repo, *args)
        assert done.returncode == 2 and words in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    assert one_line(veil(repo, "sessions", "show"), 2) == (
        "veil sessions show: which session? veil sessions show ID"
    )
    assert not (repo / "nowhere").exists()


# ---- B. veil sessions: how each ended, and show ------------------------------------------------


def test_sessions_list_how_each_ended_and_show_prints_one_transcript(
    repo: Path, tmp_path: Path
) -> None:
    refused = script(
        tmp_path / "w.json",
        [
            {"content": "Writing.", "tool_calls": [
                {"name": "write", "arguments": {"path": "new.txt", "content": "hi"}}]},
            {"content": "Wrote it."},
        ],
    )  # fmt: skip
    assert veil(repo, "-p", "write a file", "--model", refused).returncode == 6
    answered = script(tmp_path / "a.json", [{"content": "Nothing to do."}])
    assert veil(repo, "-p", "look around\nand stop", "--model", answered).returncode == 0

    listed = veil(repo, "sessions")
    assert listed.returncode == 0, listed.stderr
    header, *rows = listed.stdout.splitlines()
    assert header.split() == ["SESSION", "UPDATED", "STATUS", "MSGS", "SIZE", "TITLE"]
    assert len(rows) == 2  # a task typed on two lines is one row
    newest, oldest = (row.split() for row in rows)
    assert newest[3] == "done" and newest[-5:] == ["look", "around", "⏎", "and", "stop"]
    assert oldest[3] == "refused" and oldest[-3:] == ["write", "a", "file"]  # exit 6, not done
    assert oldest[4] == "4" and oldest[6] in ("B", "KB")  # messages, then a size with its unit

    session = oldest[0]
    shown = veil(repo, "sessions", "show", session[:14])  # a unique prefix
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    assert text.startswith(f"session {session}\ntitle:   write a file\n")
    assert "status:  refused — Wrote it." in text
    assert "[1] user\n    write a file" in text
    assert '→ write {"content": "hi", "path": "new.txt"}  (call_1_1)' in text
    assert "[3] write result (call_1_1) [error]\n    │ not permitted" in text
    assert text.rstrip().endswith("[4] assistant\n    Wrote it.")
    unknown = one_line(veil(repo, "sessions", "show", "s_nope"), 2)
    assert unknown == "veil sessions show: no session s_nope in this project (see `veil sessions`)"
    ambiguous = one_line(veil(repo, "sessions", "show", "s_"), 2)
    assert ambiguous.startswith("veil sessions show: 2 sessions match s_")


# ---- C. restoring your own export --------------------------------------------------------------


def trust(repo: Path, *extra: str) -> list[int]:
    facts = json.loads(veil(repo, "memory", "facts", "--json", *extra).stdout)["facts"]
    return [f["trust"] for f in facts]


def test_your_own_export_imported_then_restored_keeps_its_trust(repo: Path, tmp_path: Path) -> None:
    model = extraction(tmp_path / "x.json", ("prefers", "vim", "The user prefers vim."))
    assert veil(repo, "memory", "remember", "I prefer vim", "--model", model).returncode == 0
    backup = tmp_path / "backup.jsonl"
    assert veil(repo, "memory", "export", str(backup)).returncode == 0
    assert veil(repo, "memory", "forget", "--yes").returncode == 0

    plain = veil(repo, "memory", "import", str(backup))  # the trap: trust capped…
    hint = one_line(plain, 0)
    assert "trust capped at third party" in plain.stdout
    assert hint.startswith(f"veil memory import: {backup} is an export of this same memory")
    assert f"`veil memory import --restore {backup}`" in hint  # …said, with the way out
    assert trust(repo) == [0]

    restored = veil(repo, "memory", "import", str(backup), "--restore")
    note = one_line(restored, 0)
    assert note.startswith(f"veil memory import: replacing the earlier import of {backup}")
    assert "exactly (--restore)" in restored.stdout
    assert trust(repo) == [3]  # the user's own word again
    assert one_line(veil(repo, "memory", "import", str(backup)), 2).endswith(
        "already in this memory with their own trust (where it was exported, or imported with "
        "--restore); nothing was written"
    )


def test_restore_over_a_capped_import_refuses_when_the_memory_changed_since(
    repo: Path, tmp_path: Path
) -> None:
    model = extraction(tmp_path / "x.json", ("prefers", "vim", "The user prefers vim."))
    assert veil(repo, "memory", "remember", "I prefer vim", "--model", model).returncode == 0
    backup = tmp_path / "backup.jsonl"
    assert veil(repo, "memory", "export", str(backup)).returncode == 0
    assert veil(repo, "memory", "forget", "--yes").returncode == 0
    assert veil(repo, "memory", "import", str(backup)).returncode == 0
    later = extraction(tmp_path / "y.json", ("located_at", "Lisbon", "The user lives in Lisbon."))
    assert veil(repo, "memory", "remember", "I live in Lisbon", "--model", later).returncode == 0
    refused = one_line(veil(repo, "memory", "import", str(backup), "--restore"), 2)
    assert "this memory has changed since" in refused and "nothing was written" in refused
    assert "`veil memory forget --yes`" in refused
    assert sorted(trust(repo)) == [0, 3]  # both facts kept as they were


# ---- D. memory tools are offered only when they can work ---------------------------------------


def test_a_scripted_run_is_not_offered_veil_remember(repo: Path, tmp_path: Path) -> None:
    model = script(tmp_path / "s.json", [{"content": "ok"}])
    trace = tmp_path / "t.jsonl"
    done = veil(repo, "-p", "x", "--model", model, "--trace", str(trace))
    assert done.returncode == 0, done.stderr
    tools = {t["name"]: t for t in json.loads(trace.read_text().splitlines()[0])["tools"]}
    assert "veil_remember" not in tools  # extraction needs a model a scripted run has not
    assert {"veil_recall", "veil_history", "veil_expand"} <= set(tools)
    for tool in tools.values():  # G: every parameter of every tool has a description
        for name, schema in tool["parameters"]["properties"].items():
            assert schema.get("description"), (tool["name"], name)


# ---- E. veil memory's shared options before or after the action --------------------------------


def test_memory_options_go_before_or_after_the_action(repo: Path, tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    model = extraction(tmp_path / "x.json", ("prefers", "vim", "The user prefers vim."))
    before = veil(repo, "memory", "--db", str(db), "--model", model, "remember", "I prefer vim")
    assert before.returncode == 0, before.stderr
    assert "stored: The user prefers vim." in before.stdout
    assert not (repo / ".veil").exists()  # --db before the action was honoured
    after = veil(repo, "memory", "facts", "--db", str(db), "--json")
    assert [f["object"] for f in json.loads(after.stdout)["facts"]] == ["vim"]
    both = veil(repo, "memory", "--json", "--db", "nope.db", "facts", "--db", str(db))
    assert both.returncode == 0 and json.loads(both.stdout)["facts"]  # after the action wins
    other = veil(repo, "memory", "--db", str(db), "--user", "user:else", "facts", "--json")
    assert json.loads(other.stdout) == {"facts": [], "total": 0, "truncated": False}


# ---- H. --trace lines: time, latency, session, turn --------------------------------------------


def test_trace_lines_carry_time_latency_session_and_turn(repo: Path, tmp_path: Path) -> None:
    model = script(
        tmp_path / "r.json",
        [
            {"content": "Look.", "tool_calls": [
                {"name": "read", "arguments": {"path": "calc.py"}}]},
            {"content": "It subtracts."},
        ],
    )  # fmt: skip
    trace = tmp_path / "trace.jsonl"
    started = datetime.now(UTC)
    done = veil(repo, "-p", "read calc", "--model", model, "--trace", str(trace))
    assert done.returncode == 0, done.stderr
    session = done.stderr.strip().rsplit("session ", 1)[1]
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [r["turn"] for r in lines] == [1, 2]
    assert {r["session"] for r in lines} == {session}
    times = [datetime.fromisoformat(r["at"]) for r in lines]
    assert started - timedelta(seconds=1) <= times[0] <= times[1] <= datetime.now(UTC)
    for record in lines:
        assert isinstance(record["latency_ms"], float) and record["latency_ms"] >= 0
        assert 0 <= record["first_chunk_ms"] <= record["latency_ms"]
        assert list(record)[:5] == ["at", "session", "turn", "latency_ms", "first_chunk_ms"]
        assert record["messages"] and record["response"] and record["veil"]


# ---- I. --help shows the defaults ---------------------------------------------------------------


def test_help_shows_defaults_and_demo_says_what_it_does(repo: Path) -> None:
    top = veil(repo, "--help").stdout
    assert re.search(r"stop after N model calls\s+\(default: 50\)", top)
    serve = veil(repo, "serve", "--help").stdout
    for option, default in (("port", "8765"), ("rate", "20.0"), ("burst", "40")):
        assert re.search(rf"--{option} \S+\s+.*?\(default: {default}\)", serve, re.S), option
    assert "(default: None)" not in top + serve
    recall = veil(repo, "memory", "recall", "--help").stdout
    assert re.search(r"--token-budget N, --budget N\s+At most .*\(default:\s+1000\)", recall, re.S)
    demo = " ".join(veil(repo, "demo", "--help").stdout.split())
    for words in (
        "a real recorded coding session",
        "replayed through the agent loop with Veil's memory installed",
        "long-term memory (supersession, history, a quarantined third-party claim, recall)",
        "the extraction model unless VEIL_MODEL is set",
    ):
        assert words in demo, words


# ---- J. what docs/harness.md says about AGENTS.md and extraction scripts holds -----------------


def test_agents_md_at_the_root_is_in_the_system_prompt_and_a_subdirectory_s_is_not(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "AGENTS.md").write_text("Always run the tests with pytest -q.\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "CLAUDE.md").write_text("Never touch pkg.\n")
    text = (DOCS / "harness.md").read_text()
    assert "## Project instructions (`AGENTS.md`, `CLAUDE.md`)" in text
    assert "Files in subdirectories of the\nproject are not read." in text
    trace = tmp_path / "t.jsonl"
    model = script(tmp_path / "s.json", [{"content": "ok"}])
    done = veil(repo / "pkg", "-p", "x", "--model", model, "--trace", str(trace))
    assert done.returncode == 0, done.stderr
    system = json.loads(trace.read_text().splitlines()[0])["system"]
    agents = (repo / "AGENTS.md").resolve()
    assert f"--- {agents} ---\nAlways run the tests with pytest -q." in system
    assert "Never touch pkg." not in system


def test_the_documented_extraction_script_is_one_veil_memory_accepts(
    repo: Path, tmp_path: Path
) -> None:
    text = (DOCS / "harness.md").read_text()
    section = text.split("### Extraction scripts", 1)[1]
    example = section.split("```json\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "extraction.json"
    path.write_text(example)
    first = veil(repo, "memory", "remember", "I prefer vim.", "--model", f"scripted:{path}")
    assert first.returncode == 0, first.stderr
    assert "stored: The user prefers vim." in first.stdout
