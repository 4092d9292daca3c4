"""Secret redaction: what Veil runs on every text before it is written to the tape.

``Redactor(config).redact(text)`` returns the text with every secret — cloud and API keys,
tokens, JWTs, private-key blocks, passwords in URLs, secret-named assignments — replaced by
``[secret:KIND …LAST4]``, and the findings (kind, rule, offsets; never the secret). It is
idempotent and deterministic; ``redact_json`` does the same for every string of a JSON value.

This package imports nothing else from Veil (it sits at the bottom of the layer graph) and
nothing heavy at import time: the rules compile on first use, and detect-secrets, whose
plugins supply most token patterns, is imported only when a text passes one of their cheap
gates (see :mod:`veil.redaction.rules`).
"""

from __future__ import annotations

from .config import RedactionConfig
from .findings import (
    BUILTIN_KINDS,
    BuiltinKind,
    Finding,
    JSONOut,
    JSONValue,
    Redacted,
    RedactedJSON,
    placeholder,
)
from .redactor import Redactor, redact

__all__ = [
    "BUILTIN_KINDS",
    "BuiltinKind",
    "Finding",
    "JSONOut",
    "JSONValue",
    "Redacted",
    "RedactedJSON",
    "RedactionConfig",
    "Redactor",
    "placeholder",
    "redact",
]
