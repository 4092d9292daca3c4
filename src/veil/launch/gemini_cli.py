"""``veil gemini``: Gemini CLI through Veil's proxy.

The upstream is ``$GOOGLE_GEMINI_BASE_URL``, else Google's Gemini API; the agent gets
``GOOGLE_GEMINI_BASE_URL`` pointing at the proxy.

Gemini CLI 0.61 reads MCP servers and its other settings only from files: the system settings
(``GEMINI_CLI_SYSTEM_SETTINGS_PATH``), the user's ``~/.gemini/settings.json``, the project's
``.gemini/settings.json`` and extensions under ``~/.gemini/extensions``. The system file is
skipped unless it and every directory above it are owned by root and writable by no one else
(``isFileAndDirectorySecureSync``): no use to a user's run. So for one run Gemini CLI gets a
home of its own in ``scratch`` (``GEMINI_CLI_HOME``, read by its ``homedir()`` only — the
shells it runs keep ``HOME``): ``.gemini/settings.json`` there is the user's settings plus, for
this run, Veil's MCP server ``veil`` (``veil mcp --project``, trusted: ``expand`` only reads),
unless the user's settings already name a server ``veil``, and Veil's hooks (``veil hook gemini
EVENT``, :mod:`veil.clients.gemini_hooks`): the memory briefing with the first prompt, every
shell command, edit and read recorded as an attempt or a step, a repeated failed edit refused,
the level-3 stop. Gemini CLI runs a settings file's hooks only in a folder it trusts, as it
runs its MCP servers; ``hooksConfig.enabled: false`` turns them off with the user's own.

Its own tool-output masking is switched off for the run: Veil's stubs do that job, restorable
with ``mcp_veil_expand``, and two policies rewriting the same results would fight (Veil would
store and restore the masked preview, and every masking pass changes the cached prefix). The
settings that name its thresholds (``contextManagement.tools.outputMasking``) are not read by
0.61 — its configuration passes only ``contextManagement.enabled`` on — so the switch is its
experiment flags, which it reads from the file ``$GEMINI_EXP`` names before asking Google's
server (``getExperiments``): ``scratch/experiments.json`` sets both masking thresholds
(``MASKING_PROTECTION_THRESHOLD``, ``MASKING_PRUNABLE_THRESHOLD``) out of reach, keeping any
other flag of a ``$GEMINI_EXP`` the user set. A Google-login user's run therefore gets no
experiment flags from Google's server (an API-key login gets none anyway).

Every other entry of the user's ``~/.gemini`` (credentials, chats under ``tmp``, history,
extensions, commands, policies…) is a symbolic link to the original, so what the run writes
there lands where it always does and ``veil gemini -- --resume`` finds the session; its
``tmp`` and ``history`` directories are made first if missing (Gemini CLI makes them on its
first run anyway). ``GEMINI_CLI_TRUSTED_FOLDERS_PATH`` names the user's own trust file. What
the run changes in its settings file (``/settings``) is not kept. Nothing of the user's
configuration is written.

Its chat compression is left as it is, as the bound Veil's budget stays under (like Claude
Code's compaction): at half its 1,048,576-token limit it is far above where Veil keeps a
conversation, it reads the conversation's size from the provider's answer (what Veil sent), and
0.61 has no switch to turn it off (a threshold of 0 means the default). It compresses only what
came before the latest user prompt, and a resumed session (``--resume``) is measured by its own
estimate of the whole history, not by what Veil sent: such a session over the threshold is
compressed at its first turn (docs/gemini-cli.md).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

from veil.clients import gemini_hooks, settings
from veil.hosts import gemini_cli
from veil.launch.launcher import Env, Launch, Launcher, Started

GEMINI_API = "https://generativelanguage.googleapis.com"
SETTINGS = "settings.json"
UNMASKABLE = 1_000_000_000
"""A masking threshold no conversation reaches: masking is off."""
MASKING_FLAGS = (45758817, 45758818)
"""Gemini CLI 0.61's ``ExperimentFlags.MASKING_PROTECTION_THRESHOLD`` and
``MASKING_PRUNABLE_THRESHOLD`` (``intValue``: tokens, as a string)."""
RUNTIME_DIRS = ("tmp", "history")
"""What Gemini CLI writes under ``~/.gemini`` on every run: made in the user's directory first
so the run's links reach them."""


def upstream(env: Env) -> str:
    return env.get("GOOGLE_GEMINI_BASE_URL") or GEMINI_API


def gemini_home(env: Env) -> Path:
    """The user's home as Gemini CLI sees it: ``$GEMINI_CLI_HOME``, else ``$HOME``."""
    configured = env.get("GEMINI_CLI_HOME") or env.get("HOME")
    return Path(configured).expanduser() if configured else Path.home()


_JSONC = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.DOTALL)


def read_settings(path: Path) -> dict[str, Any]:
    """A Gemini CLI settings file (JSON with comments, as it reads it) as an object: ``{}``
    when there is none. Raises ValueError naming the file when it cannot be read."""
    if not path.exists():
        return {}
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    plain = _JSONC.sub(lambda m: m[0] if m[0].startswith('"') else "", raw)
    try:
        data: object = json.loads(plain) if plain.strip() else {}
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON ({exc}); fix it, then run veil gemini again") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a JSON object; fix it, then run veil gemini again")
    return cast(dict[str, Any], data)


def run_settings(user: dict[str, Any], veil: tuple[str, ...], root: Path) -> dict[str, Any]:
    """The user's settings with Veil's MCP server, unless one named ``veil`` is there, and
    Veil's hooks after the user's own (:func:`veil.clients.gemini_hooks.hooks`)."""
    out = gemini_hooks.with_hooks(user, veil)
    servers = dict(cast(dict[str, Any], out.get("mcpServers") or {}))
    if settings.MCP_NAME not in servers:
        entry = settings.mcp_entry(list(veil), ["--project"])
        servers[settings.MCP_NAME] = {
            "command": entry["command"],
            "args": entry["args"],
            "cwd": str(root),
            "trust": True,
            "excludeTools": [settings.HOOK_TOOL],  # the hooks' tool, never the model's
        }
    out["mcpServers"] = servers
    return out


def experiments(env: Env) -> dict[str, Any]:
    """Gemini CLI's experiment flags for one run: the user's ``$GEMINI_EXP`` file's (if any),
    with the masking thresholds out of reach."""
    given = env.get("GEMINI_EXP")
    try:
        data: object = json.loads(Path(given).read_text(encoding="utf-8")) if given else {}
    except (OSError, ValueError):
        data = {}
    found = cast(dict[str, Any], data) if isinstance(data, dict) else {}
    given_flags = cast(list[object], found.get("flags") or [])
    flags: list[dict[str, Any]] = [
        cast(dict[str, Any], f)
        for f in given_flags
        if isinstance(f, dict) and cast(dict[str, Any], f).get("flagId") not in MASKING_FLAGS
    ]
    flags += [{"flagId": flag, "intValue": str(UNMASKABLE)} for flag in MASKING_FLAGS]
    return {**found, "flags": flags}


def _home_for_run(real: Path, scratch: Path, merged: dict[str, Any]) -> Path:
    """``scratch/home`` with ``.gemini/settings.json`` = ``merged`` and every other entry of
    ``real/.gemini`` (and ``real/.agents``, its skills) linked to the original."""
    home = scratch / "home"
    mine = home / ".gemini"
    mine.mkdir(parents=True)
    theirs = real / ".gemini"
    for name in RUNTIME_DIRS:
        (theirs / name).mkdir(parents=True, exist_ok=True)
    for entry in sorted(theirs.iterdir()):
        if entry.name != SETTINGS:
            (mine / entry.name).symlink_to(entry)
    if (real / ".agents").exists():
        (home / ".agents").symlink_to(real / ".agents")
    (mine / SETTINGS).write_text(json.dumps(merged, indent=2), encoding="utf-8")
    return home


def start(launch: Launch) -> Started:
    real = gemini_home(launch.env)
    user = read_settings(real / ".gemini" / SETTINGS)
    home = _home_for_run(real, launch.scratch, run_settings(user, launch.veil, launch.root))
    flags = launch.scratch / "experiments.json"
    flags.write_text(json.dumps(experiments(launch.env)), encoding="utf-8")
    env = {
        **launch.env,
        "GOOGLE_GEMINI_BASE_URL": launch.base,
        "GEMINI_CLI_HOME": str(home),
        "GEMINI_EXP": str(flags),
        "GEMINI_CLI_TRUSTED_FOLDERS_PATH": launch.env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
        or str(real / ".gemini" / "trustedFolders.json"),
    }
    return Started([launch.binary, *launch.args], env)


def limits(env: Env) -> dict[str, str]:
    """``env`` with Gemini CLI's own model (``model.name``) and compression threshold
    (``model.compressionThreshold``) from the user's settings folded in as variables, for its
    host's budget rule (``GEMINI_MODEL`` set in the environment wins, as in Gemini CLI)."""
    out = dict(env)
    try:
        model = read_settings(gemini_home(env) / ".gemini" / SETTINGS).get("model")
    except ValueError:
        model = None
    if isinstance(model, dict):
        fields = cast(dict[str, Any], model)
        name, share = fields.get("name"), fields.get("compressionThreshold")
        if isinstance(name, str) and name and not env.get("GEMINI_MODEL"):
            out["GEMINI_MODEL"] = name
        if isinstance(share, int | float) and not isinstance(share, bool) and share > 0:
            out[gemini_cli.THRESHOLD_VARIABLE] = str(share)
    return out


LAUNCHER = Launcher(
    host=gemini_cli.HOST,
    binary_variable="VEIL_GEMINI",
    upstream=upstream,
    start=start,
    settings=limits,
)
