"""Configuration of the long-term memory: the relation registry, lifetimes and limits.

The registry says, per relation, whether it is functional (one current value per subject, so a
new value supersedes the old) and its default volatility. Hosts extend it with
``MemoryConfig(relations={**BUILTIN_RELATIONS, "owns_repo": Relation(...)})``; relations the
model invents are kept as ``unclassified`` under their own name, never dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from veil.memory.model import Volatility
from veil.memory.render import estimate_tokens


@dataclass(frozen=True)
class Relation:
    name: str
    functional: bool
    volatility: Volatility
    description: str
    procedural: bool = False
    opposite: str | None = None
    """A relation that says the contrary of this one for the same value (``uses_tool`` x /
    ``avoids_tool`` x): a new fact closes a current opposite, or, from the same evidence,
    both are contested — never both current."""


def _registry(*relations: Relation) -> Mapping[str, Relation]:
    return MappingProxyType({r.name: r for r in relations})


BUILTIN_RELATIONS: Mapping[str, Relation] = _registry(
    Relation("prefers", True, "durable", "the subject's current preference (editor, food, style)"),
    Relation("works_as", True, "durable", "the subject's job or role"),
    Relation("located_at", True, "slow", "where the subject lives or is based now"),
    Relation("deadline", True, "transient", "a dated deadline the subject must meet"),
    Relation("health_state", True, "transient", "the subject's current health condition"),
    Relation("partner_of", False, "durable", "a romantic partner"),
    Relation("relative_of", False, "permanent", "a family member"),
    Relation("has_pet", False, "durable", "a pet the subject has"),
    Relation("works_on", False, "slow", "a project the subject works on"),
    Relation(
        "uses_tool",
        False,
        "durable",
        "a tool, editor or language the subject uses (procedural)",
        procedural=True,
        opposite="avoids_tool",
    ),
    Relation(
        "avoids_tool",
        False,
        "durable",
        "a tool the subject avoids or stopped using (procedural)",
        procedural=True,
        opposite="uses_tool",
    ),
    Relation(
        "source_reliable",
        False,
        "slow",
        "a source that proved reliable (procedural)",
        procedural=True,
        opposite="source_dead_end",
    ),
    Relation(
        "source_dead_end",
        False,
        "slow",
        "a source that proved a dead end (procedural)",
        procedural=True,
        opposite="source_reliable",
    ),
    Relation(
        "third_party_claim",
        False,
        "durable",
        "something a third party asserts (always quarantined)",
    ),
)


@dataclass(frozen=True)
class RecallWeights:
    """Weights of the reciprocal-rank fusion ``Σ w / (k + rank)``."""

    entity: float = 1.0
    text: float = 1.0
    vector: float = 0.8
    recency: float = 0.3
    k: int = 60


DEFAULT_LIFETIMES: Mapping[Volatility, float | None] = MappingProxyType(
    {"permanent": None, "durable": 730.0, "slow": 120.0, "transient": 7.0, "ephemeral": 1.0}
)


@dataclass(frozen=True)
class MemoryConfig:
    """Knobs of the long-term memory. Defaults are the documented behaviour."""

    relations: Mapping[str, Relation] = field(default_factory=lambda: BUILTIN_RELATIONS)
    lifetimes_days: Mapping[Volatility, float | None] = field(
        default_factory=lambda: DEFAULT_LIFETIMES
    )
    aliases: Mapping[str, str] = field(default_factory=lambda: {})
    """Entity aliases, ``{"ACME Corp": "Acme"}``: resolved before supersession."""
    user_names: tuple[str, ...] = ()
    """Names by which the user of every scope is known (resolved to ``user``)."""
    guardrails: bool = True
    """Check what the extraction model wrote against the evidence (:mod:`veil.memory.guardrails`:
    grounding, reported speech, relation sanity, episode kinds and dates, third person). Off
    only to measure what they catch (``benchmarks/real_model.py`` reports both)."""
    max_evidence_chars: int = 100_000
    """Longer evidence is refused with :class:`EvidenceTooLarge` before anything is written:
    one remember makes at most one LLM call, so it cannot be chunked silently."""
    max_facts_in_prompt: int = 60
    llm_timeout_s: float = 120.0
    subgraph_coverage_share: float = 0.0
    """Share of recall's fact slots reserved for days the relevance head does not cover.
    Measured and not adopted by the seed (see docs/memory.md); off by default."""
    recall_weights: RecallWeights = field(default_factory=RecallWeights)
    """Fusion of the fact lists (entity graph, full text, vectors)."""
    fact_min_similarity: float = 0.3
    """Recall's relevance floor for facts found by embedding alone: a nearest neighbour is
    always *some* fact, so one is a candidate only when its cosine with the query reaches this
    (facts the query names an entity or a relation of, and full-text matches, need none). With
    the default embedder an unrelated query ("zebra giraffe savanna") stays below 0.3 and
    related ones ("how do we deploy" for "The project deploys to AWS") reach 0.4 to 0.7;
    -1 turns the floor off."""
    episode_weights: RecallWeights = field(
        default_factory=lambda: RecallWeights(text=1.0, vector=0.4, recency=0.0, k=10)
    )
    """Fusion of the episode lists (full text, vectors, the most recent). Chosen on LoCoMo
    conversations 1-5 and checked on 6-10 (``benchmarks/locomo_retrieval.py --tune``): on raw
    conversational turns full text carries most of the signal, vectors add some, and recency
    none — LoCoMo's questions are about any session, so it cannot value recency; a deployment
    whose questions favour recent events can raise ``recency``."""
    token_counter: Callable[[str], int] = estimate_tokens
    """Counts tokens for recall budgets; the default is an estimate, pass an exact one."""
    consolidate_after_days: float = 30.0
    """Interaction/outcome episodes older than this are consolidated by ``maintain``."""
    consolidate_min_episodes: int = 5
    """Fewer old episodes than this are left alone (no model call)."""
    consolidate_max_episodes: int = 500
    wiki_max_facts: int = 5000
    audit: bool = False
    """Opt-in operation audit log (who, what, when, over which user, counts; no content)."""

    def relation(self, name: str) -> Relation | None:
        return self.relations.get(name)
