"""``veil doctor`` run for real: ``python -m veil.cli.main doctor`` as a subprocess in a temporary
git repository, with a private ``HOME`` and a ``PATH`` that holds only what each test puts in
it (``git``, and ``veil``, ``claude``, ``codex`` where the test says). Veil is installed the way a
person installs it (``veil install`` as a subprocess); each fault is then planted by hand and
must make doctor exit 1 with a ✗ line naming it — and only it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.hosts.binaries import CLAUDE_CODE, CODEX, GEMINI_CLI, OPENCODE, PI, installed
from veil.cli.doctor import ClaudeSetup, check_claude_trust

VEIL_BIN = Path(sys.executable).with_name("veil")


@dataclass(frozen=True)
class Place:
    """A repository, a home and the one directory on ``PATH``."""

    repo: Path
    home: Path
    bin: Path

    def env(self) -> dict[str, str]:
        env = {"HOME": str(self.home), "PATH": str(self.bin), "LANG": "C.UTF-8"}
        env["VEIL_STATE_DIR"] = str(self.home / "state")
        if "TMPDIR" in os.environ:
            env["TMPDIR"] = os.environ["TMPDIR"]
        return env

    def put(self, name: str, target: Path) -> None:
        """``name`` on PATH, running ``target``."""
        (self.bin / name).symlink_to(target)

    def veil(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``veil ARGS`` in the repository, as ``python -m veil.cli.main``."""
        return subprocess.run([sys.executable, "-m", "veil.cli.main", *args], cwd=self.repo,
                              env=self.env(), capture_output=True, text=True, timeout=60,
                              check=False)  # fmt: skip

    def install(self, agent: str) -> None:
        done = self.veil("install", agent)
        assert done.returncode == 0, done.stderr

    def trust(self, trusted: bool = True) -> None:
        """What accepting Claude Code's trust dialog writes (``False``: the record of a
        dialog not accepted), next to a trusted sibling project."""
        path = self.home / ".claude.json"
        data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        projects = data.setdefault("projects", {})
        projects.setdefault(str(self.repo), {})["hasTrustDialogAccepted"] = trusted
        projects[str(self.repo.parent / "other")] = {"hasTrustDialogAccepted": True}
        path.write_text(json.dumps(data, indent=2))

    def doctor(self, *args: str) -> tuple[int, str, list[str]]:
        """Doctor's status, its output, and the names of the checks it failed (✗)."""
        done = self.veil("doctor", *args)
        assert "Traceback" not in done.stderr, done.stderr
        failed = [line[2:].split(" — ")[0] for line in done.stdout.splitlines() if line[:1] == "✗"]
        return done.returncode, done.stdout + done.stderr, failed


@pytest.fixture
def place(tmp_path: Path) -> Place:
    repo, home, bin_dir = tmp_path / "repo", tmp_path / "home", tmp_path / "bin"
    for directory in (repo, home, bin_dir):
        directory.mkdir()
    git = shutil.which("git")
    assert git is not None
    (bin_dir / "git").symlink_to(git)
    (repo / "README.md").write_text("# scratch\n")
    commit = ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "r"]
    for args in (["init", "-q", "-b", "main"], ["add", "."], commit):
        subprocess.run([git, *args], cwd=repo, check=True, capture_output=True)
    return Place(repo, home, bin_dir)


def _agent(package: Any) -> Path:
    binary = installed(package)
    if binary is None:
        pytest.skip(
            f"REAL AGENT NOT RUN: {package.spec} is not installed (tests/hosts/binaries.py)"
        )
    return binary


def test_veil_not_on_path(place: Place) -> None:
    place.install("claude-code")  # veil not on PATH: the hooks run this interpreter's -m veil
    place.trust()
    status, out, failed = place.doctor()
    assert status == 1, out
    assert failed == ["veil on PATH"], out
    tree = Path(__file__).resolve().parents[2]
    assert f"fix: make -C {tree} install — or: " in out, out  # the clone's own install
    assert f'export PATH="{VEIL_BIN.parent}:$PATH"' in out


def test_untrusted_workspace(place: Place) -> None:
    place.put("veil", VEIL_BIN)
    place.install("claude-code")  # veil on PATH: .claude/settings.json and .mcp.json
    place.trust(trusted=False)
    status, out, failed = place.doctor()
    assert status == 1, out
    assert failed == ["claude-code workspace trust"], out
    assert f"{place.repo} is not trusted" in out
    fix = f'projects["{place.repo}"].hasTrustDialogAccepted: true in {place.home / ".claude.json"}'
    assert fix in out and f"run `claude` once in {place.repo}" in out


def test_hooks_pointing_at_a_missing_binary(place: Place) -> None:
    place.put("veil", VEIL_BIN)
    place.install("claude-code")
    place.trust()
    settings = place.repo / ".claude" / "settings.json"
    text = settings.read_text()
    assert '"veil hook claude-code PreCompact"' in text
    settings.write_text(text.replace('"veil hook', '"/nonexistent/veil hook'))
    status, out, failed = place.doctor()
    assert status == 1, out
    assert failed == ["claude-code hooks"], out
    assert "/nonexistent/veil does not exist" in out and "fix: veil install claude-code" in out


def test_unwritable_store(place: Place) -> None:
    """The store cannot be written: ``.veil/context.db`` is a directory. Tests may run as root,
    which ignores file modes (a read-only ``chmod`` changes nothing for it), ``chattr +i``
    needs a capability and a filesystem that supports it, and a read-only mount needs
    privileges; a directory where the SQLite file should be fails for every user."""
    place.put("veil", VEIL_BIN)
    (place.repo / ".veil" / "context.db").mkdir(parents=True)
    status, out, failed = place.doctor()
    assert status == 1, out
    assert failed == ["store"], out
    db = place.repo / ".veil" / "context.db"
    assert f"{db} is not a file" in out and f"fix: mv {db} {db}.broken" in out


def test_mcp_server_that_does_not_start(place: Place) -> None:
    place.put("veil", VEIL_BIN)
    place.install("claude-code")
    place.trust()
    path = place.repo / ".mcp.json"
    config = json.loads(path.read_text())
    config["mcpServers"]["veil"]["args"].append("--no-such-option")  # veil exits 2 at once
    path.write_text(json.dumps(config))
    status, out, failed = place.doctor()
    assert status == 1, out
    assert failed == ["claude-code MCP server"], out
    assert "exited with status 2 before answering initialize" in out
    assert "unrecognized arguments: --no-such-option" in out


def test_everything_fine_but_the_optional_parts(place: Place) -> None:
    place.put("veil", VEIL_BIN)
    status, out, failed = place.doctor()
    assert status == 0 and not failed, out
    assert "· claude — not found" in out and "· claude-code integration" in out
    assert "to set up: veil install claude-code" in out and "✓ veil on PATH" in out
    status, text, _ = place.doctor("--json")
    checks = json.loads(text)
    assert status == 0
    assert all(set(c) == {"name", "ok", "detail", "fix", "severity"} for c in checks)
    assert {c["name"]: c["severity"] for c in checks if not c["ok"] or c["severity"] != "fail"} == {
        "claude": "note",
        "claude-code integration": "note",
        "codex": "note",
        "codex integration": "note",
        "gemini": "note",
        "opencode": "note",
        "pi": "note",
    }


def test_untested_agent_version_is_a_warning(place: Place) -> None:
    place.put("veil", VEIL_BIN)
    fake = place.home / "claude"
    fake.write_text("#!/bin/sh\necho '2.0.1 (Claude Code)'\n")
    fake.chmod(0o755)
    place.put("claude", fake)
    status, out, failed = place.doctor()
    assert status == 0 and not failed, out
    assert "⚠ claude — " in out and "2.0.1: outside the versions Veil is tested" in out
    assert "fix: npm install -g @anthropic-ai/claude-code@2.1.332" in out


def test_everything_installed_with_the_real_agents(place: Place) -> None:
    place.put("veil", VEIL_BIN)
    place.put("claude", _agent(CLAUDE_CODE))
    place.put("codex", _agent(CODEX))
    place.put("gemini", _agent(GEMINI_CLI))
    place.put("opencode", _agent(OPENCODE))
    place.put("pi", _agent(PI))
    node = shutil.which("node")  # npm's codex is a node script
    if node is None:
        pytest.skip("REAL AGENT NOT RUN: node is not on PATH, and npm's codex runs on it")
    place.put("node", Path(node))
    place.install("claude-code")
    place.install("codex")  # codex on PATH: it records Codex's trust of the hooks
    place.trust()
    status, out, _ = place.doctor()
    assert status == 0, out
    lines = out.splitlines()
    assert all(line.startswith(("✓", "    ")) for line in lines[:-1]), out
    assert f"✓ claude — {place.bin / 'claude'} 2.1.332" in out
    assert "✓ claude-code MCP server — `veil mcp --project --authority user` answers" in out
    assert f"✓ claude-code workspace trust — {place.repo} is trusted" in out
    assert "✓ codex hooks — 3 in" in out and "trusted by Codex" in out
    assert f"✓ gemini — {place.bin / 'gemini'} 0.61.0 (tested 0.61.0)" in out
    assert f"✓ opencode — {place.bin / 'opencode'} 1.18.33 (tested 1.18.33)" in out
    assert f"✓ pi — {place.bin / 'pi'} 0.73.1 (tested 0.73.1)" in out
    assert lines[-1] == "nothing to fix"


def test_trust_outside_a_repository_counts_from_any_directory_above(tmp_path: Path) -> None:
    """Outside git, Claude Code looks for a trust record up to ``/``; inside, up to the root."""
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    config = {"projects": {str(tmp_path / "a"): {"hasTrustDialogAccepted": True}}}
    setup = ClaudeSetup((), ("x/.mcp.json", {}), gated=True, config=config)
    env = {"HOME": str(tmp_path / "home")}
    assert check_claude_trust(setup, work, None, env).ok
    assert not check_claude_trust(setup, work, work, env).ok
