"""A request's budget, one rule for every surface (the harness, the adapters, the proxy). Pure.

A model's context window holds the request and the reply: a request may use the window less
the reply's reserve (:func:`reply_reserve`). When the provider refuses a request as too long,
the budget becomes what the refusal implies (:func:`after_overflow`) and the request is
retried once, after a batch that may clip what the model has not read yet.
"""

from __future__ import annotations

RESERVE_SHARE = 5
"""The reply's reserve is a fifth of the window…"""
RESERVE_MIN = 256
RESERVE_MAX = 16_000
"""…at least 256 tokens and at most 16,000."""
OVERFLOW_SHRINK = 0.75
"""A refused request whose error states no limit: the budget becomes this share of what was
sent."""


def reply_reserve(window: int) -> int:
    """The tokens of a ``window`` kept for the model's reply: a fifth, 256 to 16,000."""
    return min(max(window // RESERVE_SHARE, RESERVE_MIN), RESERVE_MAX)


def request_budget(window: int) -> int:
    """What a request may use of a model's ``window``: the window less the reply's reserve."""
    return max(1, window - reply_reserve(window))


def after_overflow(budget: int, sent: int | None, limit: int | None) -> int:
    """The request budget after the provider refused a request as too long: the ``limit`` the
    error states less the reply's reserve, else :data:`OVERFLOW_SHRINK` of the ``sent`` tokens
    (or of the budget) — never more than it was."""
    if limit:
        return max(1, min(budget, request_budget(limit)))
    return max(1, min(budget, int((sent or budget) * OVERFLOW_SHRINK)))


__all__ = ["after_overflow", "reply_reserve", "request_budget"]
