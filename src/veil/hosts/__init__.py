"""The coding agents Veil runs inside, one module each: what Veil needs to know of each host to
serve it through the proxy — the name its model sees Veil's expand tool under, what it sends
before any message, where it compacts its own conversation and so the budget Veil keeps it
under — its tool vocabulary (what a call addresses, for the proxy and the hooks alike) and the
range of its versions Veil is tested with. :data:`HOSTS` lists them by the command that starts
them (``veil claude``). Adding a host is one module (its ``describe`` and its ``HOST``) and an
entry here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from veil.hosts import claude_code, codex, gemini_cli, opencode, pi
from veil.hosts.host import Host, Use

HOSTS: Mapping[str, Host] = {
    "claude": claude_code.HOST,
    "codex": codex.HOST,
    "gemini": gemini_cli.HOST,
    "pi": pi.HOST,
    "opencode": opencode.HOST,
}


def describe(name: str, arguments: Mapping[str, Any], root: Path | None = None) -> Use | None:
    """What a call of tool ``name`` addresses, by the first host whose tool it is (None: no
    host's, or the call lacks what its tool needs). The one entry point of the proxy
    (:mod:`veil.proxy.tools`) and the hooks (:mod:`veil.clients.claude_code_input`): neither
    knows which host made the call, and hosts that share a tool's name (Claude Code's and
    Codex's hooks' ``Bash``) mean the same by it."""
    for host in HOSTS.values():
        found = host.describe(name, arguments, root)
        if found is not None:
            return found
    return None


ADAPTER_EXPAND = "veil_expand"
"""Veil's expand as its own framework adapters (pydantic-ai, the Agents SDK) name it: the verb
catalogue's ``veil_`` prefix. An app built on them may run behind a bare ``veil proxy``."""


def expand_calls() -> tuple[str, ...]:
    """Every name a call of Veil's expand arrives under, in any host's requests (and the
    adapters')."""
    names = (n for host in HOSTS.values() for n in host.expand_calls)
    return tuple(dict.fromkeys((*names, ADAPTER_EXPAND)))


def expand_offered(names: Iterable[str], early: str) -> str | None:
    """Veil's expand as a request offers it to the model — the name to put in a stub — or
    None when it offers none. ``names``: the request's tool names; ``early``: the text of its
    system prompt and first messages, where a host that defers MCP tools behind a tool search
    names them instead. The name is the one offered (Claude Code's ``mcp__veil__expand`` or its
    plugin's ``mcp__plugin_veil_veil__expand``); a tool inside a namespace (Codex's
    ``mcp__veil.expand``) is named as its host's model calls it (:attr:`Host.expand_tool`)."""
    for name in names:
        for host in HOSTS.values():
            if name in host.expand_calls:
                return name if "." not in name else host.expand_tool
        if name == ADAPTER_EXPAND:
            return name
    for host in HOSTS.values():
        for name in host.expand_calls:
            if "." not in name and name in early:
                return name
        if any(marker in early for marker in host.deferred_expand):
            return host.expand_tool
    return None


__all__ = ["ADAPTER_EXPAND", "HOSTS", "Host", "Use", "describe", "expand_calls", "expand_offered"]
