"""Run the real Gemini CLI headless against a model server on 127.0.0.1, as
:mod:`tests.hosts.runners` runs Claude Code and Codex: a private ``HOME`` whose
``~/.gemini/settings.json`` chooses the API-key login, a minimal environment (nothing of the
caller's credentials or settings), the proxy trap (only 127.0.0.1 is reachable), its own
process group killed whole after exit or on a timeout, the run's duration in
:data:`~tests.hosts.runners.TIMINGS`.

Gemini CLI 0.61 needs ``GEMINI_CLI_TRUST_WORKSPACE=true`` to run headless in a folder it has
not been told to trust (else exit 55), and prints its stream-json events on stdout.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.hosts.runners import AgentRun, json_lines, launcher, private_env, run_process

SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
"""What a user who logs in with an API key has in ``~/.gemini/settings.json``."""


@dataclass(frozen=True)
class GeminiRun(AgentRun):
    """A Gemini CLI run (``-p … --yolo --output-format stream-json``). ``chat`` is its session
    file ``~/.gemini/tmp/<project>/chats/session-*.jsonl`` when there is one."""

    session_id: str | None = None
    chat: Path | None = None

    def tools(self, kind: str = "tool_use") -> list[dict[str, Any]]:
        """Its ``tool_use`` (or ``tool_result``) events."""
        return [e for e in self.events if e.get("type") == kind]


@dataclass(frozen=True)
class GeminiRunner:
    """``run_gemini(task, *, cwd, base_url, …)``: Gemini CLI headless on one private HOME."""

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
        settings: Mapping[str, object] | None = None,
    ) -> GeminiRun:
        """Write ``~/.gemini/settings.json`` (:data:`SETTINGS`, ``settings`` merged over it at
        the top level) and run ``gemini -p TASK --yolo --output-format stream-json [ARGS]`` in
        ``cwd`` against ``base_url`` (``GOOGLE_GEMINI_BASE_URL``, a dummy ``GEMINI_API_KEY``);
        ``wrapper`` (``veil gemini --window N``): run through it, Gemini CLI's arguments after
        ``--``, the binary named by ``VEIL_GEMINI``."""
        config = self.home / ".gemini"
        config.mkdir(parents=True, exist_ok=True)
        (config / "settings.json").write_text(json.dumps({**SETTINGS, **(settings or {})}))
        variables = private_env(
            self.home,
            {
                "GOOGLE_GEMINI_BASE_URL": base_url,
                "GEMINI_API_KEY": "scripted-dummy-key",
                "GEMINI_CLI_TRUST_WORKSPACE": "true",
                **(env or {}),
            },
        )
        command = (
            *launcher(self.binary, wrapper, "VEIL_GEMINI", variables),
            "-p",
            task,
            "--yolo",
            "--output-format",
            "stream-json",
            *args,
        )
        test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
        code, stdout, stderr, seconds = run_process(
            command, cwd=cwd, env=variables, timeout=timeout, label=f"gemini {test}".strip()
        )
        events = json_lines(stdout)
        session = next((str(e["session_id"]) for e in events if e.get("session_id")), None)
        chats = sorted((config / "tmp").glob("*/chats/session-*.json*"), key=os.path.getmtime)
        return GeminiRun(
            command, code, events, stdout, stderr, seconds, self.home, session,
            chats[-1] if chats else None,
        )  # fmt: skip
