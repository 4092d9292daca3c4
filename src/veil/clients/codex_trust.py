"""Which of Veil's Codex hooks Codex would trust, and by which hash: asked of Codex itself.

Codex (0.171) runs a hook from a hooks file only once its definition is trusted: the TUI asks
the person, ``codex exec`` silently skips an untrusted hook. Trust is recorded in
``config.toml`` as ``[hooks.state."<key>"] trusted_hash = "<hash>"``, the key naming the file,
the event and the hook's position, the hash its definition. ``veil install codex`` is the
person's consent to Veil's hooks, so it records that trust; the keys and hashes come from the
Codex binary (``codex app-server``, JSON-RPC on stdio, method ``hooks/list``) rather than
from a copy of its hashing rule, which could drift from the binary the person runs.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

TIMEOUT_S = 30.0


class TrustUnavailable(RuntimeError):
    """Codex could not be asked (not installed, too old, or it failed); the message says why."""


def hook_hashes(
    codex: str, codex_home: Path, cwd: Path, env: Mapping[str, str] = os.environ
) -> dict[str, tuple[str, str]]:
    """Every hook Codex sees from ``cwd``: key → (current hash, trust status)."""
    environ = {**env, "CODEX_HOME": str(codex_home)}
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"clientInfo": {"name": "veil-install", "version": "1"}, "capabilities": {}},
        },
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]
    try:
        proc = subprocess.Popen(
            [codex, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environ,
            cwd=cwd,
            text=True,
        )
    except OSError as exc:
        raise TrustUnavailable(f"cannot run {codex}: {exc.strerror or exc}") from None
    try:
        return _listed(proc, requests)
    finally:
        proc.kill()
        proc.wait()


def _listed(
    proc: subprocess.Popen[str], requests: list[dict[str, Any]]
) -> dict[str, tuple[str, str]]:
    import threading

    assert proc.stdin is not None and proc.stdout is not None
    answer: list[dict[str, Any]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                message: Any = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and cast(dict[str, Any], message).get("id") == 2:
                answer.append(cast(dict[str, Any], message))
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        for request in requests:
            proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
    except OSError as exc:
        raise TrustUnavailable(f"codex app-server closed its input: {exc}") from None
    reader.join(TIMEOUT_S)
    if not answer:
        raise TrustUnavailable("codex app-server gave no answer to hooks/list")
    if "error" in answer[0]:
        raise TrustUnavailable(f"codex app-server: {answer[0]['error']}")
    found: dict[str, tuple[str, str]] = {}
    data: Any = cast(dict[str, Any], answer[0].get("result") or {}).get("data") or []
    for entry in cast(list[Any], data):
        for hook in cast(list[Any], cast(dict[str, Any], entry).get("hooks") or []):
            h = cast(dict[str, Any], hook)
            key, current = h.get("key"), h.get("currentHash")
            if isinstance(key, str) and isinstance(current, str):
                found[key] = (current, str(h.get("trustStatus") or ""))
    return found


def veil_hashes(
    codex: str, hooks_file: Path, cwd: Path, env: Mapping[str, str] = os.environ
) -> dict[str, str]:
    """Key → hash of the hooks defined in ``hooks_file`` (Veil's file)."""
    listed = hook_hashes(codex, hooks_file.parent, cwd, env)
    prefix = f"{hooks_file}:"
    return {key: value[0] for key, value in listed.items() if key.startswith(prefix)}
