"""Sales tax by region and product category.

Rates are percentages. A region lists the categories it exempts; everything else is taxed at
the region's standard rate, or at a reduced rate where the region names one for the category.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal


@dataclass(frozen=True)
class Region:
    code: str
    name: str
    standard: Decimal
    reduced: dict[str, Decimal] = field(default_factory=dict)
    exempt: frozenset[str] = frozenset()


def _region(
    code: str,
    name: str,
    standard: str,
    reduced: dict[str, str] | None = None,
    exempt: tuple[str, ...] = (),
) -> Region:
    rates = {k: Decimal(v) for k, v in (reduced or {}).items()}
    return Region(code, name, Decimal(standard), rates, frozenset(exempt))


REGIONS: dict[str, Region] = {
    r.code: r
    for r in (
        _region("US-CA", "California", "7.25", exempt=("food", "medicine")),
        _region("US-NY", "New York", "4", exempt=("food", "medicine", "clothing")),
        _region("US-TX", "Texas", "6.25", exempt=("food", "medicine")),
        _region("US-WA", "Washington", "6.5", exempt=("food",)),
        _region("US-IL", "Illinois", "6.25", reduced={"food": "1", "medicine": "1"}),
        _region("US-OR", "Oregon", "0"),
        _region("US-MT", "Montana", "0"),
        _region("US-FL", "Florida", "6", exempt=("food", "medicine")),
        _region("US-PA", "Pennsylvania", "6", exempt=("food", "clothing", "medicine")),
        _region("US-MA", "Massachusetts", "6.25", exempt=("food", "clothing")),
        _region("DE", "Germany", "19", reduced={"food": "7", "books": "7"}),
        _region("FR", "France", "20", reduced={"food": "5.5", "books": "5.5", "medicine": "2.1"}),
        _region("IT", "Italy", "22", reduced={"food": "4", "books": "4", "medicine": "10"}),
        _region("ES", "Spain", "21", reduced={"food": "4", "books": "4", "medicine": "4"}),
        _region("NL", "Netherlands", "21", reduced={"food": "9", "books": "9", "medicine": "9"}),
        _region("IE", "Ireland", "23", reduced={"books": "0", "medicine": "0"}, exempt=("food",)),
        _region("GB", "United Kingdom", "20", exempt=("food", "books", "medicine")),
        _region("CH", "Switzerland", "8.1", reduced={"food": "2.6", "books": "2.6"}),
        _region("CA-ON", "Ontario", "13", exempt=("food",)),
        _region("CA-QC", "Quebec", "14.975", exempt=("food",)),
        _region("CA-AB", "Alberta", "5", exempt=("food",)),
        _region("AU", "Australia", "10", exempt=("food", "medicine")),
        _region("JP", "Japan", "10", reduced={"food": "8"}),
    )
}

CATEGORIES = frozenset({"general", "food", "books", "clothing", "medicine", "digital"})


class UnknownRegion(KeyError):
    """A region code the table does not have."""


def region(code: str) -> Region:
    try:
        return REGIONS[code.upper()]
    except KeyError:
        raise UnknownRegion(code) from None


def rate_for(code: str, category: str = "general") -> Decimal:
    """The tax rate (percent) for ``category`` in the region ``code``."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown category {category!r}")
    r = region(code)
    if category in r.exempt:
        return Decimal(0)
    return r.reduced.get(category, r.standard)
