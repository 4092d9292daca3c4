"""Rendering recall into a token budget. Pure.

Sections in priority order (:func:`recall_sections`): contested facts (both sides, who said
what), current facts (anything short of the user's own word, ungrounded details and an end of
validity marked on the line), facts possibly stale (to confirm with the user), dated
commitments due soon, the wiki (at most a third of the budget), episodes, and a separate
section of unverified third-party claims. Lines are added in that order while they fit
(:func:`render`); whatever does not fit is counted in a truncation note, and the note itself is
inside the budget. The total is checked with the counter on the final text, so a counter that
is not additive still cannot push the result over the budget.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from veil.memory.model import Episode, Fact
from veil.tokens import TokenCounter, estimate_tokens

__all__ = [
    "Rendered",
    "Section",
    "TokenCounter",
    "claim_line",
    "contest_lines",
    "estimate_tokens",
    "fact_line",
    "recall_sections",
    "render",
]


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    lines: Sequence[str]
    share: float = 1.0
    """At most this share of the whole budget (the wiki takes at most a third)."""


@dataclass
class Rendered:
    text: str
    tokens: int
    included: dict[str, list[int]] = field(default_factory=lambda: {})
    """Per section, the indices of the lines that made it into the text."""
    omitted: dict[str, int] = field(default_factory=lambda: {})

    @property
    def truncated(self) -> bool:
        return any(self.omitted.values())


def render(
    sections: Sequence[Section], budget: int, count: TokenCounter = estimate_tokens
) -> Rendered:
    if budget <= 0:
        total = {s.key: len(s.lines) for s in sections if s.lines}
        return Rendered("", 0, {}, total)
    reserve = count(_note({s.key: len(s.lines) for s in sections})) + 1
    lines: list[str] = []
    owners: list[tuple[str, int] | None] = []  # which section line each output line is
    included: dict[str, list[int]] = {}
    used = 0
    for section in sections:
        if not section.lines:
            continue
        cap = math.floor(budget * section.share)
        spent = 0
        header = f"## {section.title}"
        header_cost = count(header) + 1
        taken: list[int] = []
        for index, line in enumerate(section.lines):
            cost = count(line) + 1 + (0 if taken else header_cost)
            if used + cost > budget - reserve or spent + cost > cap:
                continue  # a later, shorter line may still fit
            if not taken:
                if lines:
                    lines.append("")
                    owners.append(None)
                lines.append(header)
                owners.append(None)
            lines.append(line)
            owners.append((section.key, index))
            used += cost
            spent += cost
            taken.append(index)
        included[section.key] = taken

    def omitted_now() -> dict[str, int]:
        return {
            s.key: len(s.lines) - len(included.get(s.key, []))
            for s in sections
            if s.lines and len(s.lines) > len(included.get(s.key, []))
        }

    def assemble() -> str:
        body = "\n".join(lines)
        missing = omitted_now()
        if not missing:
            return body
        return f"{body}\n{_note(missing)}" if body else _note(missing)

    text = assemble()
    while count(text) > budget and lines:  # a non-additive counter: drop from the end
        lines.pop()
        owner = owners.pop()
        if owner is not None:
            included[owner[0]].remove(owner[1])
        text = assemble()
    if count(text) > budget:
        text = ""
        included = {}
    return Rendered(
        text,
        count(text),
        included,
        omitted_now() if text else {s.key: len(s.lines) for s in sections if s.lines},
    )


def _note(omitted: dict[str, int]) -> str:
    parts = ", ".join(f"{n} {k}" for k, n in omitted.items() if n)
    return f"[truncated to fit the token budget: left out {parts}]"


# ---- recall's sections ----------------------------------------------------------------------


def recall_sections(
    *,
    contested: Sequence[str],
    facts: Sequence[Fact],
    needs_confirmation: Sequence[Fact],
    commitments: Sequence[Episode],
    wiki: Sequence[str],
    episodes: Sequence[Episode],
    claims: Sequence[Fact],
) -> list[Section]:
    """A recall's sections in priority order; ``contested`` are :func:`contest_lines`, each
    other section one line per value, in the order given (which :func:`render` reports back
    as the indices it included)."""
    return [
        Section("contested", "Contested (both sides kept; ask the user)", list(contested)),
        Section("facts", "Facts", [fact_line(f) for f in facts]),
        Section(
            "needs_confirmation",
            "Possibly stale — confirm with the user",
            [fact_line(f) for f in needs_confirmation],
        ),
        Section("commitments", "Due soon", [f"- due {e.due}: {e.text}" for e in commitments]),
        Section("wiki", "Notes", list(wiki), share=1 / 3),
        Section(
            "episodes",
            "Episodes",
            [f"- {e.at.date().isoformat()} {e.kind}: {e.text}" for e in episodes],
        ),
        Section(
            "claims",
            "Unverified third-party claims (never assert as fact)",
            [claim_line(f) for f in claims],
        ),
    ]


def contest_lines(contested: Sequence[Fact], pool: Mapping[str, Fact]) -> list[str]:
    """One line per pair of contested facts, both sides and who said each: a pair once, and
    only while the other side (looked up in ``pool``) is current or stale."""
    lines: list[str] = []
    done: set[frozenset[str]] = set()
    for fact in contested:
        for other_id in fact.contested_with:
            other = pool.get(other_id)
            pair = frozenset((fact.id, other_id))
            if other is None or pair in done or other.status not in ("current", "stale"):
                continue
            done.add(pair)
            lines.append(
                f"- {_who(fact)} says: {fact.statement} — but {_who(other)} says: {other.statement}"
            )
    return lines


def fact_line(fact: Fact) -> str:
    """A fact as recall shows it, marked unless it is the user's own word, possibly stale,
    ungrounded or valid only until a date."""
    line = f"- {fact.statement}"
    if fact.trust < 3:
        # Only the user's own word is user-level; anything else is marked where it is shown.
        line += f" (per {fact.provenance.author_of_evidence}; not confirmed by the user)"
    if fact.status == "stale":
        line += f" (possibly stale — last confirmed {fact.last_confirmed_at.date().isoformat()})"
    if "ungrounded" in fact.flags:
        line += " (detail not in the source)"
    if fact.valid_to is not None:
        line += f" (until {fact.valid_to.date().isoformat()})"
    return line


def claim_line(fact: Fact) -> str:
    """A third party's claim, named as theirs."""
    who = (
        fact.provenance.claimant
        if fact.provenance.claimant != "user"
        else fact.provenance.author_of_evidence
    )
    return f"- {who} claims: {fact.statement} ({fact.valid_from.date().isoformat()})"


def _who(fact: Fact) -> str:
    return f"{fact.provenance.author_of_evidence} ({fact.valid_from.date().isoformat()})"
