"""``veil mcp`` in Codex's configuration: ``$CODEX_HOME/config.toml`` (default
``~/.codex/config.toml``), table ``[mcp_servers.veil]``. Pure text functions plus the file.

Python reads TOML (``tomllib``) but does not write it, and rewriting a user's file from parsed
data would drop its comments and layout. So Veil's table is a block of text between two marker
comments: :func:`install` replaces that block (or appends it), :func:`uninstall` cuts it out,
and every other byte of the file stays. Both check the result: it must parse, and apart from
``mcp_servers.veil`` it must hold exactly what the file held before. A ``[mcp_servers.veil]``
that is not inside Veil's markers was written by someone else and is refused.

Veil's hooks for Codex live in ``$CODEX_HOME/hooks.json`` (see :mod:`veil.clients.settings`);
Codex runs a hook only once it is trusted, which it records in this file as
``[hooks.state."<hook key>"] trusted_hash = "<hash>"``: ``veil install codex`` asks Codex for
the keys and hashes of Veil's hooks (:mod:`veil.clients.codex_trust`) and writes those tables
inside its block too.

The server is started with ``--project``: Codex runs it in the session's directory, so it
serves the memory and attempt record of the repository Codex works in. ``env_vars`` forwards
the variables that configure Veil's extraction model (Codex passes only a short default list
of variables to MCP servers).
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from veil.clients.settings import SettingsError

BEGIN = "# >>> veil: written by `veil install codex`; `veil install codex --uninstall` removes it"
END = "# <<< veil"
FORWARDED = (
    "VEIL_MODEL",
    "VEIL_BASE_URL",
    "VEIL_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "OLLAMA_HOST",
)


def config_path(env: Mapping[str, str] = os.environ) -> Path:
    home = env.get("CODEX_HOME")
    return (
        Path(home).expanduser() / "config.toml" if home else Path.home() / ".codex" / "config.toml"
    )


def _string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a TOML basic string (\uXXXX escapes included)


def block(
    veil: Sequence[str], args: Sequence[str], trusted: Mapping[str, str] | None = None
) -> str:
    """Veil's table, between the markers; ``trusted``: hook key → hash Codex trusts."""
    argv = [*veil[1:], "mcp", *args]
    lines = [
        BEGIN,
        "[mcp_servers.veil]",
        f"command = {_string(veil[0])}",
        f"args = [{', '.join(_string(a) for a in argv)}]",
        f"env_vars = [{', '.join(_string(v) for v in FORWARDED)}]",
        "startup_timeout_sec = 30",
    ]
    for key, hash_ in sorted((trusted or {}).items()):
        lines += ["", f"[hooks.state.{_string(key)}]", f"trusted_hash = {_string(hash_)}"]
    return "\n".join([*lines, END])


def trusted(text: str) -> dict[str, str]:
    """Hook key → trusted hash, as Veil's block in ``text`` records them."""
    span = _span(text)
    if span is None:
        return {}
    try:
        data = tomllib.loads(text[span[0] : span[1]])
    except tomllib.TOMLDecodeError:
        return {}
    hooks = data.get("hooks")
    state = cast(dict[str, Any], hooks).get("state") if isinstance(hooks, dict) else None
    if not isinstance(state, dict):
        return {}
    out: dict[str, str] = {}
    for key, value in cast(dict[str, Any], state).items():
        hash_ = cast(dict[str, Any], value).get("trusted_hash") if isinstance(value, dict) else None
        if isinstance(hash_, str):
            out[key] = hash_
    return out


def _parse(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(
            f"{where}: not valid TOML ({exc}); fix it and install again — Veil does not "
            "rewrite a file it cannot read"
        ) from None


def _without_veil(data: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    """``data`` without ``mcp_servers.veil`` and the trust of Veil's hooks (``keys``)."""
    out = dict(data)
    servers = out.get("mcp_servers")
    if isinstance(servers, dict):
        rest = {k: v for k, v in cast(dict[str, Any], servers).items() if k != "veil"}
        if rest:
            out["mcp_servers"] = rest
        else:
            del out["mcp_servers"]
    hooks = out.get("hooks")
    state = cast(dict[str, Any], hooks).get("state") if isinstance(hooks, dict) else None
    if isinstance(state, dict) and keys & set(cast(dict[str, Any], state)):
        kept_state = {k: v for k, v in cast(dict[str, Any], state).items() if k not in keys}
        kept_hooks = {k: v for k, v in cast(dict[str, Any], hooks).items() if k != "state"}
        if kept_state:
            kept_hooks["state"] = kept_state
        if kept_hooks:
            out["hooks"] = kept_hooks
        else:
            del out["hooks"]
    return out


def hooks_path(env: Mapping[str, str] = os.environ) -> Path:
    """Codex's user hooks file, next to its ``config.toml``."""
    return config_path(env).with_name("hooks.json")


def _span(text: str, where: str = "config.toml") -> tuple[int, int] | None:
    """Where Veil's block is (start, end including its newline), or ``None``."""
    start = text.find(BEGIN)
    if start < 0:
        return None
    end = text.find(END, start)
    if end < 0:
        raise SettingsError(f"{where}: Veil's start marker has no end marker; remove it by hand")
    end += len(END)
    if text[end : end + 1] == "\n":
        end += 1
    return start, end


def install(text: str, new_block: str, where: str = "config.toml") -> str:
    before = _parse(text, where)
    span = _span(text, where)
    keys = set(trusted(text)) | set(trusted(new_block + "\n"))
    if span is None:
        servers = before.get("mcp_servers")
        if isinstance(servers, dict) and "veil" in servers:
            raise SettingsError(
                f"{where}: [mcp_servers.veil] is already configured, and not by `veil install "
                "codex`; remove it (or rename it), then install again"
            )
        glue = (
            "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        )
        result = f"{text}{glue}{new_block}\n"
    else:
        result = text[: span[0]] + new_block + "\n" + text[span[1] :]
    try:
        after = tomllib.loads(result)
    except tomllib.TOMLDecodeError:
        raise SettingsError(
            f"{where}: Veil's [mcp_servers.veil] table cannot be added to this file's layout "
            "(is mcp_servers an inline table?); add the table by hand"
        ) from None
    if _without_veil(after, keys) != _without_veil(before, keys):
        raise SettingsError(f"{where}: adding Veil's table would change other settings")
    return result


def uninstall(text: str, where: str = "config.toml") -> str:
    before = _parse(text, where)
    span = _span(text, where)
    if span is None:
        return text
    keys = set(trusted(text))
    result = text[: span[0]] + text[span[1] :]
    if result.endswith("\n\n") and not text.endswith("\n\n"):
        result = result[:-1]
    after = _parse(result, where)
    if after != _without_veil(before, keys):
        raise SettingsError(f"{where}: removing Veil's block would change other settings")
    return result


def update(path: Path, change: Callable[[str], str]) -> bool:
    """Apply ``change`` (text → text) to the file; write (atomically) only when it changed."""
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    result = change(text)
    if result == text:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.veil-tmp")
    tmp.write_text(result, encoding="utf-8")
    os.replace(tmp, path)
    return True
