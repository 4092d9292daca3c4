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
this run,

- Veil's MCP server ``veil`` (``veil mcp --project``, trusted: ``expand`` only reads), unless
  the user's settings already name a server ``veil``;
- its own tool-output masking switched off (``contextManagement.tools.outputMasking``
  thresholds out of reach): Veil's stubs do that job, restorable with ``mcp_veil_expand``,
  and two policies rewriting the same results would fight over the prompt cache.

Every other entry of the user's ``~/.gemini`` (credentials, chats under ``tmp``, history,
extensions, commands, policies…) is a symbolic link to the original, so what the run writes
there lands where it always does and ``veil gemini -- --resume`` finds the session; its
``tmp`` and ``history`` directories are made first if missing (Gemini CLI makes them on its
first run anyway). ``GEMINI_CLI_TRUSTED_FOLDERS_PATH`` names the user's own trust file. What
the run changes in its settings file (``/settings``) is not kept. Nothing of the user's
configuration is written.

Its chat compression is left as it is, as the bound Veil's budget stays under (like Claude
Code's compaction): at half its 1,048,576-token limit it is far above where Veil keeps a
conversation, and 0.61 has no switch to turn it off (a threshold of 0 means the default).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

from veil.clients import settings
from veil.hosts import gemini_cli
from veil.launch.launcher import Env, Launch, Launcher, Started

GEMINI_API = "https://generativelanguage.googleapis.com"
SETTINGS = "settings.json"
UNMASKABLE = 1_000_000_000
"""A masking threshold no conversation reaches: masking is off."""
MASKING_OFF = {
    "protectionThresholdTokens": UNMASKABLE,
    "minPrunableThresholdTokens": UNMASKABLE,
}
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
    """The user's settings with Veil's MCP server (unless one named ``veil`` is there) and
    Gemini CLI's tool-output masking off, for one run."""
    out = dict(user)
    servers = dict(cast(dict[str, Any], out.get("mcpServers") or {}))
    if settings.MCP_NAME not in servers:
        entry = settings.mcp_entry(list(veil), ["--project"])
        servers[settings.MCP_NAME] = {
            "command": entry["command"],
            "args": entry["args"],
            "cwd": str(root),
            "trust": True,
        }
    out["mcpServers"] = servers
    context = dict(cast(dict[str, Any], out.get("contextManagement") or {}))
    tools = dict(cast(dict[str, Any], context.get("tools") or {}))
    tools["outputMasking"] = {
        **cast(dict[str, Any], tools.get("outputMasking") or {}),
        **MASKING_OFF,
    }
    context["tools"] = tools
    out["contextManagement"] = context
    return out


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
    env = {
        **launch.env,
        "GOOGLE_GEMINI_BASE_URL": launch.base,
        "GEMINI_CLI_HOME": str(home),
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
