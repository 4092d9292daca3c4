"""Discount codes.

``SAVE10`` — 10 % off every line; ``OFF500`` — 5.00 off the order, spread over the lines;
``B3G1`` — for every 3 units of a line, one more is free (the cheapest units of the line).
A code may be limited to one category: ``SAVE10:books``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from billing.money import percent_of, split

_PERCENT = re.compile(r"^SAVE(\d{1,2})$")
_FIXED = re.compile(r"^OFF(\d+)$")
_BUNDLE = re.compile(r"^B(\d)G1$")


@dataclass(frozen=True)
class Discount:
    kind: str  # "percent", "fixed" or "bundle"
    value: int
    category: str | None = None

    def applies_to(self, category: str) -> bool:
        return self.category is None or self.category == category


class BadCode(ValueError):
    """A discount code that does not parse."""


def parse_code(code: str) -> Discount:
    text, _, category = code.strip().upper().partition(":")
    category = category.lower() or None
    if m := _PERCENT.match(text):
        return Discount("percent", int(m.group(1)), category)
    if m := _FIXED.match(text):
        return Discount("fixed", int(m.group(1)), category)
    if m := _BUNDLE.match(text):
        return Discount("bundle", int(m.group(1)), category)
    raise BadCode(code)


def line_discounts(
    amounts: list[int], quantities: list[int], categories: list[str], discount: Discount
) -> list[int]:
    """The cents each line gets off under ``discount`` (``amounts`` are line totals)."""
    eligible = [discount.applies_to(c) for c in categories]
    if discount.kind == "percent":
        pct = Decimal(discount.value)
        return [percent_of(a, pct) if ok else 0 for a, ok in zip(amounts, eligible, strict=True)]
    if discount.kind == "fixed":
        weights = [a if ok else 0 for a, ok in zip(amounts, eligible, strict=True)]
        cap = min(discount.value, sum(weights))
        return split(cap, weights)
    off: list[int] = []
    for amount, quantity, ok in zip(amounts, quantities, eligible, strict=True):
        if not ok or quantity <= discount.value:
            off.append(0)
            continue
        free = quantity // (discount.value + 1)
        off.append(amount // quantity * free)
    return off


def combine(amounts: list[int], per_code: list[list[int]]) -> list[int]:
    """Several codes' discounts per line, never more than the line's amount."""
    total = [sum(column) for column in zip(*per_code, strict=True)] if per_code else []
    if not total:
        return [0] * len(amounts)
    return [min(a, t) for a, t in zip(amounts, total, strict=True)]
