"""The real agent binaries, pinned: Claude Code (npm ``@anthropic-ai/claude-code``) and Codex
(npm ``@openai/codex``), installed once into a cache shared between runs.

The cache is ``$VEIL_AGENT_CACHE`` or ``~/.cache/veil/agents``; each package lives in
``<cache>/<package>@<version>/`` (``@scope/name`` spelled ``scope+name``). An install is atomic:
npm installs into a temporary directory beside it, the binary is checked (``--version`` must
name the pinned version), then the directory is renamed into place; a file lock keeps two
processes from installing the same package at once. A directory is complete when it holds
``installed.json``, written last.

When npm is missing or the registry cannot be reached, :func:`install` raises
:class:`AgentUnavailable` with the reason; the fixtures turn it into a loud ``pytest.skip``.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class NpmAgent:
    """A pinned npm package and the executable it installs under ``node_modules/.bin``."""

    package: str
    version: str
    executable: str

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"

    @property
    def directory_name(self) -> str:
        return f"{self.package.replace('/', '+')}@{self.version}"


CLAUDE_CODE = NpmAgent("@anthropic-ai/claude-code", "2.1.332", "claude")
CLAUDE_CODE_OLDEST = NpmAgent("@anthropic-ai/claude-code", "2.1.197", "claude")
"""The oldest Claude Code Veil supports (``veil.hosts.claude_code.TESTED``): what a plain ``npm
install @anthropic-ai/claude-code`` gives on Node 20, where 2.1.332 (``engines: node >=22``)
is passed over."""
CLAUDE_VERSIONS = (CLAUDE_CODE.version, CLAUDE_CODE_OLDEST.version)
"""The Claude Code versions a test parametrized over ``run_claude`` runs on: the newest and the
oldest supported (``@pytest.mark.parametrize("run_claude", CLAUDE_VERSIONS, indirect=True)``)."""
CODEX = NpmAgent("@openai/codex", "0.171.0", "codex")
GEMINI_CLI = NpmAgent("@google/gemini-cli", "0.61.0", "gemini")
PI = NpmAgent("@mariozechner/pi-coding-agent", "0.73.1", "pi")
OPENCODE = NpmAgent("opencode-ai", "1.18.33", "opencode")

INSTALL_TIMEOUT = 900
"""Seconds one ``npm install`` may take (each package is a ~400 MB native binary)."""

MARKER = "installed.json"


class AgentUnavailable(RuntimeError):
    """The pinned binary cannot be installed here (no npm, no registry, a failed install)."""


def cache_root() -> Path:
    """Where pinned agents are cached: ``$VEIL_AGENT_CACHE`` or ``~/.cache/veil/agents``."""
    configured = os.environ.get("VEIL_AGENT_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "veil" / "agents"


def executable_path(agent: NpmAgent, root: Path | None = None) -> Path:
    """Where ``agent``'s executable is once installed (whether or not it is)."""
    return (
        (root or cache_root()) / agent.directory_name / "node_modules" / ".bin" / agent.executable
    )


def installed(agent: NpmAgent, root: Path | None = None) -> Path | None:
    """``agent``'s executable when a complete install is cached, else ``None``."""
    directory = (root or cache_root()) / agent.directory_name
    binary = executable_path(agent, root)
    if (directory / MARKER).is_file() and binary.exists():
        return binary
    return None


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _npm_reason(output: str) -> str:
    """npm's error output in one line: its first few ``npm error`` lines."""
    lines = [line.removeprefix("npm error").strip() for line in output.splitlines()]
    useful = [line for line in lines if line and not line.startswith(("at ", "A complete log"))]
    return "; ".join(useful[:4]) or "no output"


def _npm(npm: str, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "npm_config_update_notifier": "false"}
    return subprocess.run(
        [npm, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def _registry_answers(npm: str, agent: NpmAgent) -> None:
    """Ask the registry for the pinned version once, without retries: an unreachable registry
    is reported in seconds rather than after npm's minutes of backoff."""
    args = ["view", agent.spec, "version", "--fetch-retries=0", "--fetch-timeout=30000"]
    try:
        done = _npm(npm, args, timeout=90)
    except subprocess.TimeoutExpired:
        raise AgentUnavailable(f"the npm registry did not answer for {agent.spec}") from None
    if done.returncode != 0 or agent.version not in done.stdout:
        raise AgentUnavailable(
            f"the npm registry did not answer for {agent.spec} (npm view, exit "
            f"{done.returncode}): {_npm_reason(done.stderr or done.stdout)}"
        )


def install(agent: NpmAgent, root: Path | None = None) -> Path:
    """The path of ``agent``'s executable, installing it into the cache first if needed.

    Raises :class:`AgentUnavailable` (with npm's last lines) when it cannot be installed.
    """
    root = root or cache_root()
    if (binary := installed(agent, root)) is not None:
        return binary
    npm = shutil.which("npm")
    if npm is None:
        raise AgentUnavailable(f"cannot install {agent.spec}: npm is not on PATH")
    with _locked(root / f".{agent.directory_name}.lock"):
        if (binary := installed(agent, root)) is not None:
            return binary  # another process installed it while we waited
        _registry_answers(npm, agent)
        staging = Path(tempfile.mkdtemp(prefix=f".{agent.directory_name}.", dir=root))
        try:
            _npm_install(npm, agent, staging)
            version = _version(agent, staging)
            (staging / MARKER).write_text(
                json.dumps({"spec": agent.spec, "version": version, "installed_at": time.time()})
            )
            staging.chmod(0o755)  # mkdtemp makes it private; the cache is shared
            target = root / agent.directory_name
            if target.exists():  # an incomplete earlier install
                shutil.rmtree(target)
            staging.rename(target)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
    binary = installed(agent, root)
    if binary is None:
        raise AgentUnavailable(f"{agent.spec} was installed but its executable is missing")
    return binary


def _npm_install(npm: str, agent: NpmAgent, prefix: Path) -> None:
    args = [
        "install",
        "--prefix",
        str(prefix),
        "--no-save",
        "--no-package-lock",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
        agent.spec,
    ]
    try:
        done = _npm(npm, args, timeout=INSTALL_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise AgentUnavailable(
            f"npm install {agent.spec} took over {INSTALL_TIMEOUT} s (is the registry reachable?)"
        ) from None
    if done.returncode != 0:
        raise AgentUnavailable(
            f"npm install {agent.spec} failed (exit {done.returncode}): "
            f"{_npm_reason(done.stderr or done.stdout)}"
        )


def _version(agent: NpmAgent, prefix: Path) -> str:
    binary = prefix / "node_modules" / ".bin" / agent.executable
    if not binary.exists():
        raise AgentUnavailable(f"npm install {agent.spec} left no {binary.name} executable")
    try:
        done = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AgentUnavailable(f"{agent.spec}: `{binary.name} --version` failed: {exc}") from None
    answer = done.stdout.strip() or done.stderr.strip()  # pi prints its version on stderr
    if done.returncode != 0 or agent.version not in answer:
        raise AgentUnavailable(
            f"{agent.spec}: `{binary.name} --version` answered {done.stdout.strip()!r} "
            f"(exit {done.returncode}): {done.stderr.strip()[-500:]}"
        )
    return answer
