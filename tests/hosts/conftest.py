"""Fixtures that drive the REAL Claude Code and Codex binaries offline, against a scripted model
server on 127.0.0.1 (:class:`veil.llm.scripted_server.ScriptedServer`).

- ``claude`` / ``claude_oldest`` / ``codex``: the pinned executables (``tests/hosts/binaries.py``),
  installed once into the shared cache. Where they cannot be installed (no npm, no registry)
  every test using them is skipped with a reason that starts ``REAL AGENT NOT RUN`` — shown by
  ``-ra`` and again in the "real agent binaries" section of the terminal summary, never a
  silent pass.
- ``run_claude`` / ``run_codex``: runners on a private home for the test
  (:class:`tests.hosts.runners.ClaudeRunner`, :class:`tests.hosts.runners.CodexRunner`).
  ``run_claude`` runs the newest pinned Claude Code; a test that parametrizes it indirectly
  over ``binaries.CLAUDE_VERSIONS`` runs once on the newest and once on the oldest supported
  version (``veil.hosts.claude_code.TESTED``), with ids ``[2.1.332]`` and ``[2.1.197]``.
- ``agent_repo``: a temporary git repository with one commit, to run the agents in.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.hosts.binaries import (
    CLAUDE_CODE,
    CLAUDE_CODE_OLDEST,
    CODEX,
    GEMINI_CLI,
    OPENCODE,
    PI,
    AgentUnavailable,
    NpmAgent,
    install,
)
from tests.hosts.gemini_runner import GeminiRunner
from tests.hosts.opencode_runner import OpencodeRunner
from tests.hosts.runners import TIMINGS, ClaudeRunner, CodexRunner

_STATUS: dict[str, str] = {}
"""Package spec → where it was found, or why it is unavailable (for the terminal summary)."""


def _binary(agent: NpmAgent) -> Path:
    try:
        path = install(agent)
    except AgentUnavailable as exc:
        _STATUS[agent.spec] = f"UNAVAILABLE: {exc}"
        pytest.skip(f"REAL AGENT NOT RUN: {agent.spec} could not be installed: {exc}")
    _STATUS[agent.spec] = str(path)
    return path


@pytest.fixture(scope="session")
def claude() -> Path:
    """The pinned Claude Code executable (installed on first use)."""
    return _binary(CLAUDE_CODE)


@pytest.fixture(scope="session")
def claude_oldest() -> Path:
    """The oldest supported Claude Code executable (installed on first use)."""
    return _binary(CLAUDE_CODE_OLDEST)


CLAUDES = {CLAUDE_CODE.version: "claude", CLAUDE_CODE_OLDEST.version: "claude_oldest"}
"""Claude Code version → the fixture of its executable."""


@pytest.fixture(scope="session")
def codex() -> Path:
    """The pinned Codex executable (installed on first use)."""
    return _binary(CODEX)


@pytest.fixture(scope="session")
def pi() -> Path:
    """The pinned pi executable (installed on first use)."""
    return _binary(PI)


@pytest.fixture(scope="session")
def opencode() -> Path:
    """The pinned opencode executable (installed on first use)."""
    return _binary(OPENCODE)


@pytest.fixture
def run_opencode(opencode: Path, tmp_path: Path) -> OpencodeRunner:
    """``run_opencode(task, *, cwd, base_url, args=(), env=None, timeout=180, config=None,
    wrapper=()) -> OpencodeRun`` (:mod:`tests.hosts.opencode_runner`)."""
    return OpencodeRunner(opencode, tmp_path / "opencode-home")


@pytest.fixture
def run_claude(request: pytest.FixtureRequest, tmp_path: Path) -> ClaudeRunner:
    """``run_claude(task, *, cwd, base_url, args=(), env=None, timeout=180,
    allowed_tools=("Bash", "Read", "Edit", "Write")) -> ClaudeRun``, on the newest pinned Claude
    Code or, parametrized indirectly, on the version named."""
    version = getattr(request, "param", CLAUDE_CODE.version)
    binary: Path = request.getfixturevalue(CLAUDES[version])
    return ClaudeRunner(binary, tmp_path / "claude-home", version)


@pytest.fixture
def run_codex(codex: Path, tmp_path: Path) -> CodexRunner:
    """``run_codex(task, *, cwd, base_url, args=(), env=None, timeout=180, model="gpt-5.5",
    config="") -> CodexRun``."""
    return CodexRunner(codex, tmp_path / "codex-home")


@pytest.fixture(scope="session")
def gemini() -> Path:
    """The pinned Gemini CLI executable (installed on first use)."""
    return _binary(GEMINI_CLI)


@pytest.fixture
def run_gemini(gemini: Path, tmp_path: Path) -> GeminiRunner:
    """``run_gemini(task, *, cwd, base_url, args=(), env=None, timeout=180, wrapper=(),
    settings=None) -> GeminiRun`` (:mod:`tests.hosts.gemini_runner`)."""
    return GeminiRunner(gemini, tmp_path / "gemini-home")


@pytest.fixture
def agent_repo(tmp_path: Path) -> Path:
    """A git repository with a README, committed."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# scratch\n")
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "."],
        ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "root"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _STATUS and not TIMINGS:
        return
    terminalreporter.section("real agent binaries")
    for spec, status in sorted(_STATUS.items()):
        terminalreporter.write_line(f"{spec}: {status}")
    for label, seconds in TIMINGS:
        terminalreporter.write_line(f"{seconds:6.1f} s  {label}")
