"""Token counts in the provider's tokens. Pure.

Veil estimates tokens without a tokenizer (:func:`veil.tokens.estimate_tokens`, about four
characters a token). Code and JSON tokenize denser than that, so a window filled by the estimate
overflows. Once a provider reports how many tokens a request really had, the ratio of that to
the estimate of the same request calibrates every later budget: the budget in estimated tokens is
the window divided by the ratio. Until the first response the ratio is 1 (chars/4).

The ratio follows a rise at once and a fall slowly: an underestimate risks an overflow, an
overestimate only leaves some room unused.
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_RATIO = 0.25
MAX_RATIO = 4.0
FALL = 0.5
"""Weight of a new, lower observation (an exponential moving average on the way down)."""


@dataclass(frozen=True)
class Calibration:
    """Provider tokens per estimated token, from the requests reported so far."""

    ratio: float = 1.0
    samples: int = 0

    def observe(self, reported: int, estimated: int) -> Calibration:
        """One request: the provider reported ``reported`` input tokens for a request Veil
        estimated at ``estimated``. Nonsense (a zero on either side) changes nothing."""
        if reported <= 0 or estimated <= 0:
            return self
        seen = min(MAX_RATIO, max(MIN_RATIO, reported / estimated))
        if self.samples == 0 or seen >= self.ratio:
            return Calibration(seen, self.samples + 1)
        return Calibration(self.ratio + FALL * (seen - self.ratio), self.samples + 1)

    def provider_tokens(self, estimated: int) -> int:
        """An estimate in the provider's tokens."""
        return round(estimated * self.ratio)

    def estimated(self, provider_tokens: int) -> int:
        """A number of the provider's tokens as estimated tokens (rounded down: a budget)."""
        return int(provider_tokens / self.ratio)
