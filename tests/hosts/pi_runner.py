"""Run the real pi (npm ``@mariozechner/pi-coding-agent``) headless against a model server on
127.0.0.1, as :mod:`tests.hosts.runners` runs Claude Code and Codex.

Each run gets a private home whose ``~/.pi/agent/models.json`` names one provider,
``scripted``, with the server's URL and Anthropic's Messages API (pi takes base URLs from
nowhere else); a minimal environment with ``PI_OFFLINE=1`` (no version check, no package
fetches) and the proxy trap of :func:`tests.hosts.runners.private_env`; its own process group,
killed whole after exit (Veil's MCP server, shells).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.hosts.runners import AgentRun, json_lines, launcher, private_env, run_process

PROVIDER = "scripted"
MODEL = "claude-sonnet-4-5"
WINDOW = 200_000
"""The window ``models.json`` gives the scripted model: pi would compact at 183,616 tokens."""


def models_json(base_url: str, *, window: int = WINDOW) -> str:
    """A ``models.json`` whose provider ``scripted`` sends :data:`MODEL` to ``base_url`` over
    the Anthropic Messages API with a dummy key."""
    model = {"id": MODEL, "contextWindow": window, "maxTokens": 16_000}
    provider = {
        "baseUrl": base_url,
        "api": "anthropic-messages",
        "apiKey": "sk-ant-scripted-dummy",
        "models": [model],
    }
    return json.dumps({"providers": {PROVIDER: provider}}, indent=2)


@dataclass(frozen=True)
class PiRun(AgentRun):
    """A pi run (``--mode json -p``): its events on stdout; ``session_file`` is pi's own session
    under ``~/.pi/agent/sessions`` when there is one."""

    session_file: Path | None = None

    def kinds(self) -> list[str]:
        """The ``type`` of every event, in order."""
        return [str(e.get("type")) for e in self.events]


@dataclass(frozen=True)
class PiRunner:
    """``run_pi(task, *, cwd, base_url, …)``: pi headless on one private HOME."""

    binary: Path
    home: Path

    def __call__(
        self,
        task: str,
        *,
        cwd: Path,
        base_url: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        timeout: float = 180.0,
        wrapper: Sequence[str] = (),
    ) -> PiRun:
        """Write ``~/.pi/agent/models.json`` (:func:`models_json` for ``base_url``) and run
        ``pi --provider scripted --model claude-sonnet-4-5 --mode json [ARGS] -p TASK`` in
        ``cwd``; ``wrapper`` (``veil pi --window N``): run through it, pi's arguments after
        ``--``, the binary named by ``VEIL_PI``."""
        agent = self.home / ".pi" / "agent"
        agent.mkdir(parents=True, exist_ok=True)
        (agent / "models.json").write_text(models_json(base_url))
        variables = private_env(self.home, {"PI_OFFLINE": "1", **(env or {})})
        command = (
            *launcher(self.binary, wrapper, "VEIL_PI", variables),
            "--provider",
            PROVIDER,
            "--model",
            MODEL,
            "--mode",
            "json",
            *args,
            "-p",
            task,
        )
        test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        code, stdout, stderr, seconds = run_process(
            command, cwd=cwd, env=variables, timeout=timeout, label=f"pi {test}".strip()
        )
        sessions = sorted((agent / "sessions").rglob("*.jsonl"), key=lambda p: p.stat().st_mtime)
        return PiRun(
            command,
            code,
            json_lines(stdout),
            stdout,
            stderr,
            seconds,
            self.home,
            sessions[-1] if sessions else None,
        )
