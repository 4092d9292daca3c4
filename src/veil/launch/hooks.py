"""Veil's hooks inside hosts that have no MCP hooks of their own but load extensions: pi's
(``pi_extension.ts``) and opencode's plugin (``opencode_plugin.ts``). Both reach the ``hook``
tool of ``veil mcp --project`` — the handlers Claude Code's and Codex's hooks reach
(:mod:`veil.clients.hook_service`) — through one shipped module, ``veil_mcp.ts``, and give up
on an answer after the same timeouts Claude Code gives Veil's hooks (:data:`TIMEOUTS_VARIABLE`).
"""

from __future__ import annotations

import json
from pathlib import Path

from veil.clients.settings import HOOKS

CLIENT = Path(__file__).with_name("veil_mcp.ts")
"""The MCP client and hook caller both extensions import (package data)."""
TIMEOUTS_VARIABLE = "VEIL_HOOK_TIMEOUTS"
"""Set for the host: ``{"EVENT": seconds}``, how long an extension waits for a hook's answer
before it goes on without one."""


def timeouts() -> str:
    """:data:`TIMEOUTS_VARIABLE`'s value: the timeout of each of Veil's ``mcp_tool`` hooks
    (:data:`veil.clients.settings.HOOKS`), by event."""
    return json.dumps({h.event: h.timeout for h in HOOKS if h.kind == "mcp_tool"})
