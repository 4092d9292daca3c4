"""An invoice: its lines, their discounts and tax, the totals."""

from __future__ import annotations

from dataclasses import dataclass, field

from billing.discounts import Discount, combine, line_discounts, parse_code
from billing.money import format_cents, percent_of, to_cents
from billing.tax import rate_for


@dataclass(frozen=True)
class Line:
    description: str
    unit_cents: int
    quantity: int = 1
    category: str = "general"

    @property
    def amount(self) -> int:
        return self.unit_cents * self.quantity

    @classmethod
    def of(cls, description: str, price: str, quantity: int = 1, category: str = "general") -> Line:
        return cls(description, to_cents(price), quantity, category)


@dataclass
class Invoice:
    region: str
    currency: str = "USD"
    lines: list[Line] = field(default_factory=list)
    codes: list[Discount] = field(default_factory=list)

    def add(self, line: Line) -> Invoice:
        self.lines.append(line)
        return self

    def apply(self, code: str) -> Invoice:
        self.codes.append(parse_code(code))
        return self

    # ---- per line -----------------------------------------------------------------------

    def discounts(self) -> list[int]:
        amounts = [line.amount for line in self.lines]
        quantities = [line.quantity for line in self.lines]
        categories = [line.category for line in self.lines]
        per_code = [line_discounts(amounts, quantities, categories, d) for d in self.codes]
        return combine(amounts, per_code)

    def net_amounts(self) -> list[int]:
        """What the customer pays for each line's goods, after its discounts."""
        return [line.amount - off for line, off in zip(self.lines, self.discounts(), strict=True)]

    def taxes(self) -> list[int]:
        """Each line's tax, rounded half up to the cent."""
        return [
            percent_of(line.amount, rate_for(self.region, line.category)) for line in self.lines
        ]

    # ---- totals -------------------------------------------------------------------------

    @property
    def subtotal(self) -> int:
        return sum(line.amount for line in self.lines)

    @property
    def discount(self) -> int:
        return sum(self.discounts())

    @property
    def tax(self) -> int:
        return sum(self.taxes())

    @property
    def total(self) -> int:
        return self.subtotal - self.discount + self.tax

    def render(self) -> str:
        """The invoice as text, one line per item, then the totals."""
        rows = []
        for line, off, tax in zip(self.lines, self.discounts(), self.taxes(), strict=True):
            money = format_cents(line.amount, self.currency)
            extra = f" (-{format_cents(off, self.currency)})" if off else ""
            rows.append(f"{line.quantity:>3} x {line.description:<24} {money:>12}{extra}")
            if tax:
                rows.append(f"{'':>6}tax {format_cents(tax, self.currency):>31}")
        rows.append(f"{'subtotal':<30} {format_cents(self.subtotal, self.currency):>12}")
        if self.discount:
            rows.append(f"{'discount':<30} {format_cents(-self.discount, self.currency):>12}")
        rows.append(f"{'tax':<30} {format_cents(self.tax, self.currency):>12}")
        rows.append(f"{'total':<30} {format_cents(self.total, self.currency):>12}")
        return "\n".join(rows)
