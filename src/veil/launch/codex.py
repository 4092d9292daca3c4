"""``veil codex``: Codex through Veil's proxy.

The upstream is the base URL of the model provider Codex's configuration names
(``openai_base_url`` or ``$OPENAI_BASE_URL`` for the built-in provider, else OpenAI's API); the
provider's base URL is overridden for this run (``-c model_providers.NAME.base_url=…``;
``-c openai_base_url=…`` and ``OPENAI_BASE_URL`` for the built-in one), and Veil's MCP server is
added with ``-c mcp_servers.veil.…`` unless the configuration has it. Nothing is written.
"""

from __future__ import annotations

import json
import tomllib
from typing import Any, cast

from veil.clients.codex import FORWARDED, config_path
from veil.hosts import codex
from veil.launch.launcher import Env, Launch, Launcher, Started

OPENAI_API = "https://api.openai.com/v1"
BUILT_IN = "openai"
"""Codex's built-in provider: its base URL is ``openai_base_url`` in its configuration (a
``[model_providers.openai]`` table is ignored) or ``$OPENAI_BASE_URL`` — the pinned 0.171 reads
only the first for API-key logins, so ``veil codex`` sets both."""


def _config(env: Env) -> dict[str, Any]:
    path = config_path(env)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path}: cannot read it ({exc})") from None


def provider(env: Env) -> tuple[str, str | None]:
    """The model provider Codex's configuration names, and its base URL as configured (for
    the built-in provider, ``openai_base_url``; None: not configured). Raises ValueError naming
    the file when it cannot be read."""
    data = _config(env)
    name = str(data.get("model_provider") or BUILT_IN)
    if name == BUILT_IN:
        base = data.get("openai_base_url")
        return name, str(base) if isinstance(base, str) and base else None
    providers = cast(dict[str, Any], data.get("model_providers") or {})
    entry = providers.get(name)
    base = cast(dict[str, Any], entry).get("base_url") if isinstance(entry, dict) else None
    return name, str(base) if base else None


def upstream(env: Env) -> str:
    _, base = provider(env)
    return base or env.get("OPENAI_BASE_URL") or OPENAI_API


def limits(env: Env) -> dict[str, str]:
    """``env`` with Codex's own model, window and compaction settings (``model``,
    ``model_context_window``, ``model_auto_compact_token_limit`` in its configuration) folded
    in as variables, for its host's budget rule."""
    try:
        data = _config(env)
    except ValueError:
        data = {}
    out = dict(env)
    model = data.get("model")
    if isinstance(model, str) and model:
        out["CODEX_CONFIG_MODEL"] = model
    for key, name in (
        ("model_context_window", "CODEX_MODEL_CONTEXT_WINDOW"),
        ("model_auto_compact_token_limit", "CODEX_AUTO_COMPACT_TOKEN_LIMIT"),
    ):
        value = data.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            out[name] = str(value)
    return out


def _has_veil_server(env: Env) -> bool:
    try:
        data = _config(env)
    except ValueError:
        return False
    return "veil" in cast(dict[str, Any], data.get("mcp_servers") or {})


def start(launch: Launch) -> Started:
    name, _ = provider(launch.env)
    env = dict(launch.env)
    extra: list[str] = []
    if name == BUILT_IN:
        env["OPENAI_BASE_URL"] = launch.base
        extra += ["-c", f"openai_base_url={json.dumps(launch.base)}"]
    else:
        extra += ["-c", f"model_providers.{name}.base_url={json.dumps(launch.base)}"]
    if not _has_veil_server(launch.env):  # the expand tool for the stubs, for this run only
        veil = launch.veil
        argv = [*veil[1:], "mcp", "--project"]
        extra += [
            "-c", f"mcp_servers.veil.command={json.dumps(veil[0])}",
            "-c", f"mcp_servers.veil.args={json.dumps(argv)}",
            "-c", f"mcp_servers.veil.env_vars={json.dumps(list(FORWARDED))}",
            "-c", "mcp_servers.veil.startup_timeout_sec=30",
        ]  # fmt: skip
    args = launch.args
    # `codex exec …`: the overrides go after the subcommand's name when there is one
    if args and not args[0].startswith("-"):
        return Started([launch.binary, args[0], *extra, *args[1:]], env)
    return Started([launch.binary, *extra, *args], env)


LAUNCHER = Launcher(
    host=codex.HOST, binary_variable="VEIL_CODEX", upstream=upstream, start=start, settings=limits
)
