"""Is this value a secret, or does it only stand where one would?

The vendor rules match token shapes with a fixed prefix, so they only need to reject the
documentation stand-ins (``AKIAIOSFODNN7EXAMPLE``, ``ghp_xxxx…``, ``sk-…REDACTED``). The
context rules — a secret-named assignment, a URL's password, an ``Authorization`` header —
match whatever value sits there, so most of what they see in real tool outputs is code
(``password=password``, ``token = self._token``, ``private_key: Ed25519PrivateKey``), a
template (``${API_KEY}``, ``<your-key>``, ``%(password)s``), a mask (``***``), a fixture word
(``changeme``, ``password123``), a name (``cache_write_5m``), a path, a version or a number.
:func:`looks_secret` accepts a value only when it looks generated: long enough, none of those
shapes, and mixing character classes the way random strings do (a digit among letters, or
upper and lower case in similar measure). Everything here is a pure function of the string,
so redaction is deterministic.

The name test (:func:`is_identifier`) was tuned on the 167,000 identifiers of eight or more
characters in the installed site-packages and on random strings: it recognises 84% of those
identifiers and takes 0.2% of random base62 or base64 strings of 16 characters (0.01% of
24) for names. All filters together let through about 99.5% of random base62/base64 values
of 16 characters and 99.9% of 24 in a secret-named assignment.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


MIN_VALUE_LENGTH = 8
"""A context-matched value shorter than this is not redacted (too short to be a generated key)."""

_TEMPLATE = re.compile(
    r"\$\{|\$\(|\{\{|\}\}|%\(|%[sd]\b|<[^<>]*>|^\$[A-Za-z_]|^%[A-Za-z_]+%$|^\{[A-Za-z_]\w*\}$"
)
_MASK = re.compile(r"\*{2,}|x{4,}|X{4,}|\.{3}|…|_{4,}|-{4,}|#{3,}|•")
_STAND_IN = re.compile(
    r"example|changeme|change_me|change-me|placeholder|redacted|dummy|your[_-]?(?:own[_-]?)?"
    r"(?:api|secret|token|key|pass|access|app|client|private|aws|github|openai)|deadbeef|"
    r"notasecret|not[_-]a[_-]secret|insert[_-]|replace[_-]?me|fake|sample|mock|passw|secret",
    re.IGNORECASE,
)
_FIXTURE_WORDS = frozenset(
    [
        "password",
        "passwd",
        "pass",
        "passw",
        "pwd",
        "secret",
        "secrets",
        "token",
        "apikey",
        "key",
        "test",
        "tests",
        "testing",
        "tester",
        "admin",
        "root",
        "user",
        "username",
        "guest",
        "demo",
        "foo",
        "bar",
        "baz",
        "foobar",
        "qwerty",
        "letmein",
        "welcome",
        "hunter",
        "abc",
        "abcd",
        "abcdef",
        "supersecret",
        "topsecret",
        "verysecret",
        "secretkey",
        "default",
        "none",
        "null",
        "undefined",
        "true",
        "false",
        "empty",
        "value",
        "string",
        "str",
        "bytes",
        "todo",
        "tbd",
        "unset",
    ]
)
"""Words that, digits and punctuation aside, make a whole test value (``password123``,
``Secret!``, ``MYTOKEN1``, ``test_key_2``) — also after a ``my``/``your``/``some``/``test``."""
_FIXTURE_PREFIXES = ("my", "your", "some", "test", "the", "a")
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{8,}={0,2}")
_SEQUENCES = ("0123456", "1234567", "abcdefg", "ABCDEFG", "qwertyu")
_DIGITS_ONLY = re.compile(r"[0-9]+")
_VERSION = re.compile(r"v?\d+(?:\.\d+)+(?:[-+.]?[A-Za-z0-9]+)*")
_WORDS_LOWER = re.compile(r"[a-z][a-z_.\-]*")
_WORDS_UPPER = re.compile(r"[A-Z][A-Z_.\-]*")
_WORDISH = r"[A-Za-z_-]+[0-9]*"
"""A name-like segment: letters, ``_`` and ``-``, digits at most at the end (``api_v2``). A
generated string has digits in the middle of its letters almost always."""
_DOTTED_NAME = re.compile(rf"{_WORDISH}(?:\.{_WORDISH})+")
_MODULE_PATH = re.compile(r"[a-z_][a-z0-9_]+(?:\.[a-z_][a-z0-9_]*)*\.[A-Za-z_][A-Za-z0-9_]*")
"""``module.attr``, ``rust_openssl.hpke.MLKEM768X25519PrivateKey``: a reference in code."""
_NAME_CHARS = re.compile(r"[A-Za-z0-9_.\-|:]+")
_NAME_SEPARATORS = re.compile(r"[_.\-|:]+")
_NAME_PART = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_VOWELS = frozenset("aeiouyAEIOUY")
_PATH_SEGMENT = re.compile(r"(?:[A-Za-z]:)?[A-Za-z_.~-]*[0-9]*(?:[._-][A-Za-z0-9]+)*")
"""A path segment: a name, digits at most at its end or between separators (``id_rsa_2048.pem``,
``2023-10-01.log``). A base64 secret may contain ``/``, but its segments mix digits into
letters, so it is not taken for a path."""
_FILE_NAME = re.compile(rf"{_WORDISH}\.[A-Za-z][A-Za-z0-9]{{0,4}}")
_PATH_START = re.compile(r"/|\./|\.\./|~/|[A-Za-z]:\\")
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,4}$")
_EMAIL = re.compile(r"[^@\s]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_HEX = re.compile(r"[0-9a-fA-F]+")
_CODE_PUNCTUATION = frozenset("()[]{}<>$;,\\`|")
"""In a bare value these mean code (``get(…)``, ``x[0]``, ``$VAR``); inside quotes, where
generated secrets may hold them (Django's keys use ``$()&*``), only the brackets count."""
_QUOTED_CODE_PUNCTUATION = frozenset("[]{}<>`")


def entropy(value: str) -> float:
    """Shannon entropy of ``value``'s own character distribution, in bits per character."""
    n = len(value)
    if not n:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def is_stand_in(value: str) -> bool:
    """A documentation or test stand-in: a template, a mask, a stand-in word (also
    %-escaped, or inside base64 of text: ``bm90IG15IHJlYWwgcGFzc3dvcmQ=``), a fixture word
    (``password123``), an alphabet or digit run, or too few distinct characters."""
    if value.startswith("[secret:") or _TEMPLATE.search(value) or _MASK.search(value):
        return True
    unescaped = _PERCENT_ESCAPE.sub("", value)  # ``pass%40word`` reads ``password``
    if _STAND_IN.search(unescaped) or any(s in value for s in _SEQUENCES):
        return True
    if _fixture_words_only(value) or len(set(value)) < min(6, max(3, len(value) // 3)):
        return True
    decoded = _base64_text(value)  # ``dXNlcjpwYXNz`` is ``user:pass``
    return decoded is not None and (bool(_STAND_IN.search(decoded)) or _fixture_words_only(decoded))


def _fixture_words_only(value: str) -> bool:
    """``password123``, ``MYTOKEN1``, ``test_key_2``, ``user:pass``: nothing but fixture words
    (each alone, or all run together), digits and punctuation."""
    lowered = value.lower()
    letters = re.sub(r"[^a-z]", "", lowered)
    if not letters:
        return len(set(value)) < 4
    words = [*re.findall(r"[a-z]+", lowered), letters]
    return all(_is_fixture_word(w) for w in words[:-1]) or _is_fixture_word(letters)


def _is_fixture_word(word: str) -> bool:
    return any(
        word.startswith(prefix) and word[len(prefix) :] in _FIXTURE_WORDS
        for prefix in ("", *_FIXTURE_PREFIXES)
    )


def _base64_text(value: str) -> str | None:
    """``value`` decoded, when it is base64 of printable ASCII (else ``None``)."""
    if len(value) % 4 or not _BASE64.fullmatch(value):
        return None
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw.decode() if raw and all(32 <= b < 127 for b in raw) else None


def token_is_plausible(token: str) -> bool:
    """For a vendor-shaped token (fixed prefix and length): anything but a stand-in."""
    return not is_stand_in(token)


def is_path(value: str) -> bool:
    """``/etc/ssl/server.key``, ``./certs/a.pem``, ``C:\\keys\\x``, ``app_credentials.json``:
    a rooted path or one ending in a file extension, made of name-like segments."""
    if "/" not in value and "\\" not in value:
        return bool(_FILE_NAME.fullmatch(value))
    if not _PATH_START.match(value) and not _EXTENSION.search(value):
        return False
    return all(_PATH_SEGMENT.fullmatch(seg) for seg in re.split(r"[/\\]", value))


def is_identifier(value: str, *, share: float = 0.8) -> bool:
    """A name from code rather than a generated string: ``HostedMCPApprovalKey``,
    ``cache_write_5m_mtok``, ``trusted_s3_mount_credentials``, ``module.attr``.

    At least ``share`` (80%) of its letters and digits must be in words of three or more
    letters that read like words (a vowel after the first letter), and a value in one case
    needs two parts joined by ``_ . - | :`` (random lowercase strings are otherwise taken
    for names too often)."""
    if _MODULE_PATH.fullmatch(value):
        return True
    if not _NAME_CHARS.fullmatch(value):
        return False
    mixed = any(c.islower() for c in value) and any(c.isupper() for c in value)
    if not mixed and len([p for p in _NAME_SEPARATORS.split(value) if p]) < 2:
        return False
    parts = _NAME_PART.findall(value)
    total = sum(len(p) for p in parts)
    named = sum(len(p) for p in parts if _reads_like_a_word(p, single_case=not mixed))
    return total > 0 and named >= share * total


def _reads_like_a_word(part: str, *, single_case: bool) -> bool:
    """``Approval``, ``mtok``, ``ACCEPTABLE`` (in a value all in capitals). Runs of capitals
    amid mixed case do not count: random base62 has too many of them."""
    if len(part) < 3 or not part.isalpha():
        return False
    return (part[1:].islower() or single_case) and any(c in _VOWELS for c in part[1:])


def looks_secret(value: str, *, min_length: int = MIN_VALUE_LENGTH, quoted: bool = False) -> bool:
    """Whether a value found in a secret's place (assignment, URL password, auth header) is
    one, rather than code, a template, a name, a path, a version, a number or a stand-in.

    A value is accepted when it is long enough, is none of those shapes, and either mixes a
    digit with letters or symbols (``Xk9…``, hex digests used as keys, ``s3cr3t-2024!``) or,
    with no digit, has 12 characters or more with upper and lower case in similar measure, as
    random base64/base62 has (camelCase identifiers and CONSTANT_NAMES do not). ``quoted``: the
    value was a string literal, so punctuation in it is content, not code.
    """
    n = len(value)
    if n < min_length or is_stand_in(value):
        return False
    if any(c in (_QUOTED_CODE_PUNCTUATION if quoted else _CODE_PUNCTUATION) for c in value):
        return False
    if (
        _DIGITS_ONLY.fullmatch(value)
        or _VERSION.fullmatch(value)
        or _WORDS_LOWER.fullmatch(value)
        or _WORDS_UPPER.fullmatch(value)
        or _DOTTED_NAME.fullmatch(value)
        or is_path(value)
        or _EMAIL.fullmatch(value)
        or "://" in value
        or value.startswith("#")
        or is_identifier(value)
    ):
        return False
    has_digit = any(c.isdigit() for c in value)
    if not has_digit and is_identifier(value, share=0.6):
        return False
    letters = [c for c in value if c.isalpha()]
    if has_digit:
        if not letters and not any(c in "+/=_-.!@#^&*~:" for c in value):
            return False
        # A hex digest is a secret only in a secret's place, which is where this is called.
        return bool(_HEX.fullmatch(value)) or entropy(value) >= 2.5
    if n < 12 or not letters:
        return False
    upper = sum(c.isupper() for c in letters) / len(letters)
    return 0.25 <= upper <= 0.75 and entropy(value) >= 3.0


_SECRET_LAST_WORDS = frozenset(
    [
        "key",
        "secret",
        "token",
        "password",
        "passwd",
        "pwd",
        "pass",
        "passphrase",
        "credential",
        "credentials",
        "auth",
        "apikey",
        "secretkey",
        "accesskey",
        "privatekey",
        "authtoken",
        "accesstoken",
        "signature",
    ]
)
_NEEDS_A_QUALIFIER = frozenset({"key", "pass", "auth", "signature"})
"""Last words that alone name too many non-secrets (``key=``, ``pass``, ``Signature:``): they
count only after a qualifier (``api_key``, ``db_pass``, ``X-Amz-Signature``) not in the list
below — except a bare ``auth``, which Docker's ``config.json`` uses for its credentials."""
_NOT_SECRET_QUALIFIERS = _words(
    # keys that are names or indexes, not credentials
    """primary foreign sort cache partition idempotency lookup dict hash group index row map hot
    shortcut keyboard composite unique natural surrogate object cursor state field column table
    item entry search query result sorting order attr attribute meta config setting settings
    env label name id s3 bucket file path type data context translation message i18n cli by no
    has is use with price"""
    # tokens that are parser or pagination tokens
    """ pad bos eos unk sep cls mask special page next prev previous continuation start end
    first last current cancel cancellation sync max min num n lexer parser split word sentence
    """
)
_PUBLIC = frozenset({"public", "pub"})
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def name_words(name: str) -> list[str]:
    """``AWS_SECRET_ACCESS_KEY`` → aws, secret, access, key; ``apiKey`` → api, key."""
    return [w.lower() for w in _NAME_WORDS.findall(name)]


def is_secret_name(name: str) -> bool:
    """Whether a variable, option or JSON key names a secret: its last word is one of
    :data:`_SECRET_LAST_WORDS` (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD``, …), and
    for ``key``/``pass``/``auth``/``signature`` a qualifier precedes it that does not make it
    a name or an index (``cache_key``, ``primary_key``, ``sort_key`` are not secrets). A
    qualifier from :data:`_NOT_SECRET_QUALIFIERS` also excludes ``token`` (``pad_token``,
    ``next_page_token``); a ``public`` anywhere in the name excludes it (``publicKeyToken``).
    """
    words = name_words(name)
    if not words or words[-1] not in _SECRET_LAST_WORDS or _PUBLIC.intersection(words):
        return False
    last = words[-1]
    before = words[-2] if len(words) > 1 else None
    if last in _NEEDS_A_QUALIFIER:
        if before is None:
            return last == "auth"
        return before not in _NOT_SECRET_QUALIFIERS
    if last == "token" and before in _NOT_SECRET_QUALIFIERS:
        return False
    return not (last == "secret" and before in {"is", "has", "no", "use", "with"})
