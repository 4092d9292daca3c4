"""The coding agents Veil runs inside, one module each: what Veil needs to know of each host to
serve it through the proxy — the name its model sees Veil's expand tool under, what it sends
before any message, where it compacts its own conversation and so the budget Veil keeps it
under. :data:`HOSTS` lists them by the command that starts them (``veil claude``)."""

from __future__ import annotations

from collections.abc import Mapping

from veil.hosts import claude_code, codex
from veil.hosts.host import Host

HOSTS: Mapping[str, Host] = {"claude": claude_code.HOST, "codex": codex.HOST}

__all__ = ["HOSTS", "Host"]
