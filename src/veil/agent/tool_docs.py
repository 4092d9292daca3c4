"""docs/tools.md's tool sections, rendered from the code: the coding tools
(:func:`veil.agent.tools.coding_tools`) and the memory tools (the catalogue's agent verbs,
:mod:`veil.agent.memory_tools`), each with its description and JSON schema.

``python -m veil.agent.tool_docs`` prints the sections; tests/agent/test_memory_tools.py fails
while docs/tools.md holds anything else between ``## Coding tools`` and ``## Behaviour notes``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from veil.agent.memory_tools import PREFIX
from veil.agent.tool import Tool
from veil.agent.tools import coding_tools
from veil.verbs import offered


def _section(name: str, description: str, schema: dict[str, Any], *, asks: bool) -> str:
    title = f"### `{name}`" + (" (asks permission)" if asks else "")
    body = json.dumps(schema, indent=1, ensure_ascii=False)
    return f"{title}\n\n{description}\n\n```json\n{body}\n```\n"


def render() -> str:
    """The text from ``## Coding tools`` up to (not including) ``## Behaviour notes``."""
    coding: list[Tool] = list(coding_tools())
    parts = ["## Coding tools\n"]
    parts += [
        _section(t.spec.name, t.spec.description, t.spec.parameters, asks=t.mutates) for t in coding
    ]
    parts.append("## Memory tools\n")
    parts += [
        _section(PREFIX + v.name, v.description, v.schema, asks=False) for v in offered("agent")
    ]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
