"""``veil opencode``: opencode through Veil's proxy.

opencode reads its providers and MCP servers from its configuration — the user's
(``$XDG_CONFIG_HOME/opencode/{config.json,opencode.json,opencode.jsonc}``), ``$OPENCODE_CONFIG``,
the project's (``opencode.json[c]`` and ``.opencode/opencode.json[c]`` from the repository's
root down to the working directory) — and, last and over all of them, from the JSON text in
``$OPENCODE_CONFIG_CONTENT``. ``veil opencode`` writes no file: it sets that variable for the
run, the user's own ``OPENCODE_CONFIG_CONTENT`` merged under Veil's three entries:

- ``provider.P.options.baseURL``: the proxy, for the provider ``P`` of the model the run uses
  (``-m/--model P/M``, else the configuration's ``model``, else the last one used from
  opencode's state ``model.json``, else the first provider the configuration names, else
  ``anthropic``). The proxy's upstream is that provider's base URL as the configuration names
  it, else its variable (``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``, which opencode's SDKs
  read), else its public API; a provider Veil knows no public API of needs a configured
  ``baseURL`` (one line says so). One proxy serves one provider: a small model or a subagent
  on another provider goes to it directly.
- ``mcp.veil``: Veil's MCP server (``veil mcp --project``), whose ``expand`` the model sees as
  ``veil_expand`` — unless the configuration already has an MCP server named ``veil``.
- ``plugin``: Veil's plugin (``opencode_plugin.ts``, shipped in this package, as a ``file://``
  URL) — Veil's hooks for the run (:mod:`veil.launch.hooks`): the memory briefing with the
  person's message, every call recorded as an attempt, a repeated failed edit refused, the
  session aborted at convergence level 3. The plugin runs its own ``veil mcp --project ROOT``
  (:data:`MCP_VARIABLE`) for the ``hook`` tool.

Its own compaction is left on: it is the bound Veil's budget sits under (the budget is just
below where opencode compacts, and opencode counts the provider's usage of what Veil forwarded,
so it does not compact while Veil keeps the requests within the budget); Veil cannot promise
every request fits (a conversation whose text and tool inputs alone exceed the budget goes over
it), and there opencode's compaction still saves the run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from veil.clients.settings import HOOK_TOOL, MCP_NAME
from veil.hosts import opencode
from veil.launch import hooks
from veil.launch.launcher import Env, Launch, Launcher, Started

PUBLIC = {"anthropic": "https://api.anthropic.com/v1", "openai": "https://api.openai.com/v1"}
"""The public API of the providers Veil knows (what opencode's SDK uses without a base URL)."""
BASE_VARIABLES = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}
"""The variable each provider's SDK reads its base URL from when none is configured."""
DEFAULT_PROVIDER = "anthropic"
CONTENT = "OPENCODE_CONFIG_CONTENT"
PLUGIN = Path(__file__).with_name("opencode_plugin.ts")
"""Veil's opencode plugin (package data): Veil's hooks for the run."""
PLUGIN_URL = PLUGIN.as_uri()
MCP_VARIABLE = "VEIL_OPENCODE_MCP"
"""The plugin's Veil MCP server (``veil mcp --project ROOT``), a JSON array."""

_JSONC = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/|,(\s*[}\]])', re.DOTALL)
_ENV = re.compile(r"\{env:([^}]+)\}")


def _jsonc(text: str, env: Env) -> Any:
    """A JSONC text (comments, trailing commas, ``{env:NAME}``) as opencode reads it."""
    text = _ENV.sub(lambda m: env.get(m.group(1).strip(), ""), text)
    plain = _JSONC.sub(lambda m: m.group(1) or m.group(2) or "", text)
    return json.loads(plain)


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` merged into ``base``: tables merged key by key, anything else replaced."""
    out = dict(base)
    for key, value in over.items():
        current = out.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            out[key] = _merged(cast(dict[str, Any], current), cast(dict[str, Any], value))
        else:
            out[key] = value
    return out


def _home(env: Env, variable: str, fallback: str) -> Path:
    configured = env.get(variable)
    return Path(configured) if configured else Path(env.get("HOME") or Path.home()) / fallback


def files(env: Env, cwd: Path) -> list[Path]:
    """opencode's configuration files in the order it merges them (the last wins)."""
    user = _home(env, "XDG_CONFIG_HOME", ".config") / "opencode"
    found = [user / "config.json", user / "opencode.json", user / "opencode.jsonc"]
    if env.get("OPENCODE_CONFIG"):
        found.append(Path(env["OPENCODE_CONFIG"]))
    chain: list[Path] = []
    for directory in (cwd, *cwd.parents):
        chain.append(directory)
        if (directory / ".git").exists():
            break
    for directory in reversed(chain):  # the repository's root first, the working directory last
        for name in ("opencode.json", "opencode.jsonc"):
            found += [directory / name, directory / ".opencode" / name]
    return found


def configuration(env: Env, cwd: Path | None = None) -> dict[str, Any]:
    """opencode's configuration as it will see it, before Veil's entries: its files merged,
    then ``$OPENCODE_CONFIG_CONTENT``. Raises ValueError naming a file (or the variable) that
    cannot be read."""
    data: dict[str, Any] = {}
    for path in files(env, cwd or Path.cwd()):
        if not path.is_file():
            continue
        try:
            value = _jsonc(path.read_text(encoding="utf-8"), env)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: cannot read it ({exc})") from None
        if isinstance(value, dict):
            data = _merged(data, cast(dict[str, Any], value))
    content = env.get(CONTENT, "")
    if content.strip():
        try:
            value = _jsonc(content, env)
        except ValueError as exc:
            raise ValueError(f"${CONTENT} is not JSON ({exc})") from None
        if not isinstance(value, dict):
            raise ValueError(f"${CONTENT} is not a JSON object")
        data = _merged(data, cast(dict[str, Any], value))
    return data


def _table(data: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    value: Any = data
    for key in keys:
        value = cast(dict[str, Any], value).get(key) if isinstance(value, dict) else None
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _option(args: tuple[str, ...]) -> str:
    for i, arg in enumerate(args):
        if arg in ("--model", "-m") and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--model="):
            return arg.split("=", 1)[1]
    return ""


def _recent(env: Env) -> str:
    """The last model opencode used (its state's ``model.json``), as ``provider/model``."""
    path = _home(env, "XDG_STATE_HOME", ".local/state") / "opencode" / "model.json"
    try:
        recent = json.loads(path.read_text(encoding="utf-8")).get("recent")
    except (OSError, ValueError, AttributeError):
        return ""
    first = cast(list[Any], recent)[0] if isinstance(recent, list) and recent else None
    if not isinstance(first, dict):
        return ""
    entry = cast(dict[str, Any], first)
    provider, model = entry.get("providerID"), entry.get("modelID")
    return f"{provider}/{model}" if isinstance(provider, str) and isinstance(model, str) else ""


def model(args: tuple[str, ...], data: Mapping[str, Any], env: Env) -> tuple[str, str]:
    """The provider and the model (``""``: opencode's choice) a run with ``args`` uses."""
    named = _option(args) or str(data.get("model") or "") or _recent(env)
    if "/" in named:
        provider, _, model_id = named.partition("/")
        return provider, model_id
    providers = list(_table(data, "provider"))
    return (providers[0] if providers else DEFAULT_PROVIDER), ""


def provider_base(provider: str, data: Mapping[str, Any], env: Env) -> str:
    """Where ``provider``'s requests go without Veil. Raises ValueError when Veil knows no
    public API of it and the configuration names no ``baseURL``."""
    configured = _table(data, "provider", provider, "options").get("baseURL")
    if isinstance(configured, str) and configured:
        return configured
    variable = BASE_VARIABLES.get(provider)
    if variable and env.get(variable):
        return env[variable]
    if provider in PUBLIC:
        return PUBLIC[provider]
    raise ValueError(
        f"opencode's provider {provider!r} has no base URL Veil knows: set "
        f'"provider": {{"{provider}": {{"options": {{"baseURL": "…"}}}}}} in opencode.json'
    )


def upstream(env: Env) -> str:
    return upstream_of_args(env, ())


def upstream_of_args(env: Env, args: Sequence[str]) -> str:
    """The base URL of the provider a run with ``args`` uses, as it would reach it."""
    data = configuration(env)
    provider, _ = model(tuple(args), data, env)
    return provider_base(provider, data, env)


def settings(env: Env) -> dict[str, str]:
    """``env`` with what opencode's configuration says of its window and compaction folded in
    as variables (:mod:`veil.hosts.opencode`): the models' ``limit`` tables, ``compaction.auto``
    and ``compaction.reserved``, and the configured model."""
    out = dict(env)
    try:
        data = configuration(env)
    except ValueError:
        return out
    limits: dict[str, Any] = {}
    for provider in _table(data, "provider"):
        for name in _table(data, "provider", provider, "models"):
            limit = _table(data, "provider", provider, "models", name, "limit")
            if limit:
                limits[name] = limit
    if limits:
        out[opencode.LIMITS_VARIABLE] = json.dumps(limits)
    compaction = _table(data, "compaction")
    if compaction.get("auto") is False:
        out[opencode.AUTO_VARIABLE] = "false"
    reserved = compaction.get("reserved")
    if isinstance(reserved, int) and not isinstance(reserved, bool) and reserved >= 0:
        out[opencode.RESERVED_VARIABLE] = str(reserved)
    _, model_id = model((), data, env)
    if model_id:
        out[opencode.HOST.model_variable] = model_id
    return out


def start(launch: Launch) -> Started:
    data = configuration(launch.env)
    provider, _ = model(launch.args, data, launch.env)
    overlay: dict[str, Any] = {"provider": {provider: {"options": {"baseURL": launch.base}}}}
    if MCP_NAME not in _table(data, "mcp"):  # the expand tool for the stubs, for this run only
        veil = list(launch.veil)
        overlay["mcp"] = {MCP_NAME: {"type": "local", "command": [*veil, "mcp", "--project"]}}
    # the hooks call the server's `hook` tool; the model is never offered it
    overlay["tools"] = {f"{MCP_NAME}_{HOOK_TOOL}": False}
    own = launch.env.get(CONTENT, "")
    mine = cast(dict[str, Any], _jsonc(own, launch.env)) if own.strip() else {}
    # Veil's hooks: opencode adds each source's plugins to the others'; the variable's own
    # list is kept, Veil's plugin after it
    plugins = mine.get("plugin")
    overlay["plugin"] = [*cast(list[Any], plugins if isinstance(plugins, list) else []), PLUGIN_URL]
    mcp = [*launch.veil, "mcp", "--project", str(launch.root)]
    env = {
        **launch.env,
        CONTENT: json.dumps(_merged(mine, overlay)),
        MCP_VARIABLE: json.dumps(mcp),
        hooks.TIMEOUTS_VARIABLE: hooks.timeouts(),
    }
    return Started([launch.binary, *launch.args], env)


LAUNCHER = Launcher(
    host=opencode.HOST,
    binary_variable="VEIL_OPENCODE",
    upstream=upstream,
    start=start,
    settings=settings,
    upstream_of_args=upstream_of_args,
)
