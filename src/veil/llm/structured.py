"""Asking for schema-shaped JSON where an API cannot enforce it.

OpenAI-compatible servers get the schema as ``response_format`` (constrained decoding where
supported). Anthropic's API and unknown providers get this instruction in the system prompt
instead; the memory layer parses replies tolerantly either way.
"""

from __future__ import annotations

import json
from typing import Any


def json_instruction(json_schema: dict[str, Any]) -> str:
    """The system-prompt paragraph that asks for one JSON object matching ``json_schema``."""
    return (
        "Reply with a single JSON object and nothing else (no prose, no code fence) that "
        f"matches this JSON schema: {json.dumps(json_schema)}"
    )


def with_json_instruction(system: str, json_schema: dict[str, Any] | None) -> str:
    """``system`` with the instruction appended (unchanged when there is no schema)."""
    if json_schema is None:
        return system
    return f"{system}\n\n{json_instruction(json_schema)}".strip()
