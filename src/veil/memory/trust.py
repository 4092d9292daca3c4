"""Trust from provenance: the weakest link caps it. Pure.

A fact's trust is the lowest authority in its chain — the author of the evidence and the
authors of every event it was derived from — and a claim that is not first-hand ("my event,
quoting their text") is capped at third-party level.
"""

from __future__ import annotations

from collections.abc import Iterable

from veil.memory.entities import USER
from veil.memory.model import AUTHORITY, Author, Disclosure

THIRD_PARTY_TRUST = 0


def effective_authority(author: Author, chain: Iterable[Author]) -> int:
    return min([AUTHORITY[author], *(AUTHORITY[a] for a in chain)])


def disclosure_of(author: Author, claimant: str) -> Disclosure:
    if claimant.strip().casefold() != USER:
        return "reported"
    if author == "assistant":
        return "inferred"
    return "first_hand"


def trust_of(author: Author, chain: Iterable[Author], disclosure: Disclosure) -> int:
    base = effective_authority(author, chain)
    if disclosure in ("quoted", "reported"):
        return THIRD_PARTY_TRUST
    return base


def is_third_party_claim(
    *, subject_key: str, relation: str, author: Author, chain: Iterable[Author], claimant: str
) -> bool:
    """Quarantine rule: not asserted first-hand by the evidence's author, or about the user on
    the word of a tool or third party (anywhere in the chain), or labelled a claim."""
    if relation == "third_party_claim" or claimant.strip().casefold() != USER:
        return True
    if subject_key == USER:
        origins = {author, *chain}
        return bool(origins & {"tool", "third_party"})
    return False
