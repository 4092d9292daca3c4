"""Recall: hybrid retrieval fused by reciprocal rank, rendered into a token budget. No LLM.

Sources, each a scoped, indexed query (nothing scans a user's rows in Python):
(a) the entity graph — entities named in the query (resolved like writes, aliases included),
their current facts, facts pointing at them, and one hop to the entities their facts name;
(b) the wiki sections compiled by ``maintain`` for those entities (or the user);
(c) episodes by relevance (full text, vectors) and recency;
(d) full-text (FTS5/BM25, tsvector) over facts and episodes;
(e) vector search (in process on SQLite, pgvector on PostgreSQL) — the only semantic signal for
queries that name no entity, and a fused signal otherwise.
Ranked lists are fused with weighted reciprocal-rank fusion (``RecallWeights``). Here are the
queries (:class:`Recaller`); the ranking rules are pure, in :mod:`veil.memory.ranking`, and so
are the sections and lines the result is rendered as (:mod:`veil.memory.render`).

Relevance floor: a fact is a candidate only when something relates it to the query — the query
names its subject (or its object), asks its relation ("which editor": ``prefers``,
``uses_tool``, of the user when no one else is named), matches its text, or is close to it by
embedding (a cosine of at least ``MemoryConfig.fact_min_similarity``). So an unrelated query
gets no facts, and no notes either (the user's wiki section comes with a query about the user
or one that found facts). Deterministic: the same store and query give the same result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import cast

from veil.clock import format_time
from veil.embed.protocol import Embedder, Vectors
from veil.memory.asked import relations_asked
from veil.memory.config import MemoryConfig
from veil.memory.entities import USER, candidate_mentions, entity_key
from veil.memory.model import Episode, Fact, FactStatus
from veil.memory.projection import (
    ENTITIES,
    EPISODES,
    EPISODES_TEXT,
    EPISODES_VEC,
    FACTS,
    FACTS_TEXT,
    FACTS_VEC,
    WIKI,
)
from veil.memory.ranking import (
    MAX_GRAPH_FACTS,
    TOKENS_PER_LINE,
    Values,
    candidate_cap,
    fuse,
    procedural_factor,
    trusted_and_claims,
    unique_facts,
    valid_at,
    with_coverage,
)
from veil.memory.render import Rendered, contest_lines, recall_sections, render
from veil.memory.rows import (
    EPISODE_AT,
    EPISODE_CONSOLIDATED,
    EPISODE_ID,
    FACT_ID,
    FACT_LAST_CONFIRMED,
    FACT_OBJECT_KEY,
    FACT_RELATION,
    FACT_TRUST,
    FACT_VALID_FROM,
    episode_from_values,
    fact_from_values,
    stale_before,
    status_of,
)
from veil.tape import Range, Store

CANDIDATES = 50
"""Hits taken from each full-text and vector search."""
HOP_FROM = 8
"""One hop is taken from the objects of this many of the first direct facts."""


@dataclass(frozen=True)
class Recall:
    text: str
    facts: tuple[Fact, ...]
    episodes: tuple[Episode, ...]
    claims: tuple[Fact, ...]
    contested: tuple[Fact, ...]
    tokens: int
    truncated: bool
    wiki: tuple[str, ...] = ()
    omitted: dict[str, int] = field(default_factory=lambda: {})
    entities: tuple[str, ...] = ()


class Recaller:
    """Runs the retrieval queries for one recall; holds no state between calls."""

    def __init__(
        self, store: Store, config: MemoryConfig, embedder: Embedder | None = None
    ) -> None:
        self.store = store
        self.config = config
        self.embedder = embedder

    def recall(
        self,
        query: str,
        *,
        user_id: str,
        token_budget: int,
        now: datetime,
        as_of: datetime | None,
        include_claims: bool,
    ) -> Recall:
        with self.store.reading(user_id):
            return self._recall(query, user_id, token_budget, now, as_of, include_claims)

    def _recall(
        self,
        query: str,
        user_id: str,
        token_budget: int,
        now: datetime,
        as_of: datetime | None,
        include_claims: bool,
    ) -> Recall:
        when = as_of or now
        if not query.strip():
            return self._briefing(user_id, token_budget, when, as_of, include_claims)
        weights = self.config.recall_weights
        cap = candidate_cap(token_budget)
        entities = self._entities(user_id, query)
        asked = relations_asked(query, self.config.relations)
        # A relation asked of no one named ("which editor") is asked of the user.
        subjects = entities or ([USER] if asked else [])
        graph = self._graph_facts(user_id, subjects, asked, as_of, cap)
        # Embed the query once for both vector searches.
        vector: str | Vectors = (
            self.embedder.embed([query])[0] if self.embedder is not None else query
        )
        text_hits = [
            h.doc_id
            for h in self.store.search_text(
                FACTS_TEXT, scope=user_id, query=query, limit=CANDIDATES
            )
        ]
        floor = self.config.fact_min_similarity
        vector_hits = [
            h.doc_id
            for h in self.store.search_vector(
                FACTS_VEC, scope=user_id, query=vector, limit=CANDIDATES
            )
            if h.score >= floor
        ]
        rows = {str(r[FACT_ID]): r for r in graph}
        missing = [i for i in dict.fromkeys((*text_hits, *vector_hits)) if i not in rows]
        if missing:
            for row in self.store.fetch_values(FACTS, scope=user_id, where={"fact_id": missing}):
                rows[str(row[FACT_ID])] = row
        # Rank on the rows themselves; only what can be rendered becomes a Fact.
        stale = stale_before(when, self.config)
        status: dict[str, FactStatus] = {fid: status_of(row, stale) for fid, row in rows.items()}
        wanted = set(asked)
        graph_ids = sorted(
            (str(r[FACT_ID]) for r in graph),
            key=lambda i: str(rows[i][FACT_LAST_CONFIRMED]),
            reverse=True,
        )
        graph_order = sorted(
            graph_ids,
            key=lambda i: (
                rows[i][FACT_RELATION] not in wanted,
                -int(cast(int, rows[i][FACT_TRUST])),
            ),
        )
        scores = fuse(
            [
                (weights.entity, graph_order),
                (weights.text, text_hits),
                (weights.vector, vector_hits),
            ],
            weights.k,
        )
        trusted, claims = trusted_and_claims(rows, status, format_time(when), as_of)
        ranked = sorted(trusted, key=lambda i: -scores.get(i, 0.0) * procedural_factor(rows[i]))
        ranked = with_coverage(
            ranked,
            lambda i: str(rows[i][FACT_VALID_FROM])[:10],
            self.config.subgraph_coverage_share,
            slots=max(1, token_budget // 25),
        )
        facts = [
            fact_from_values(rows[i], when, self.config, status=status[i]) for i in ranked[:cap]
        ]
        claim_list = (
            [
                fact_from_values(rows[i], when, self.config, status=status[i])
                for i in sorted(claims, key=lambda i: -scores.get(i, 0.0))[:cap]
            ]
            if include_claims
            else []
        )
        episodes = self._episodes(user_id, query, vector, when, as_of)
        notes_of = entities or ([USER] if facts else [])
        wiki = self._wiki(user_id, notes_of) if as_of is None and notes_of else []
        commitments = self._commitments(user_id, when)
        return self._render(
            facts, claim_list, episodes, wiki, commitments, token_budget, when, entities, user_id
        )

    # ---- sources ------------------------------------------------------------------------

    def _entities(self, user_id: str, query: str) -> list[str]:
        keys = {
            entity_key(m, aliases=self.config.aliases, user_names=self.config.user_names)
            for m in candidate_mentions(query)
        }
        rows = self.store.fetch(ENTITIES, scope=user_id, where={"key": sorted(keys)})
        return sorted(str(r["key"]) for r in rows)

    def _graph_facts(
        self,
        user_id: str,
        entities: list[str],
        asked: Sequence[str],
        as_of: datetime | None,
        cap: int,
    ) -> list[Values]:
        """The entity graph's facts for the query, at most ``cap`` direct ones.

        Each read is one indexed query for one subject key (and one relation or state), in
        index order, so none sorts an entity's whole fact list. Per entity: its facts of the
        relations the query asks about first, then its most recently confirmed ones. The user
        is a subject only when the query is about the user alone, or asks a relation the user
        has ("where do I live"): a query that mentions the user in passing ("tell me about
        Ada") does not pull in every fact about the user. Then facts pointing at the entities,
        and one hop to the entities named by the first direct facts."""
        if not entities:
            return []
        states = ["current"] if as_of is None else ["current", "superseded", "quarantined"]
        alone = entities == [USER]
        direct: list[Values] = []
        for key in entities:
            for relation in asked:
                direct.extend(self._facts_of(user_id, key, states, cap, relation=relation))
            if key != USER or (alone and not asked):
                direct.extend(self._facts_of(user_id, key, states, cap))
        direct = unique_facts(direct)[:cap]
        others = [k for k in entities if k != USER] or entities
        incoming = unique_facts(
            row
            for key in others
            for state in states
            for row in self.store.fetch_values(
                FACTS,
                scope=user_id,
                where={"object_key": key, "state": state},
                limit=max(1, cap // 2),
            )
        )[: max(1, cap // 2)]
        hop_keys = list(
            dict.fromkeys(
                str(r[FACT_OBJECT_KEY])
                for r in direct[:HOP_FROM]
                if r[FACT_OBJECT_KEY] and str(r[FACT_OBJECT_KEY]) not in entities
            )
        )
        hop: list[Values] = []
        if hop_keys:
            known = [
                str(r["key"])
                for r in self.store.fetch(ENTITIES, scope=user_id, where={"key": hop_keys})
            ]
            per_key = max(1, cap // (2 * max(1, len(known))))
            for key in known:
                hop.extend(self._facts_of(user_id, key, states, per_key))
        return unique_facts([*direct, *incoming, *hop])

    def _facts_of(
        self,
        user_id: str,
        key: str,
        states: Sequence[str],
        limit: int,
        *,
        relation: str | None = None,
    ) -> list[Values]:
        """The most recently confirmed facts of one subject (of one relation), newest first:
        one indexed query per state, merged."""
        out: list[Values] = []
        for state in states:
            where: dict[str, object] = {"subject_key": key, "state": state}
            if relation is not None:
                where["relation"] = relation
            out.extend(
                self.store.fetch_values(
                    FACTS,
                    scope=user_id,
                    where=where,
                    order_by=["-last_confirmed_at"],
                    limit=limit,
                )
            )
        if len(states) > 1:
            out.sort(key=lambda r: str(r[FACT_LAST_CONFIRMED]), reverse=True)
        return out[:limit]

    def _episodes(
        self,
        user_id: str,
        query: str,
        vector: str | Vectors,
        when: datetime,
        as_of: datetime | None,
    ) -> list[Episode]:
        weights = self.config.episode_weights
        text_hits = [
            h.doc_id
            for h in self.store.search_text(
                EPISODES_TEXT, scope=user_id, query=query, limit=CANDIDATES
            )
        ]
        vector_hits = [
            h.doc_id
            for h in self.store.search_vector(
                EPISODES_VEC, scope=user_id, query=vector, limit=CANDIDATES
            )
        ]
        recent = self.store.fetch_values(
            EPISODES, scope=user_id, where={"consolidated_into": None}, order_by=["-at"], limit=20
        )
        rows = {str(r[EPISODE_ID]): r for r in recent}
        missing = [i for i in dict.fromkeys((*text_hits, *vector_hits)) if i not in rows]
        if missing:
            for row in self.store.fetch_values(
                EPISODES, scope=user_id, where={"episode_id": missing}
            ):
                rows[str(row[EPISODE_ID])] = row
        scores = fuse(
            [
                (weights.text, text_hits),
                (weights.vector, vector_hits),
                (weights.recency, [str(r[EPISODE_ID]) for r in recent]),
            ],
            weights.k,
        )
        limit = format_time(when)
        kept = [
            eid
            for eid, r in rows.items()
            if r[EPISODE_CONSOLIDATED] is None and (as_of is None or str(r[EPISODE_AT]) <= limit)
        ]
        kept.sort(key=lambda eid: -scores.get(eid, 0.0))
        return [episode_from_values(rows[eid]) for eid in kept[:CANDIDATES]]

    def _wiki(self, user_id: str, sections: Sequence[str] | None) -> list[str]:
        """The wiki sections of ``sections`` (all of them, the user's first, when None)."""
        where: dict[str, object] = {} if sections is None else {"section": list(sections)}
        rows = self.store.fetch(WIKI, scope=user_id, where=where, limit=100)
        rows.sort(key=lambda r: (r["section"] != USER, str(r["section"])))
        return [str(r["text"]) for r in rows]

    def _commitments(self, user_id: str, when: datetime) -> list[Episode]:
        """Commitments due from today to a week ahead (an indexed range on ``due``)."""
        today = when.date().isoformat()
        horizon = (when + timedelta(days=7)).date().isoformat()
        rows = self.store.fetch_values(
            EPISODES,
            scope=user_id,
            where={"kind": "commitment", "due": Range(today, horizon)},
            order_by=["due"],
            limit=50,
        )
        return [episode_from_values(r) for r in rows]

    def _briefing(
        self,
        user_id: str,
        budget: int,
        when: datetime,
        as_of: datetime | None,
        include_claims: bool,
    ) -> Recall:
        rows = self.store.fetch_values(
            FACTS,
            scope=user_id,
            where={"state": "current"},
            order_by=["-trust", "-last_confirmed_at"],
            limit=candidate_cap(budget),
        )
        facts = [fact_from_values(r, when, self.config) for r in rows]
        trusted = [
            f for f in facts if f.status == "current" and (as_of is None or valid_at(f, when))
        ]
        stale = [f for f in facts if f.status == "stale"]
        recent = [
            episode_from_values(r)
            for r in self.store.fetch_values(
                EPISODES,
                scope=user_id,
                where={"consolidated_into": None},
                order_by=["-at"],
                limit=20,
            )
        ]
        claims: list[Fact] = []
        if include_claims:
            claims = [
                fact_from_values(r, when, self.config)
                for r in self.store.fetch_values(
                    FACTS,
                    scope=user_id,
                    where={"state": "quarantined"},
                    order_by=["-recorded_seq"],
                    limit=20,
                )
            ]
        return self._render(
            trusted,
            claims,
            recent,
            self._wiki(user_id, None),
            self._commitments(user_id, when),
            budget,
            when,
            [],
            user_id,
            needs_confirmation=stale,
        )

    # ---- rendering ----------------------------------------------------------------------

    def _render(
        self,
        facts: list[Fact],
        claims: list[Fact],
        episodes: list[Episode],
        wiki: list[str],
        commitments: list[Episode],
        budget: int,
        when: datetime,
        entities: list[str],
        user_id: str,
        needs_confirmation: Sequence[Fact] = (),
    ) -> Recall:
        """Read the other side of each contested fact, render the sections into ``budget``,
        and keep of each list what made it into the text."""
        contested = [f for f in facts if f.contested_with]
        contested_ids = {f.id for f in contested}
        others: dict[str, Fact] = {}
        wanted = sorted({i for f in contested for i in f.contested_with} - contested_ids)
        if wanted:
            for row in self.store.fetch_values(FACTS, scope=user_id, where={"fact_id": wanted}):
                others[str(row[FACT_ID])] = fact_from_values(row, when, self.config)
        pool = {**others, **{f.id: f for f in contested}}
        plain = [f for f in facts if f.id not in contested_ids]
        sections = recall_sections(
            contested=contest_lines(contested, pool),
            facts=plain,
            needs_confirmation=needs_confirmation,
            commitments=commitments,
            wiki=wiki,
            episodes=episodes,
            claims=claims,
        )
        out: Rendered = render(sections, budget, self.config.token_counter)

        def kept(key: str) -> list[int]:
            return out.included.get(key, [])

        return Recall(
            text=out.text,
            facts=tuple(plain[i] for i in kept("facts")) + tuple(contested),
            episodes=tuple(episodes[i] for i in kept("episodes")),
            claims=tuple(claims[i] for i in kept("claims")),
            contested=tuple(contested),
            tokens=out.tokens,
            truncated=out.truncated,
            wiki=tuple(wiki[i] for i in kept("wiki")),
            omitted=out.omitted,
            entities=tuple(entities),
        )


__all__ = [  # the ranking rules kept importable from here, where they used to live
    "CANDIDATES",
    "HOP_FROM",
    "MAX_GRAPH_FACTS",
    "TOKENS_PER_LINE",
    "Recall",
    "Recaller",
    "Values",
    "candidate_cap",
    "fuse",
    "procedural_factor",
    "valid_at",
    "with_coverage",
]
