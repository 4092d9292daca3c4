"""Long-term memory never turns a secret into a fact.

The evidence is redacted before the extraction model sees it (:func:`redacted_evidence`), so a
key the person pasted reaches neither the model nor the tape. What the model returns is checked
again (:func:`refuse_secrets`): a fact or an episode that holds a secret — one the model made up
or copied from elsewhere — or a redaction placeholder (a fact *about* a secret is no use to
anyone, and would carry its last characters into every briefing) is not stored; it is
reported in ``WriteReport.invalid`` with the kind of secret, and its evidence stays on the
tape as always.
"""

from __future__ import annotations

from collections.abc import Sequence

from veil.memory.extraction import EpisodeItem, FactItem
from veil.memory.model import Author, InvalidItem
from veil.redaction import Redactor
from veil.redaction.findings import placeholder_pattern


def redacted_evidence(
    roles: Sequence[tuple[Author, str]], redactor: Redactor
) -> tuple[tuple[Author, str], ...]:
    """Each (author, text) of the evidence with its secrets replaced."""
    return tuple((role, redactor.redact(text).text) for role, text in roles)


def secret_in(texts: Sequence[str], redactor: Redactor) -> str | None:
    """The kind of the first secret (or placeholder of one) ``texts`` hold, else None."""
    pattern = placeholder_pattern()
    for text in texts:
        if not text:
            continue
        found = pattern.search(text)
        if found:
            return found.group(0)[len("[secret:") :].split(" ", 1)[0].rstrip("]")
        findings = redactor.redact(text).findings
        if findings:
            return findings[0].kind
    return None


def refuse_secrets(
    facts: Sequence[FactItem], episodes: Sequence[EpisodeItem], redactor: Redactor
) -> tuple[list[FactItem], list[EpisodeItem], list[InvalidItem]]:
    """The facts and episodes that hold no secret, and the others as invalid items."""
    kept_facts: list[FactItem] = []
    kept_episodes: list[EpisodeItem] = []
    invalid: list[InvalidItem] = []
    for fact in facts:
        kind = secret_in((fact.subject, fact.object, fact.statement, fact.claimant), redactor)
        if kind is None:
            kept_facts.append(fact)
        else:
            invalid.append(InvalidItem(_shown(fact, redactor), f"fact: holds a secret ({kind})"))
    for episode in episodes:
        kind = secret_in((episode.text,), redactor)
        if kind is None:
            kept_episodes.append(episode)
        else:
            item = _shown(episode, redactor)
            invalid.append(InvalidItem(item, f"episode: holds a secret ({kind})"))
    return kept_facts, kept_episodes, invalid


def _shown(item: FactItem | EpisodeItem, redactor: Redactor) -> dict[str, object]:
    """The refused item as the report shows it: redacted too (the report is read, logged,
    returned by servers)."""
    return {
        key: redactor.redact(value).text if isinstance(value, str) else value
        for key, value in item.__dict__.items()
    }
