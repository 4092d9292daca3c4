"""What a request to the model costs in tokens, as Veil counts it and as the provider does.

A request is its fixed part — the system prompt (the briefing in it) and the tool schemas — and
the conversation as the renderer made it (:mod:`veil.context.window`, whose counts are the
truth). :class:`RequestTokens` keeps those counts for the harness: what the last request came
to (``sent``), the provider's report that calibrates every later estimate
(:meth:`ContextEngine.calibrate`), the window's shrinking when the provider refuses a request
as too long (:meth:`overflow`), and the figures ``--trace`` records beside each request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from veil.context import ContextEngine
from veil.context.budget import after_overflow
from veil.context.window import Rendered
from veil.dialects.overflow import overflow_limits
from veil.llm.messages import spec_text


class RequestTokens:
    def __init__(self, engine: ContextEngine) -> None:
        self.engine = engine
        self.system = 0
        """Tokens of the system prompt as sent (the briefing included)."""
        self.tools = 0
        """Tokens of the tool schemas sent with every request."""
        self.sent = 0
        """Estimated tokens of the last request as sent (calibration compares usage to it)."""
        self.rendered: Rendered | None = None
        """The last request's conversation as the model saw it."""

    @property
    def fixed(self) -> int:
        """What every request carries besides the conversation."""
        return self.system + self.tools

    def count_tools(self, tools: Sequence[Any]) -> int:
        """The tools' schemas (each with a ``spec``), counted once: they go with every request."""
        self.tools = sum(self.engine.count_tokens(spec_text(t.spec)) for t in tools)
        return self.tools

    def count_system(self, prompt: str) -> None:
        self.system = self.engine.count_tokens(prompt)

    def sending(self, rendered: Rendered) -> None:
        """The request about to go out carries ``rendered``."""
        self.rendered = rendered
        self.sent = self.fixed + rendered.tokens

    def reported(self, input_tokens: int) -> None:
        """The provider's count of the last request's input tokens calibrates Veil's estimate."""
        self.engine.calibrate(input_tokens, self.sent)

    @property
    def provider_sent(self) -> int:
        """The last request in the provider's tokens (the calibrated estimate)."""
        return self.engine.calibration.provider_tokens(self.sent)

    def overflow(self, error: str, count: int) -> str | None:
        """The provider refused the request as too long (``error`` is what it said). The first
        time the budget becomes what the error implies (the rule of every surface,
        :func:`veil.context.budget.after_overflow`; the calibration too) and None says to
        retry; the second time, why the run ends and how to fix it."""
        engine = self.engine
        window = engine.config.window_tokens
        limit, sent = overflow_limits(error)
        if count > 1:
            said = f" (the model's limit is {limit:,} tokens)" if limit else ""
            return (
                f"the model refused the request as too long twice{said}, even after evicting: "
                f"its context window is smaller than the {window:,} tokens Veil plans for; "
                "run with a smaller --window"
            )
        if sent:
            engine.calibrate(sent, self.sent)
        # the one rule of every surface (veil.context.budget): the limit the error states
        # less the reply's reserve, else a quarter less than what was sent
        budget = after_overflow(engine.config.request_budget, self.provider_sent, limit)
        engine.config = replace(
            engine.config,
            window_tokens=min(window, limit) if limit else window,
            budget_tokens=budget,
        )
        return None

    def figures(self) -> dict[str, int | float]:
        """What Veil counted for the last request (``--trace`` records it beside the request):
        the request and its conversation as estimated, ``live_tokens`` (the conversation
        without the tail, which the budget is checked against), the budget, the window and the
        calibration ratio; ``request_tokens`` is the request in the provider's tokens."""
        rendered = self.rendered
        conversation = rendered.tokens if rendered is not None else 0
        tail = rendered.tail_tokens if rendered is not None else 0
        engine = self.engine
        return {
            "request_tokens": self.provider_sent,
            "estimated_tokens": self.sent,
            "fixed_tokens": self.sent - conversation,
            "conversation_tokens": conversation,
            "tail_tokens": tail,
            "live_tokens": engine.live_tokens,
            "budget": engine.budget,
            "window": engine.config.window_tokens,
            "ratio": engine.calibration.ratio,
        }
