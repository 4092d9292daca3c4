"""What redaction reports: the kinds of secret, one finding, a redacted text, a redacted JSON value.

A finding locates a secret (offsets into the *original* text) and names its kind and the rule
that found it; it never holds the secret, so findings can be logged, stored and shown. The
placeholder that replaces a secret is built here, in one place, so every entry point writes the
same shape: ``[secret:KIND …LAST4]`` — or ``[secret:KIND]`` for a private-key block and for a
secret too short for four characters to be safe to show (see :func:`placeholder`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias, get_args

BuiltinKind = Literal[
    "aws-access-key",
    "aws-secret-key",
    "github-token",
    "gitlab-token",
    "openai-key",
    "anthropic-key",
    "google-api-key",
    "google-oauth-token",
    "slack-token",
    "slack-webhook",
    "stripe-key",
    "jwt",
    "private-key",
    "azure-storage-key",
    "pypi-token",
    "npm-token",
    "huggingface-token",
    "sendgrid-key",
    "square-token",
    "url-password",
    "bearer-token",
    "cli-secret",
    "env-assignment",
]
"""The kinds the built-in rules report. A user pattern names its own kebab-case kind."""

BUILTIN_KINDS: tuple[BuiltinKind, ...] = get_args(BuiltinKind)

KIND_SHAPE = r"[a-z0-9]+(?:-[a-z0-9]+)*"
"""A kind is short kebab-case: it is written into placeholders and must never look like a secret."""

MIN_LAST4_LENGTH = 12
"""Below this length the last four characters are a third of the secret or more: not shown."""

PLACEHOLDER = r"\[secret:[a-z0-9]+(?:-[a-z0-9]+)*(?: …[^\]\s\[]{1,4})?\]"
"""Any placeholder this module writes. Text inside one is never redacted again (idempotence)."""

_UNSAFE_IN_LAST4 = frozenset("[] \t\n\r\f\v")


@functools.cache
def placeholder_pattern() -> re.Pattern[str]:
    """:data:`PLACEHOLDER`, compiled on first use (importing this package compiles nothing)."""
    return re.compile(PLACEHOLDER)


def placeholder(kind: str, secret: str, *, last4: bool = True) -> str:
    """The text that replaces ``secret``: ``[secret:KIND …LAST4]``.

    LAST4 is left out when ``last4`` is false (private-key blocks) or the secret is shorter
    than :data:`MIN_LAST4_LENGTH`. Brackets and whitespace in the last four are written as
    ``?`` so that a placeholder always matches :data:`PLACEHOLDER` and is never redacted again.
    """
    if not last4 or len(secret) < MIN_LAST4_LENGTH:
        return f"[secret:{kind}]"
    last = "".join("?" if c in _UNSAFE_IN_LAST4 or c.isspace() else c for c in secret[-4:])
    return f"[secret:{kind} …{last}]"


JSONPath: TypeAlias = tuple[str | int, ...]


@dataclass(frozen=True)
class Finding:
    """One secret found and replaced.

    ``start``/``end`` are offsets into the original string (``text[start:end]`` was the
    secret); ``path`` is where that string sits inside a JSON value (empty for plain text).
    ``kind`` is a :data:`BuiltinKind` or a user pattern's kind; ``rule`` names the rule that
    found it (``detect-secrets:<Plugin>`` for a detect-secrets pattern, ``veil:<name>`` for
    Veil's own, ``user:<n>`` for the n-th extra pattern) so a false positive can be traced.
    """

    kind: str
    rule: str
    start: int
    end: int
    path: JSONPath = ()


@dataclass(frozen=True)
class Redacted:
    """A text with every secret found replaced by its placeholder, and what was replaced."""

    text: str
    findings: tuple[Finding, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether anything was replaced (``text`` is the input itself when not)."""
        return bool(self.findings)


JSONValue: TypeAlias = (
    Mapping[str, "JSONValue"] | Sequence["JSONValue"] | str | int | float | bool | None
)
"""A JSON-like value: mappings with string keys, sequences, strings, numbers, booleans, None."""

JSONOut: TypeAlias = dict[str, "JSONOut"] | list["JSONOut"] | str | int | float | bool | None
"""What :meth:`Redactor.redact_json` returns: the same shape with dicts and lists."""


@dataclass(frozen=True)
class RedactedJSON:
    """A JSON-like value with every string value redacted; each finding carries its ``path``."""

    value: JSONOut
    findings: tuple[Finding, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.findings)
