"""Working-memory configuration: weights, bounds and horizons, with tested defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from veil.context.batching import BatchRule
from veil.context.items import ItemKind, TurnKind


@dataclass(frozen=True)
class ScoreWeights:
    """The five signals' fixed weights (they sum to 1) and the multipliers."""

    recency: float = 0.35
    frequency: float = 0.15
    relevance: float = 0.2
    structure: float = 0.15
    cognitive: float = 0.15
    procedural: float = 1.2
    manual: float = 1.5
    pin_boost: float = 10.0
    """Added to a pinned item's score: above any threshold the controller can reach."""
    frequency_cap: int = 20
    """Access counts at or above this saturate the frequency signal."""


@dataclass(frozen=True)
class ThresholdConfig:
    """AIMD threshold: additive increase under pressure, multiplicative decrease on regret."""

    initial: float = 0.15
    minimum: float = 0.02
    maximum: float = 0.3
    increase: float = 0.01
    decrease_factor: float = 0.5
    calm_ticks: int = 5
    """No additive increase within this many ticks of a regret."""


_INITIAL_STABILITY: Mapping[ItemKind, float] = MappingProxyType(
    {
        "file": 0.5,
        "tool_output": 0.25,
        "message": 0.5,
        "turn": 0.5,
        "fact": 2.0,
        "procedural": 3.0,
        "decision": 2.0,
        "intent": 7.0,
        "correction": 7.0,
        "plan": 2.0,
    }
)
_INITIAL_DIFFICULTY: Mapping[ItemKind, float] = MappingProxyType(
    {
        "file": 5.0,
        "tool_output": 6.0,
        "message": 5.0,
        "turn": 5.0,
        "fact": 4.0,
        "procedural": 3.0,
        "decision": 4.0,
        "intent": 2.0,
        "correction": 2.0,
        "plan": 4.0,
    }
)
TURN_WEIGHTS: Mapping[TurnKind, float] = MappingProxyType(
    {
        "intent": 0.0,
        "correction": 0.0,
        "decision": 0.1,
        "action": 0.6,
        "status": 0.7,
        "exploration": 0.8,
    }
)


@dataclass(frozen=True)
class ContextConfig:
    weights: ScoreWeights = field(default_factory=ScoreWeights)
    threshold: ThresholdConfig = field(default_factory=ThresholdConfig)
    ticks_per_day: float = 24.0
    """Session clock: one tick per tool call; idle wall time does not decay a session."""
    live_max_stability_days: float = 7.0
    durable_max_stability_days: float = 365.0
    initial_stability: Mapping[ItemKind, float] = field(default_factory=lambda: _INITIAL_STABILITY)
    initial_difficulty: Mapping[ItemKind, float] = field(
        default_factory=lambda: _INITIAL_DIFFICULTY
    )
    turn_weights: Mapping[TurnKind, float] = field(default_factory=lambda: TURN_WEIGHTS)
    protected_turns: int = 12
    """The last turns with turn eviction score 0: the threshold (stage 1) never demotes them."""
    pressure_protected_turns: int = 2
    """Of those, the newest that window pressure (stage 2) takes only after everything else."""
    turn_age_span: int = 20
    turn_similarity: float = 0.7
    window_tokens: int = 128_000
    reserve_tokens: int = 16_000
    budget_tokens: int | None = None
    """The conversation's request budget set directly (the proxy's and the harness's
    ``budget=``): requests are kept within it instead of ``window − reserve``."""
    batch: BatchRule = field(default_factory=BatchRule)
    """When a batch of evictions runs and how deep it goes (:mod:`veil.context.batching`):
    only over the budget, deep enough to pay for the prompt cache it breaks."""
    target_fill: float = 0.9
    """The AIMD threshold rises while the window is above this fill of the budget (and the
    session goes well)."""
    turn_score_base: Literal["constant", "signals"] = "signals"
    """A turn's score is ``base × (1 − turn eviction score)``; base 1 or its five-signal score."""
    pressure_token_exponent: float = 0.0
    """Stage 2 order: ascending ``score / tokens_freed ** exponent`` (0 = lowest score first,
    as SPEC states; 1 prefers big items, which on set A evicted large results still needed)."""
    evict_superseded_first: bool = True
    """Stage 2 takes results a later call repeated (same command, same file or range read
    again) before anything else, oldest first."""
    cold_retrievability: float = 0.5
    """Stage 3: warm items whose durable-horizon R fell below this go cold…"""
    cold_after_ticks: int = 50
    """…when also untouched for this many ticks."""
    manual_protect_ticks: int = 3
    protected_results_ticks: int = 5
    """Tool results captured in the last ticks are softly protected: the model is working with
    them (the ones it has not read yet are never evicted at all)."""
    editing_ticks: int = 20
    """The latest whole read of a file the session edited in the last ticks is softly
    protected: the model copies the text its edits must match from it."""
    touch_on_reference: bool = True
    """An action or assistant turn that names a distinctive path or symbol printed by live
    items touches them (an FSRS recall: the model re-references what it read)."""
    reference_names: Literal["paths", "names"] = "names"
    """What a re-reference is: a path the model names again, or any distinctive name (paths,
    dotted names, snake_case and camelCase identifiers)."""
    reference_max_items: int = 5
    """A name carried by more live-or-evicted items than this is not distinctive."""
    reference_max_touches: int = 8
    """At most this many items touched per action or turn (most specific names first)."""
    manifest_max_items: int = 40
    manifest_max_share: float = 0.025
    """The manifest takes at most this share of the request budget (its counts, contradictions and
    notes always come; rows of loaded items and pointers fill what is left)."""
    manifest_evicted: int = 5
    """Pointers of the items that most recently left the prompt, listed in the manifest."""
    index_per_step: int = 8
    """Demoted items made searchable per step; the rest wait (``search`` drains them all)."""
    stub_chars: int = 40
    """Characters of a call's target a result's stub repeats (0: none, where the call is sent
    beside it with its arguments, as through the proxy)."""
    expand_tool: str | None = None
    """The tool a stub (and the manifest) tells the model to call with a pointer, as the model
    sees it. The context layer knows no surface: each sets it (``veil``'s harness and the
    framework adapters name the catalogue's ``expand`` verb as they offer it, the proxy as the
    agent names Veil's MCP ``expand``). None: no such tool — a stub gives its pointer and says
    to run the call again."""
    excerpt_min_tokens: int = 256
    """A result clipped after the provider refused a request as too long keeps at least this
    many tokens of head and tail."""

    @property
    def request_budget(self) -> int:
        """What a whole request may come to, in the provider's tokens: ``budget_tokens`` when
        set, else the window less the reply's reserve."""
        if self.budget_tokens is not None:
            return self.budget_tokens
        return self.window_tokens - self.reserve_tokens
