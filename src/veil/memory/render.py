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
    included: dict[str, int] = field(default_factory=lambda: {})
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
    included: dict[str, int] = {}
    omitted: dict[str, int] = {}
    used = 0
    for section in sections:
        if not section.lines:
            continue
        cap = math.floor(budget * section.share)
        spent = 0
        header = f"## {section.title}"
        header_cost = count(header) + 1
        taken = 0
        for line in section.lines:
            cost = count(line) + 1 + (header_cost if taken == 0 else 0)
            if used + cost > budget - reserve or spent + cost > cap:
                continue  # a later, shorter line may still fit
            if taken == 0:
                if lines:
                    lines.append("")
                lines.append(header)
            lines.append(line)
            used += cost
            spent += cost
            taken += 1
        included[section.key] = taken
        if taken < len(section.lines):
            omitted[section.key] = len(section.lines) - taken
    text = "\n".join(lines)
    if any(omitted.values()):
        text = f"{text}\n{_note(omitted)}" if text else _note(omitted)
    while count(text) > budget and lines:  # a non-additive counter: drop from the end
        dropped = lines.pop()
        if dropped and not dropped.startswith("## "):
            key = _owner(sections, dropped)
            included[key] = included.get(key, 1) - 1
            omitted[key] = omitted.get(key, 0) + 1
        text = "\n".join(lines) + "\n" + _note(omitted)
    if count(text) > budget:
        text = ""
    return Rendered(text, count(text), included, {k: v for k, v in omitted.items() if v})


def _note(omitted: dict[str, int]) -> str:
    parts = ", ".join(f"{n} {k}" for k, n in omitted.items() if n)
    return f"[truncated to fit the token budget: left out {parts}]"


def _owner(sections: Sequence[Section], line: str) -> str:
    for section in sections:
        if line in section.lines:
            return section.key
    return "other"
