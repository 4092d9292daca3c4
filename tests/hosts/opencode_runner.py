"""Run the real opencode (npm ``opencode-ai``) headless against a model server on 127.0.0.1, as
:mod:`tests.hosts.runners` runs Claude Code and Codex.

Each run gets a private home (``HOME`` and every ``XDG_*`` directory under it, so opencode's
configuration, data, cache and state are the test's own) whose
``~/.config/opencode/opencode.json`` points opencode's ``anthropic`` provider at the server
(``baseURL`` ``…/v1``, a dummy key) and names no model, so opencode picks its own default; a
minimal environment with ``OPENCODE_DISABLE_MODELS_FETCH=1`` (its bundled model table, no
fetch of models.dev) and ``OPENCODE_DISABLE_AUTOUPDATE=1``, and the proxy trap of
:func:`tests.hosts.runners.private_env`; its own process group, killed whole after exit
(Veil's MCP server, shells).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.hosts.runners import AgentRun, json_lines, launcher, private_env, run_process


def opencode_json(base_url: str, extra: Mapping[str, Any] | None = None) -> str:
    """An ``opencode.json`` whose ``anthropic`` provider sends to ``base_url`` (``/v1`` is
    appended, as opencode's Anthropic SDK expects) with a dummy key; ``extra`` merged on top."""
    config: dict[str, Any] = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "anthropic": {"options": {"baseURL": f"{base_url}/v1", "apiKey": "sk-ant-dummy"}}
        },
    }
    config.update(extra or {})
    return json.dumps(config, indent=2)


PLUGIN_SDK = "@opencode-ai/plugin"


def plugin_sdk_installed(config_dir: Path) -> None:
    """Mark opencode's plugin SDK as installed in ``config_dir``, as one online run leaves it.
    opencode 1.18.33 installs :data:`PLUGIN_SDK` into each configuration directory (``Npm.install``:
    skipped when ``node_modules`` exists and ``package-lock.json`` names it) and, once any
    plugin is configured (``veil opencode`` adds Veil's), waits for that install before its
    first request: offline, about 70 s until npm gives up."""
    (config_dir / "node_modules").mkdir(exist_ok=True)
    lock = {"packages": {"": {"dependencies": {PLUGIN_SDK: "*"}}}}
    (config_dir / "package-lock.json").write_text(json.dumps(lock))


@dataclass(frozen=True)
class OpencodeRun(AgentRun):
    """An opencode run (``run --format json``): one JSON event per line on stdout."""

    @property
    def session_id(self) -> str | None:
        return next((str(e["sessionID"]) for e in self.events if e.get("sessionID")), None)

    def tool_parts(self) -> list[dict[str, Any]]:
        """Each finished tool call as opencode reports it (``tool``, ``callID``, ``state`` with
        its ``input`` and the full ``output`` opencode keeps)."""
        return [
            e["part"]
            for e in self.events
            if e.get("type") == "tool_use" and isinstance(e.get("part"), dict)
        ]


@dataclass(frozen=True)
class OpencodeRunner:
    """``run_opencode(task, *, cwd, base_url, …)``: opencode headless on one private HOME."""

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
        config: Mapping[str, Any] | None = None,
        wrapper: Sequence[str] = (),
    ) -> OpencodeRun:
        """Write the home's ``opencode.json`` (:func:`opencode_json`, ``config`` merged on
        top) and run ``opencode run --format json [ARGS] TASK`` in ``cwd``; ``wrapper``
        (``veil opencode --window N``): run through it, opencode's arguments after ``--``, the
        binary named by ``VEIL_OPENCODE``."""
        xdg = {
            "XDG_CONFIG_HOME": self.home / ".config",
            "XDG_DATA_HOME": self.home / ".local" / "share",
            "XDG_CACHE_HOME": self.home / ".cache",
            "XDG_STATE_HOME": self.home / ".local" / "state",
        }
        for path in xdg.values():
            path.mkdir(parents=True, exist_ok=True)
        (xdg["XDG_CONFIG_HOME"] / "opencode").mkdir(exist_ok=True)
        plugin_sdk_installed(xdg["XDG_CONFIG_HOME"] / "opencode")
        (xdg["XDG_CONFIG_HOME"] / "opencode" / "opencode.json").write_text(
            opencode_json(base_url, config)
        )
        variables = private_env(
            self.home,
            {
                **{name: str(path) for name, path in xdg.items()},
                "OPENCODE_DISABLE_MODELS_FETCH": "1",
                "OPENCODE_DISABLE_AUTOUPDATE": "1",
                **(env or {}),
            },
        )
        command = (
            *launcher(self.binary, wrapper, "VEIL_OPENCODE", variables),
            "run",
            "--format",
            "json",
            *args,
            task,
        )
        label = f"opencode {os.environ.get('PYTEST_CURRENT_TEST', '').split(' ')[0]}"
        code, stdout, stderr, seconds = run_process(
            command, cwd=cwd, env=variables, timeout=timeout, label=label.strip()
        )
        return OpencodeRun(command, code, json_lines(stdout), stdout, stderr, seconds, self.home)
