"""``veil pi``: pi through Veil's proxy.

pi takes no base URL from its command line or environment: its providers' URLs are its model
table's, or ``baseUrl`` in ``models.json`` (``~/.pi/agent``, or ``$PI_CODING_AGENT_DIR``). So
``veil pi`` starts pi with Veil's extension (``-e pi_extension.ts``, shipped in this package),
which overrides the URL of the provider pi will use for this process only and gives the model
Veil's ``expand`` as ``veil_expand`` and Veil's hooks (:mod:`veil.launch.hooks`). Nothing is
written.

The provider is the one pi will use: ``--provider NAME``, else the ``PROVIDER/`` of
``--model PROVIDER/ID``, else ``defaultProvider`` in its settings (the project's
``.pi/settings.json`` over the agent directory's), else — as pi does — the first of its
providers with a key in the environment or its ``auth.json``. The upstream is that provider's
``baseUrl`` in ``models.json`` (the chosen model's own, if it has one), else pi's built-in URL
(:data:`BUILT_IN`, from pi 0.73.1's model table).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from veil.hosts import pi
from veil.launch import hooks
from veil.launch.launcher import Env, Launch, Launcher, Started

EXTENSION = Path(__file__).with_name("pi_extension.ts")
"""Veil's pi extension (package data)."""
BUILT_IN = {
    "anthropic": "https://api.anthropic.com",
    "openai": "https://api.openai.com/v1",
    "google": "https://generativelanguage.googleapis.com/v1beta",
    "openai-codex": "https://chatgpt.com/backend-api",
    "deepseek": "https://api.deepseek.com",
    "openrouter": "https://openrouter.ai/api/v1",
    "xai": "https://api.x.ai/v1",
    "groq": "https://api.groq.com/openai/v1",
    "cerebras": "https://api.cerebras.ai/v1",
    "zai": "https://api.z.ai/api/coding/paas/v4",
    "moonshotai": "https://api.moonshot.ai/v1",
    "huggingface": "https://router.huggingface.co/v1",
    "fireworks": "https://api.fireworks.ai/inference",
    "minimax": "https://api.minimax.io/anthropic",
    "kimi-coding": "https://api.kimi.com/coding",
    "vercel-ai-gateway": "https://ai-gateway.vercel.sh",
}
"""pi 0.73.1's providers whose API Veil's proxy speaks (Anthropic Messages, OpenAI Responses
and Chat Completions, Gemini), each with its base URL as pi's model table gives it."""
KEYS = (
    ("anthropic", ("ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY")),
    ("openai", ("OPENAI_API_KEY",)),
    ("deepseek", ("DEEPSEEK_API_KEY",)),
    ("google", ("GEMINI_API_KEY",)),
    ("openrouter", ("OPENROUTER_API_KEY",)),
    ("vercel-ai-gateway", ("AI_GATEWAY_API_KEY",)),
    ("xai", ("XAI_API_KEY",)),
    ("groq", ("GROQ_API_KEY",)),
    ("cerebras", ("CEREBRAS_API_KEY",)),
    ("zai", ("ZAI_API_KEY",)),
    ("moonshotai", ("MOONSHOT_API_KEY",)),
    ("huggingface", ("HF_TOKEN",)),
    ("fireworks", ("FIREWORKS_API_KEY",)),
    ("kimi-coding", ("KIMI_API_KEY",)),
)
"""Providers in the order pi picks the first one with a key (its ``defaultModelPerProvider``),
with the variables it reads their keys from."""
DEFAULT_WINDOW = 128_000
"""pi's window for a ``models.json`` model without ``contextWindow``."""


def agent_dir(env: Env) -> Path:
    """pi's agent directory: ``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``."""
    configured = env.get("PI_CODING_AGENT_DIR")
    if configured:
        return Path(configured).expanduser()
    return Path(env.get("HOME") or Path.home()) / ".pi" / "agent"


def _json(path: Path) -> dict[str, Any]:
    """A JSON object file ({} when it does not exist). Raises ValueError naming it."""
    try:
        if not path.exists():
            return {}
        data: object = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot read it ({exc})") from None
    return cast(dict[str, Any], data) if isinstance(data, dict) else {}


def _providers(env: Env) -> dict[str, Any]:
    providers = _json(agent_dir(env) / "models.json").get("providers")
    return cast(dict[str, Any], providers) if isinstance(providers, dict) else {}


def _settings(env: Env) -> dict[str, Any]:
    """pi's settings: the project's ``.pi/settings.json`` (in the working directory) over the
    agent directory's, merged one level deep as pi merges them."""
    merged = _json(agent_dir(env) / "settings.json")
    for key, value in _json(Path.cwd() / ".pi" / "settings.json").items():
        old = merged.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            merged[key] = {**cast(dict[str, Any], old), **cast(dict[str, Any], value)}
        else:
            merged[key] = value
    return merged


def _models(entry: object) -> list[dict[str, Any]]:
    """The models (objects with an ``id``) of one ``models.json`` provider entry."""
    listed = cast(dict[str, Any], entry).get("models") if isinstance(entry, dict) else None
    return [
        cast(dict[str, Any], m)
        for m in cast(list[Any], listed if isinstance(listed, list) else [])
        if isinstance(m, dict) and isinstance(cast(dict[str, Any], m).get("id"), str)
    ]


def _option(args: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
    return None


def provider(env: Env, args: Sequence[str]) -> str:
    """The provider a run of pi with ``args`` uses. Raises ValueError (one line with the fix)
    when none can be told, or a settings file cannot be read."""
    named = _option(args, "--provider")
    if named:
        return named
    known = {p.lower(): p for p in (*_providers(env), *BUILT_IN)}
    model = _option(args, "--model") or ""
    if "/" in model and model.split("/", 1)[0].lower() in known:
        return known[model.split("/", 1)[0].lower()]
    default = _settings(env).get("defaultProvider")
    if isinstance(default, str) and default:
        return default
    logged_in = _json(agent_dir(env) / "auth.json")
    for name, variables in KEYS:
        if name in logged_in or any(env.get(v) for v in variables):
            return name
    raise ValueError(
        "which provider does pi use? name it: veil pi -- --provider NAME --model ID (or set "
        f"defaultProvider in {agent_dir(env) / 'settings.json'})"
    )


def upstream_of_args(env: Env, args: Sequence[str]) -> str:
    """The base URL of the provider (or of the chosen model, when ``models.json`` gives it its
    own) a run of pi with ``args`` uses. Raises ValueError naming the fix."""
    name = provider(env, args)
    entry: object = _providers(env).get(name)
    model = (_option(args, "--model") or "").removeprefix(f"{name}/")
    for m in _models(entry):
        own = m.get("baseUrl")
        if m["id"] == model and isinstance(own, str) and own:
            return own
    base = cast(dict[str, Any], entry).get("baseUrl") if isinstance(entry, dict) else None
    if isinstance(base, str) and base:
        return base
    if name in BUILT_IN:
        return BUILT_IN[name]
    raise ValueError(
        f"pi's provider {name!r} has no base URL Veil knows: give it a baseUrl in "
        f"{agent_dir(env) / 'models.json'}, or pass veil pi --upstream URL"
    )


def upstream(env: Env) -> str:
    return upstream_of_args(env, ())


def limits(env: Env) -> dict[str, str]:
    """``env`` with pi's windows and compaction settings folded in as variables
    (``PI_MODEL_WINDOWS``, ``PI_COMPACTION_ENABLED``, ``PI_COMPACTION_RESERVE``), for its
    host's budget rule (:mod:`veil.hosts.pi`)."""
    out = dict(env)
    try:
        providers, settings = _providers(env), _settings(env)
    except ValueError:
        return out
    windows: dict[str, int] = {}
    for entry in providers.values():
        for model in _models(entry):
            size = model.get("contextWindow")
            valid = isinstance(size, int) and not isinstance(size, bool) and size > 0
            windows[str(model["id"])] = cast(int, size) if valid else DEFAULT_WINDOW
    if windows:
        out["PI_MODEL_WINDOWS"] = json.dumps(windows)
    compaction = settings.get("compaction")
    if isinstance(compaction, dict):
        compaction = cast(dict[str, Any], compaction)
        if compaction.get("enabled") is False:
            out["PI_COMPACTION_ENABLED"] = "false"
        reserve = compaction.get("reserveTokens")
        if isinstance(reserve, int) and not isinstance(reserve, bool) and reserve >= 0:
            out["PI_COMPACTION_RESERVE"] = str(reserve)
    return out


def start(launch: Launch) -> Started:
    """``pi -e <Veil's extension> ARGS``, told by variables where the proxy is, which provider
    to point at it, how to start Veil's MCP server (for ``veil_expand`` and the hooks) and how
    long to wait for a hook's answer."""
    mcp = [*launch.veil, "mcp", "--project", str(launch.root)]
    env = {
        **launch.env,
        "VEIL_PI_PROVIDER": provider(launch.env, launch.args),
        "VEIL_PI_BASE_URL": launch.base,
        "VEIL_PI_MCP": json.dumps(mcp),
        hooks.TIMEOUTS_VARIABLE: hooks.timeouts(),
    }
    return Started([launch.binary, "-e", os.fspath(EXTENSION), *launch.args], env)


LAUNCHER = Launcher(
    host=pi.HOST,
    binary_variable="VEIL_PI",
    upstream=upstream,
    start=start,
    settings=limits,
    upstream_of_args=upstream_of_args,
)
