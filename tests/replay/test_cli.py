"""``veil replay`` as a person runs it: a real subprocess on hand-written session files."""

from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.replay.transcript_lines import claude_session, codex_session, write_lines
from veil.cli.replay import PLOT_MISSING, run_replay


def veil_replay(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "veil.cli.main", "replay", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result
    assert result.stdout == "" and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_bad_input_is_one_line_naming_the_file_and_exit_2(tmp_path: Path) -> None:
    line = one_line_error(veil_replay(str(tmp_path / "gone.jsonl"), cwd=tmp_path))
    assert line == f"veil replay: {tmp_path / 'gone.jsonl'}: no such file or directory"
    other = write_lines(tmp_path / "notes.jsonl", [{"note": "hello"}])
    line = one_line_error(veil_replay(str(other), "--json", cwd=tmp_path))
    assert line.startswith(f"veil replay: {other}: neither a Claude Code transcript nor a Codex")
    text = tmp_path / "notes.md"
    text.write_text("# not JSON\n")
    assert str(text) in one_line_error(veil_replay(str(text), cwd=tmp_path))
    (tmp_path / "empty").mkdir()
    assert "no *.jsonl file" in one_line_error(veil_replay(str(tmp_path / "empty"), cwd=tmp_path))


def test_a_directory_of_sessions_with_a_corrupt_line_and_a_stray_file(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    write_lines(sessions / "proj" / "s.jsonl", claude_session())  # one corrupt line
    write_lines(sessions / "2026" / "rollout-x.jsonl", codex_session())
    write_lines(sessions / "stray.jsonl", [{"something": "else"}])
    result = veil_replay(str(sessions), "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    by_agent = {s["agent"]: s for s in data["sessions"]}
    assert set(by_agent) == {"claude", "codex"}
    assert by_agent["claude"]["corrupt_lines"] == 1 and by_agent["codex"]["corrupt_lines"] == 0
    assert by_agent["claude"]["model"] == "claude-sonnet-4-5"
    assert by_agent["claude"]["cost_unit"] == "usd"  # both models are in the price table
    assert len(data["skipped_files"]) == 1 and "stray.jsonl" in data["skipped_files"][0]
    for entry in [*data["sessions"], data["total"]]:
        assert entry["recorded_tokens"] > 0
        for arm in ("keep_all", "host", "veil"):
            assert {"tokens", "cost", "miss_rate"} <= set(entry[arm])

    text = veil_replay(str(sessions), cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    out = text.stdout
    assert "nothing sent anywhere" in out and "1 corrupt line(s) skipped" in out
    assert "Claude Code · claude-sonnet-4-5" in out and "Codex · gpt-5.5" in out
    assert out.count("keep-all ") == 3 and "total  2 sessions" in out
    assert "skipped " in out and "stray.jsonl" in out


def test_window_gives_veil_the_budget_veil_claude_would_keep(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", claude_session())
    result = veil_replay(str(path), "--json", "--window", "6500", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    session = json.loads(result.stdout)["sessions"][0]
    assert session["veil_budget"] == 5_200  # 6,500 less the reply's reserve (a fifth)
    assert session["veil"]["tokens"] < session["keep_all"]["tokens"]
    # the agent's own rule keeps its own threshold (the model's window, not --window)
    assert session["host_compacts_at"] > 100_000
    assert session["host"]["tokens"] == session["keep_all"]["tokens"]


def test_plot_draws_tokens_per_request(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    path = write_lines(tmp_path / "s.jsonl", claude_session())
    result = veil_replay(str(path), "--plot", "requests.png", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "requests.png").read_bytes().startswith(b"\x89PNG")


def test_plot_without_matplotlib_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> object:
        return None if name == "matplotlib" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    err = io.StringIO()
    path = write_lines(tmp_path / "s.jsonl", claude_session())
    code = run_replay(
        [path],
        as_json_output=False,
        plot=tmp_path / "p.png",
        window=None,
        out=io.StringIO(),
        err=err,
        env={},
        root=tmp_path,
    )
    assert code == 2 and err.getvalue() == PLOT_MISSING + "\n"
    assert "-m pip install 'matplotlib>=" in PLOT_MISSING and not (tmp_path / "p.png").exists()
