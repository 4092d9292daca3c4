"""Working memory (docs/seeds/veil.txt): FSRS-scored context items, an AIMD threshold, three-stage
eviction live → warm → cold, turns, a manifest and contradictions. No LLM, no agent imports."""

from __future__ import annotations

from veil.context.config import ContextConfig, ScoreWeights, ThresholdConfig
from veil.context.engine import ContextEngine, EvictionReport, UnknownItem
from veil.context.items import ContextItem, ItemKind, Tier, TurnKind
from veil.context.manifest import MANIFEST_CLOSE, MANIFEST_OPEN

__all__ = [
    "MANIFEST_CLOSE",
    "MANIFEST_OPEN",
    "ContextConfig",
    "ContextEngine",
    "ContextItem",
    "EvictionReport",
    "ItemKind",
    "ScoreWeights",
    "ThresholdConfig",
    "Tier",
    "TurnKind",
    "UnknownItem",
]
