"""The published OpenAPI document (``/openapi.json``), committed as ``docs/openapi.json``.

Regenerate after changing the API: ``python -m veil.server.openapi > docs/openapi.json``
(tests/server/test_openapi.py fails while the committed copy differs from the served one).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from veil.embed.hashing import HashEmbedder
from veil.memory import Memory
from veil.server.app import create_app
from veil.server.keys import KeyRing


def openapi_document() -> dict[str, Any]:
    """The schema of :func:`~veil.server.app.create_app` (built over a throwaway store; the
    schema does not depend on the store or the model)."""
    with Memory(":memory:", embedder=HashEmbedder()) as memory:
        return create_app(memory, KeyRing(memory.store)).openapi()


def render(document: dict[str, Any]) -> str:
    """Stable text: sorted keys, two-space indent, trailing newline."""
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render(openapi_document()))
