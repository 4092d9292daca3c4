"""What a recall query asks about, decided from its words alone (pure, no store, no model).

:func:`relations_asked` names the registered relations a query's words point at: a word of the
query matches a relation when, after a crude suffix-stripping stem, it equals a word of the
relation's name or of its description ("where do I *live*" → ``located_at``, described as
"where the subject lives or is based now"; "my *partner*" → ``partner_of``). Question words
and the generic words every description shares ("subject", "current") never match.

Recall uses it to read an entity's facts of those relations first, and to keep the user's
facts out of a query that only mentions the user in passing ("tell *me* about Ada").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from veil.memory.config import Relation

_GENERIC_WORDS = (
    "a an and any are as at be been being by current did do does for from has have "
    "is it its must now of on or that the their them they this to was what when "
    "where which who whom whose why with subject subjects something always proved "
    "procedural asserts quarantined party third dated"
)
_GENERIC = frozenset(_GENERIC_WORDS.split())


def stem(word: str) -> str:
    """A crude English stem: ``lives``/``living``/``lived`` → ``liv``-ish forms that agree."""
    w = word.lower()
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    if w.endswith("s") and not w.endswith("ss") and len(w) > 3:
        w = w[:-1]
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def words(text: str) -> set[str]:
    """The stems of ``text``'s content words (generic and question words dropped)."""
    return {
        stem(w)
        for w in re.findall(r"[a-z]+", text.lower().replace("_", " "))
        if w not in _GENERIC and len(w) > 1
    }


def relation_words(relation: Relation) -> set[str]:
    return words(relation.name) | words(relation.description)


def relations_asked(query: str, relations: Mapping[str, Relation]) -> tuple[str, ...]:
    """Names of the relations in ``relations`` that ``query``'s words point at, sorted."""
    asked = words(query)
    if not asked:
        return ()
    return tuple(sorted(name for name, r in relations.items() if asked & relation_words(r)))
