"""Decoding a model's tool-call arguments without ever failing the turn.

Models sometimes emit arguments that are not JSON (truncated output, a stray quote). Raising here
would end the run; instead the text is kept as ``{"_raw": text}`` — the shape the agent loop's
argument validation recognises — so the model is told its arguments were invalid and can retry.
"""

from __future__ import annotations

import json
from typing import Any, cast


def decode_arguments(text: str) -> dict[str, Any]:
    """A tool call's JSON arguments; ``{}`` for empty text, ``{"_raw": text}`` unless an object."""
    if not text.strip():
        return {}
    try:
        value: object = json.loads(text)
    except json.JSONDecodeError:
        return {"_raw": text}
    if not isinstance(value, dict):
        return {"_raw": text}
    return {str(k): v for k, v in cast(dict[object, Any], value).items()}
