"""Rendering recall into a token budget. Pure.

Sections in priority order: contested facts (both sides, who said what), current facts (stale
ones marked), dated commitments due soon, the wiki (at most a third of the budget), episodes,
and a separate section of unverified third-party claims. Lines are added in that order while
they fit; whatever does not fit is counted in a truncation note, and the note itself is inside
the budget. The total is checked with the counter on the final text, so a counter that is not
additive still cannot push the result over the budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from veil.tokens import TokenCounter, estimate_tokens

__all__ = ["Rendered", "Section", "TokenCounter", "estimate_tokens", "render"]


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
