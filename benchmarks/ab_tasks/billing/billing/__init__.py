"""Invoices: lines, discount codes, regional tax, money in cents."""

from billing.discounts import Discount, parse_code
from billing.invoice import Invoice, Line
from billing.money import format_cents, to_cents
from billing.tax import rate_for

__all__ = ["Discount", "Invoice", "Line", "format_cents", "parse_code", "rate_for", "to_cents"]
