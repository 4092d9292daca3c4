"""The ``hook`` tool of ``veil mcp --project``: Claude Code's and Codex's hooks answered by
this warm process (:mod:`veil.clients.hook_service`).

Not for the model: the agents call it for their hooks (``"type": "mcp_tool"``, installed by
``veil install``) with the hook's payload as arguments. Its result is the hook's JSON output
(``{}``: no opinion). Every field is optional and loosely typed, because each agent fills the
arguments in its own way (objects as JSON text or as objects, a missing field as ``""``).
"""

from __future__ import annotations

import json
from typing import cast

from veil.clients.hook_service import HookService
from veil.server.mcp_protocol import JSONObject, Tool

FIELDS = (
    "client",
    "event",
    "hook_event_name",
    "session_id",
    "cwd",
    "transcript_path",
    "source",
    "prompt",
    "tool_name",
    "tool_input",
    "tool_response",
    "tool_use_id",
    "error",
    "is_interrupt",
    "trigger",
    "custom_instructions",
)
DESCRIPTION = (
    "Internal: Claude Code's and Codex's hooks call this (installed by `veil install`) to "
    "record attempts and check convergence. Never call it yourself: it does nothing useful "
    "for you and its arguments are filled in by the agent."
)


def hook_tool(service: HookService) -> Tool:
    def hook(arguments: JSONObject) -> JSONObject:
        answer = service.answer(arguments)
        return cast(JSONObject, json.loads(answer)) if answer else {}

    schema: JSONObject = {
        "type": "object",
        "properties": {name: {"description": f"the hook's {name}"} for name in FIELDS},
        "additionalProperties": True,
    }
    return Tool("hook", DESCRIPTION, schema, hook)
