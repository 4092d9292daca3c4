"""Secret-named assignments: ``NAME=value`` and its YAML, JSON, TOML, shell and code forms.

Found from the name's end: every secret word is searched with ``str.find`` in the lower-cased
text, the assignment sign must follow the word, the whole name must be a secret name and the
value must look generated (:mod:`veil.redaction.shapes`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .scan import Span
from .shapes import is_secret_name, looks_secret

_SECRET_WORDS = ("key", "secret", "token", "pass", "pwd", "credential", "auth", "signature")
"""Where a secret-named assignment can end: every name :func:`shapes.is_secret_name` accepts
ends in a word that starts with one of these (``pass`` covers password, passwd, passphrase)."""
_REST_OF_NAME = re.compile(r"[a-z]{0,24}(?=[\"'\]]{0,2}[ \t]*(?::=|=>|=(?!=)|:(?![:/\\=])))")
"""The rest of the secret word (``pass`` → ``password``), capped so that a long run of letters
full of ``key``s costs a bounded look per hit."""
_MAX_NAME = 200
_ANNOTATED = re.compile(r"[ \t]*(?:=(?!=)|\||\)|,)")
"""After a bare value, code: ``name: Type = …``, ``name: A | B``, ``f(x: Type, y)``,
``call(token=tok)`` (a literal secret in code is quoted)."""
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_VALUE = re.compile(
    r"[\"'\]]{0,2}[ \t]*(?::=|=>|=|:)[ \t]*"
    r"(?:\\?(?P<q>[\"'`])(?P<quoted>[^\s\"'`\\]++)\\?(?P=q)|(?P<bare>[^\s\"'`,;&\\]++))"
)
"""The sign, then a quoted value (its quotes may be JSON-escaped: ``TOKEN=\\"…\\"``) or a bare
one, which ends at whitespace, a quote, ``,;&`` or a backslash (``\\n`` in an escaped file).
Possessive, so a value that does not end as expected is given up at once."""


def _name_ends(text: str) -> Iterator[int]:
    """Offsets where a name containing a secret word ends right before an assignment sign.
    Found with ``str.find`` on the lower-cased text (much faster than a case-insensitive
    regex); when lower-casing changes the length (a few non-ASCII letters do), offsets would
    not line up, so the text is then searched case-insensitively instead."""
    lowered = text.lower()
    if len(lowered) != len(text):
        rest = re.compile(_REST_OF_NAME.pattern, re.IGNORECASE)
        lowered = text
    else:
        rest = _REST_OF_NAME
    seen: set[int] = set()
    for word in _SECRET_WORDS:
        at = lowered.find(word)
        while at >= 0:
            m = rest.match(lowered, at + len(word))
            if m is not None and m.end() not in seen:
                seen.add(m.end())
                yield m.end()
            at = lowered.find(word, at + 1)


def assignments(text: str) -> Iterator[Span]:
    """``NAME=value``, ``export NAME=value``, ``name: value`` (YAML), ``"name": "value"``
    (JSON), ``name = "value"`` (TOML, Python), ``name => 'value'``, ``--name=value``: where
    the name ends in a secret word (:func:`shapes.is_secret_name`) and the value looks
    generated (:func:`shapes.looks_secret`). Only the value is replaced."""
    consumed = -1
    for end in sorted(_name_ends(text)):
        if end < consumed:  # inside the previous value: ``token=token=…`` is one value
            continue
        start = end
        while start > 0 and end - start < _MAX_NAME and text[start - 1] in _NAME_CHARS:
            start -= 1
        if not is_secret_name(text[start:end]):
            continue
        value = _VALUE.match(text, end)
        if value is None:
            continue
        consumed = value.end()
        group = "quoted" if value.group("quoted") is not None else "bare"
        if group == "bare" and _ANNOTATED.match(text, value.end()):
            continue
        secret = value.group(group)
        if looks_secret(secret, quoted=group == "quoted"):
            yield value.span(group)
