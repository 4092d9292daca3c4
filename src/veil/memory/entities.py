"""Entity resolution: one key per entity however it is written.

"Acme", "ACME Corp." and "acme" share the key ``acme``; "Alice's" resolves like "Alice"; the
user's own names and first-person words resolve to ``user``. Pure functions over strings.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping

USER = "user"
_FIRST_PERSON = {"user", "the user", "i", "me", "myself", "my", "mine", "we", "us", "our"}
_CORPORATE = {
    "corp",
    "corporation",
    "inc",
    "incorporated",
    "ltd",
    "limited",
    "llc",
    "co",
    "company",
    "gmbh",
    "plc",
    "sa",
    "ag",
}
_ARTICLES = {"the", "a", "an"}
_POSSESSIVE = re.compile(r"(?:'s|’s|'|’)$")


def normalise(text: str) -> str:
    """Case, width, accents, whitespace and punctuation folded; articles and possessives gone."""
    folded = unicodedata.normalize("NFKC", text).casefold().strip()
    words: list[str] = []
    for raw in folded.split():
        word = _POSSESSIVE.sub("", raw) if len(raw) > 2 else raw
        word = re.sub(r"[^\w+#./-]", "", word).strip("./-")
        if word:
            words.append(word)
    while words and words[0] in _ARTICLES:
        words.pop(0)
    return " ".join(words)


def entity_key(
    name: str, *, aliases: Mapping[str, str] | None = None, user_names: Iterable[str] = ()
) -> str:
    """The canonical key of an entity name (``user`` for the memory's owner)."""
    key = normalise(name)
    if key in _FIRST_PERSON:
        return USER
    users = {normalise(n) for n in user_names}
    if key in users:
        return USER
    if aliases:
        folded = {normalise(a): normalise(c) for a, c in aliases.items()}
        key = folded.get(key, key)
        if key in users:
            return USER
    words = key.split()
    while len(words) > 1 and words[-1] in _CORPORATE:
        words.pop()
    return " ".join(words) or key


def value_key(value: str) -> str:
    """Comparison key of a fact's object: "Emacs", "emacs." and "the Emacs" are one value."""
    return normalise(value)


def candidate_mentions(text: str, max_words: int = 3) -> set[str]:
    """Normalised word n-grams of ``text`` (n ≤ ``max_words``) that could name an entity."""
    words = normalise(text).split()
    out: set[str] = set()
    for n in range(1, max_words + 1):
        for i in range(len(words) - n + 1):
            out.add(" ".join(words[i : i + n]))
    return out
