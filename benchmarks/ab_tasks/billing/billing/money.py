"""Money as integer cents: parsing, rounding half up, splitting and formatting."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

CURRENCY_SYMBOLS = {
    "USD": "$",
    "EUR": "€",
    "GBP": "£",
    "JPY": "¥",
    "CHF": "CHF ",
    "CAD": "CA$",
    "AUD": "A$",
}
"""How each currency is written before the amount."""

ZERO_DECIMAL = frozenset({"JPY"})
"""Currencies without minor units: their amounts are whole units, shown without decimals."""


class MoneyError(ValueError):
    """An amount that cannot be read as money."""


def to_cents(amount: str | int | Decimal) -> int:
    """``"12.345"`` → 1235 (half up); an int is taken as whole units."""
    if isinstance(amount, int):
        return amount * 100
    try:
        value = Decimal(str(amount).strip().replace(",", ""))
    except InvalidOperation:
        raise MoneyError(f"not an amount: {amount!r}") from None
    if not value.is_finite():
        raise MoneyError(f"not an amount: {amount!r}")
    return int((value * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def round_half_up(value: Decimal) -> int:
    """A fractional number of cents rounded half up to whole cents."""
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def percent_of(cents: int, percent: Decimal) -> int:
    """``percent`` % of ``cents``, rounded half up to the cent."""
    return round_half_up(Decimal(cents) * percent / Decimal(100))


def split(cents: int, weights: list[int]) -> list[int]:
    """``cents`` split in proportion to ``weights``; the last share takes the remainder so the
    shares add up to ``cents`` exactly."""
    if not weights:
        return []
    total = sum(weights)
    if total == 0:
        return [0] * (len(weights) - 1) + [cents]
    shares = [cents * w // total for w in weights[:-1]]
    shares.append(cents - sum(shares))
    return shares


def format_cents(cents: int, currency: str = "USD") -> str:
    """1234 → ``$12.34``; negative amounts as ``-$12.34``; JPY without decimals."""
    symbol = CURRENCY_SYMBOLS.get(currency, currency + " ")
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    if currency in ZERO_DECIMAL:
        return f"{sign}{symbol}{cents // 100:,}"
    return f"{sign}{symbol}{cents // 100:,}.{cents % 100:02d}"
