"""Where a secret ends when a plugin's pattern only marks where it starts: a private key's
whole block (PEM, PuTTY, base64-wrapped PEM) and a JWT's three parts."""

from __future__ import annotations

import base64
import bisect
import re
from collections.abc import Callable, Iterator, Sequence

from .plugins import detect_secrets_patterns, jwt_is_valid
from .scan import TOKEN, Finder, Span
from .shapes import token_is_plausible

_PEM_BEGIN = re.compile(r"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?)-----")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_PEM_LINE = re.compile(
    r"(?:\r?\n|(?:\\r)?\\n)[ \t]*"
    r"(?:[A-Za-z0-9+/=]{4,}[ \t]*(?=\r?\n|(?:\\r)?\\n|\Z|[\"'<])|[A-Za-z0-9+/=]{16,}"
    r"|[A-Za-z][A-Za-z-]*: [^\n\\]*)"
)
"""One line of a key block: base64 filling the line, or a ``Proc-Type: …`` header (lines
end in newlines or, inside JSON strings, in ``\\n``). A line cut short by a truncation
marker or a closing quote still counts, so no fragment of the key is left behind."""
_PUTTY_END = re.compile(r"Private-MAC: [0-9a-fA-F]+")
_KEY_MATERIAL = re.compile(r"[A-Za-z0-9+/]{40}")
_PEM_SEARCH_LIMIT = 65_536


def _pem_extent(text: str, at: int, begins: list[int], ends: list[int]) -> tuple[Span, bool]:
    """The whole key block whose header starts near ``at``, and whether it holds key material.

    From ``-----BEGIN`` to the end of the next ``-----END …-----`` (``begins``/``ends``: where
    every BEGIN line of the text starts and every END line ends) unless another BEGIN comes
    first — then, as when the output was cut before an END line, through the last base64 or
    ``Name: value`` line that follows. A header mentioned in code or documentation, with no
    key material after it, is not a key (and never swallows the text up to a later block)."""
    begin = _PEM_BEGIN.search(text, max(0, at - 16), at + 64)
    if begin is not None:
        start = begin.start()
        i = bisect.bisect_left(ends, begin.end())
        j = bisect.bisect_right(begins, start)
        if (
            i < len(ends)
            and ends[i] - begin.end() <= _PEM_SEARCH_LIMIT
            and (j == len(begins) or begins[j] > ends[i])
        ):
            end = ends[i]
        else:
            end = _line_run(text, begin.end())
    else:  # PuTTY: from the marker's line to the Private-MAC line
        start = at
        mac = _PUTTY_END.search(text, at, at + _PEM_SEARCH_LIMIT)
        end = mac.end() if mac is not None else _line_run(text, text.find("\n", at) + 1 or at)
    return (start, end), _KEY_MATERIAL.search(text, start, end) is not None


def _line_run(text: str, at: int) -> int:
    """The end of the run of base64 or header lines starting after ``at``."""
    end = at
    while (m := _PEM_LINE.match(text, end)) is not None:
        end = m.end()
    return end


def pem_finder(patterns: Callable[[], Sequence[re.Pattern[str]]]) -> Finder:
    """Blocks whose header one of ``patterns`` matches. Headers inside a block already looked
    at are skipped, so a text of many headers costs one look per block, not per header."""

    def find(text: str) -> Iterator[Span]:
        markers = sorted({m.start() for p in patterns() for m in p.finditer(text)})
        if not markers:
            return
        begins = [m.start() for m in _PEM_BEGIN.finditer(text)]
        ends = [m.end() for m in _PEM_END.finditer(text)]
        covered = -1
        for at in markers:
            if at < covered:
                continue
            span, is_key = _pem_extent(text, at, begins, ends)
            covered = span[1]
            if is_key:
                yield span

    return find


_B64_PEM = re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]*=*")


def base64_pem(text: str) -> Iterator[Span]:
    """A PEM private key that was base64-encoded whole (kubeconfig ``client-key-data``,
    Kubernetes secrets): the run decodes to ``-----BEGIN … PRIVATE KEY``."""
    for m in _B64_PEM.finditer(text):
        head = m.group(0)[:64]
        try:
            decoded = base64.b64decode(head[: len(head) // 4 * 4])
        except ValueError:
            continue
        if b"PRIVATE KEY" in decoded and len(m.group(0)) >= 100:
            yield m.span()


_JWT_EXTENT = re.compile(
    r"[A-Za-z0-9_-]+=*\.[A-Za-z0-9_-]+=*(?:\.(?:[A-Za-z0-9_+/]|-(?!----))+=*)?"
)
"""A JWT: header, payload, optional signature (base64url; ``+/`` tolerated) — which never
runs into a following ``-----BEGIN`` line."""


def jwt_finder(text: str) -> Iterator[Span]:
    """detect-secrets' JWT pattern marks where a token starts; its span here is the whole
    ``header.payload.signature`` (the plugin's pattern can stop before the signature), kept
    only if detect-secrets' own check decodes header and payload as JSON."""
    for pattern in detect_secrets_patterns("jwt", "JwtTokenDetector"):
        for m in pattern.finditer(text):
            if m.start() > 0 and text[m.start() - 1] in TOKEN:
                continue
            extent = _JWT_EXTENT.match(text, m.start())
            if extent is None:
                continue
            token = extent.group(0)
            if jwt_is_valid(token) and token_is_plausible(token):
                yield extent.span()
