"""Recurring events: rules in plain words and their occurrences."""

from recur.expand import occurrences
from recur.rules import Rule, RuleError, parse

__all__ = ["Rule", "RuleError", "occurrences", "parse"]
