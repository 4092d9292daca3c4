"""Recall: hybrid retrieval fused by reciprocal rank, rendered into a token budget. No LLM.

Sources, each a scoped, indexed query (nothing scans a user's rows in Python):
(a) the entity graph — entities named in the query (resolved like writes, aliases included),
their current facts, facts pointing at them, and one hop to the entities their facts name;
(b) the wiki sections compiled by ``maintain`` for those entities (or the user);
(c) episodes by relevance (full text, vectors) and recency;
(d) full-text (FTS5/BM25, tsvector) over facts and episodes;
(e) vector search (sqlite-vec, pgvector) — the only semantic signal for queries that name no
entity, and a fused signal otherwise.
Ranked lists are fused with weighted reciprocal-rank fusion (``RecallWeights``).

Relevance floor: a fact is a candidate only when something relates it to the query — the query
names its subject (or its object), asks its relation ("which editor": ``prefers``,
``uses_tool``, of the user when no one else is named), matches its text, or is close to it by
embedding (a cosine of at least ``MemoryConfig.fact_min_similarity``). So an unrelated query
gets no facts, and no notes either (the user's wiki section comes with a query about the user
or one that found facts). Deterministic: the same store and query give the same result.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
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
from veil.memory.render import Rendered, Section, render
from veil.memory.rows import (
    EPISODE_AT,
    EPISODE_CONSOLIDATED,
    EPISODE_ID,
    FACT_ID,
    FACT_LAST_CONFIRMED,
    FACT_LAST_OUTCOME,
    FACT_OBJECT_KEY,
    FACT_RELATION,
    FACT_TIMES_USED,
    FACT_TRUST,
    FACT_VALID_FROM,
    FACT_VALID_TO,
    episode_from_values,
    fact_from_values,
    stale_before,
    status_of,
)
from veil.tape import JSONValue, Range, Store

CANDIDATES = 50
"""Hits taken from each full-text and vector search."""
TOKENS_PER_LINE = 20
"""About what one rendered fact line costs; sizes the candidate lists to the budget."""
MAX_GRAPH_FACTS = 200
HOP_FROM = 8
"""One hop is taken from the objects of this many of the first direct facts."""

Values = tuple[JSONValue, ...]


def candidate_cap(token_budget: int) -> int:
    """Graph candidates worth reading for ``token_budget``: about twice what it can render,
    at most :data:`MAX_GRAPH_FACTS`."""
    return max(4, min(MAX_GRAPH_FACTS, 2 * (token_budget // TOKENS_PER_LINE)))


def _unique(rows: Iterable[Values]) -> list[Values]:
    """Rows in order, the first of each fact id."""
    seen: dict[str, Values] = {}
    for row in rows:
        seen.setdefault(str(row[FACT_ID]), row)
    return list(seen.values())


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


def fuse(rankings: Iterable[tuple[float, Sequence[str]]], k: int) -> dict[str, float]:
    """Weighted reciprocal-rank fusion of ranked id lists."""
    scores: dict[str, float] = {}
    for weight, ids in rankings:
        for rank, doc in enumerate(dict.fromkeys(ids)):
            scores[doc] = scores.get(doc, 0.0) + weight / (k + rank + 1)
    return scores


def valid_at(fact: Fact, when: datetime) -> bool:
    return fact.valid_from <= when and (fact.valid_to is None or fact.valid_to > when)


def procedural_factor(row: Values) -> float:
    """Procedural facts rank by how they worked out: used often and last successful first."""
    factor = 1.0 + 0.1 * math.log1p(int(cast(int, row[FACT_TIMES_USED] or 0)))
    if row[FACT_LAST_OUTCOME] is False:
        factor *= 0.5
    return factor


def with_coverage(
    ranked: Sequence[str], day: Callable[[str], str], share: float, slots: int
) -> list[str]:
    """Reserve ``share`` of the ``slots`` for days (``day(id)``) not yet represented by the
    relevance head."""
    if share <= 0 or slots <= 0:
        return list(ranked)
    head_size = max(1, math.ceil(slots * (1 - share)))
    head = list(ranked[:head_size])
    days = {day(i) for i in head}
    rest = list(ranked[head_size:])
    fresh: list[str] = []
    for i in rest:
        if day(i) not in days:
            fresh.append(i)
            days.add(day(i))
    chosen = set(fresh)
    return [*head, *fresh, *(i for i in rest if i not in chosen)]


def _split(
    rows: Mapping[str, Values], status: Mapping[str, FactStatus], when: str, as_of: object
) -> tuple[list[str], list[str]]:
    """Ids of the trusted facts to rank and of the claims (quarantined) at ``when`` (stored
    time text); with ``as_of``, what was valid then."""
    trusted: list[str] = []
    claims: list[str] = []
    for fid, row in rows.items():
        state = status[fid]
        valid_from = str(row[FACT_VALID_FROM])
        if state == "quarantined":
            if as_of is None or valid_from <= when:
                claims.append(fid)
            continue
        if as_of is not None:
            valid_to = row[FACT_VALID_TO]
            if state in ("disputed", "lapsed") or valid_from > when:
                continue
            if valid_to is not None and str(valid_to) <= when:
                continue
            trusted.append(fid)
        elif state in ("current", "stale"):
            trusted.append(fid)
    return trusted, claims


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
        trusted, claims = _split(rows, status, format_time(when), as_of)
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
        direct = _unique(direct)[:cap]
        others = [k for k in entities if k != USER] or entities
        incoming = _unique(
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
        return _unique([*direct, *incoming, *hop])

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
        contested = [f for f in facts if f.contested_with]
        contested_ids = {f.id for f in contested}
        others: dict[str, Fact] = {}
        wanted = sorted({i for f in contested for i in f.contested_with} - contested_ids)
        if wanted:
            for row in self.store.fetch_values(FACTS, scope=user_id, where={"fact_id": wanted}):
                others[str(row[FACT_ID])] = fact_from_values(row, when, self.config)
        pool = {**others, **{f.id: f for f in contested}}
        contest_lines: list[str] = []
        done: set[frozenset[str]] = set()
        for fact in contested:
            for other_id in fact.contested_with:
                other = pool.get(other_id)
                pair = frozenset((fact.id, other_id))
                if other is None or pair in done or other.status not in ("current", "stale"):
                    continue
                done.add(pair)
                contest_lines.append(
                    f"- {_who(fact)} says: {fact.statement} — but "
                    f"{_who(other)} says: {other.statement}"
                )
        plain = [f for f in facts if f.id not in contested_ids]
        sections = [
            Section("contested", "Contested (both sides kept; ask the user)", contest_lines),
            Section("facts", "Facts", [_fact_line(f) for f in plain]),
            Section(
                "needs_confirmation",
                "Possibly stale — confirm with the user",
                [_fact_line(f) for f in needs_confirmation],
            ),
            Section("commitments", "Due soon", [f"- due {e.due}: {e.text}" for e in commitments]),
            Section("wiki", "Notes", wiki, share=1 / 3),
            Section(
                "episodes",
                "Episodes",
                [f"- {e.at.date().isoformat()} {e.kind}: {e.text}" for e in episodes],
            ),
            Section(
                "claims",
                "Unverified third-party claims (never assert as fact)",
                [_claim_line(f) for f in claims],
            ),
        ]
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


def _who(fact: Fact) -> str:
    return f"{fact.provenance.author_of_evidence} ({fact.valid_from.date().isoformat()})"


def _fact_line(fact: Fact) -> str:
    line = f"- {fact.statement}"
    if fact.trust < 3:
        # Only the user's own word is user-level; anything else is marked where it is shown.
        line += f" (per {fact.provenance.author_of_evidence}; not confirmed by the user)"
    if fact.status == "stale":
        line += f" (possibly stale — last confirmed {fact.last_confirmed_at.date().isoformat()})"
    if "ungrounded" in fact.flags:
        line += " (detail not in the source)"
    if fact.valid_to is not None:
        line += f" (until {fact.valid_to.date().isoformat()})"
    return line


def _claim_line(fact: Fact) -> str:
    who = (
        fact.provenance.claimant
        if fact.provenance.claimant != "user"
        else fact.provenance.author_of_evidence
    )
    return f"- {who} claims: {fact.statement} ({fact.valid_from.date().isoformat()})"
