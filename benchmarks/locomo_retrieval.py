"""LoCoMo evidence recall of ``Memory.recall`` over remembered turns, against three baselines.

Run from the repository root (``veil`` must be importable, e.g. installed with ``make``)::

    python -m benchmarks.locomo_retrieval            # all 10 conversations, 1,536 questions
    python -m benchmarks.locomo_retrieval --quick    # the first 2 conversations

No LLM anywhere: this measures retrieval only, at turn level, per conversation.

What is measured, exactly:

- **Data**: LoCoMo (``locomo10.json``, CC BY-NC 4.0, read from ``$VEIL_SHARED_DIR/data`` or
  ``<repo>/../shared/data``; never copied into the repository). Every turn is one item, its
  text ``"{speaker}: {text}"`` with ``" [shares a photo of <blip_caption>]"`` appended for
  image turns. Questions of categories 1-4 with at least one valid evidence turn after the
  normalisation of shared/data/README.md ("Evidence quirks": ``D:?(\\d+):(\\d+)`` matches,
  unknown turn ids dropped); category 5 (adversarial) is excluded. 1,536 questions in all.
- **Veil**: one SQLite store (temp dir, default ``synchronous``) with the default embedder,
  one scope per conversation. Each turn is appended as a ``memory.episode`` event (kind
  ``interaction``, the text above, ``at`` = the session's ``session_<n>_date_time``, the
  turn's dia_id kept in a map from episode id) with ``memory.store.append``, so the FTS and
  vector indexes are built by the real projection. Each question is asked with
  ``Memory.recall(question, user_id=<conversation scope>, token_budget=1_000_000)``; the budget
  is large so rendering drops nothing, and ``Recall.episodes`` (at most 50, the recaller's
  candidate cap) is the ranked list scored. There are no facts, so the entity graph is empty
  and the episode ranking is recall's weighted RRF of FTS5 (BM25), vector search and recency.
- **BM25**: k1 = 1.2, b = 0.75, IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))`` per conversation,
  lower-cased ``[a-z0-9]+`` tokens minus an English stop-word list, no stemming; over the same
  turn texts. Reference (README): recall_all@10 .519.
- **Dense**: cosine between the default embedder's vectors of the question and of every turn
  (exact, numpy). Reference (README, same embedder): .404.
- **RRF**: plain reciprocal-rank fusion of the BM25 and dense rankings,
  ``1/(60 + rank_bm25) + 1/(60 + rank_dense)`` over all turns. Reference (README): .508.
- Ties in every baseline are broken by turn order. For each question, ``recall_all@k`` = 1 when
  every evidence turn is in the top k, ``recall_frac@k`` = the share of evidence turns in the
  top k; both averaged overall and per category (1 multi-hop, 2 temporal, 3 open-domain,
  4 single-hop), for k in 1, 5, 10, 20.
- Also recorded: the ingest time and the per-question wall time of ``Memory.recall``.

- **Veil before the split tuning**: the same, with the episode fusion weights Veil had before
  (``vector 0.8, recency 0.3, k 60``), for comparison in the same run.
- **Split**: every number is also reported per half — conversations 1-5 (the tuning half) and
  6-10 (held out). ``--tune`` grids the episode weights on the tuning half only and writes
  ``locomo_tune.json``; the chosen weights became ``MemoryConfig.episode_weights``. The held-out
  half never entered the choice.

Results are printed as markdown tables and written as JSON to
``benchmarks/results/locomo_retrieval.json`` (``locomo_retrieval-quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.lib.locomo import Conversation, load_locomo, session_dates
from benchmarks.lib.machine import describe, filesystem_of, source_state, sqlite_version
from benchmarks.lib.paths import LOCOMO
from benchmarks.lib.report.locomo_retrieval import locomo_category_table, locomo_table
from benchmarks.lib.results import read, save
from benchmarks.lib.timing import MS, summary
from veil.clock import format_time
from veil.embed import default_embedder
from veil.embed.protocol import Embedder
from veil.memory.config import MemoryConfig, RecallWeights
from veil.memory.memory import Memory
from veil.tape import Event
from veil.testing import FakeClock

KS = (1, 5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
RRF_K = 60
BM25_K1 = 1.2
BM25_B = 0.75
TOKEN_BUDGET = 1_000_000
REFERENCE_ALL_10 = {"bm25": 0.519, "dense": 0.404, "rrf": 0.508}
RETRIEVERS = ("veil", "veil-untuned", "bm25", "dense", "rrf")
UNTUNED = RecallWeights(text=1.0, vector=0.8, recency=0.3, k=60)
"""The episode fusion weights before the split tuning (then shared with facts)."""
TUNE_HALF = 5
"""Conversations 1-5 (file order) are the tuning half, 6-10 the held-out half."""
GRID_VECTOR = (0.2, 0.4, 0.6, 0.8, 1.0)
GRID_RECENCY = (0.0, 0.1, 0.3)
GRID_K = (10, 30, 60)
_TOKEN = re.compile(r"[a-z0-9]+")
_SESSION = re.compile(r"D:?(\d+):\d+")

_STOP_WORDS_TEXT = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t don ll m re ve d o y"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


def tokens(text: str) -> list[str]:
    """Lower-cased alphanumeric tokens without stop-words (the BM25 baseline's analyser)."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOP_WORDS]


class BM25:
    """Okapi BM25 over one conversation's turns (k1 = 1.2, b = 0.75, non-negative IDF)."""

    def __init__(self, docs: Sequence[str]) -> None:
        self.docs = [Counter(tokens(d)) for d in docs]
        self.lengths = np.array([sum(c.values()) for c in self.docs], dtype=np.float64)
        self.avg = float(self.lengths.mean()) if len(docs) else 0.0
        df: Counter[str] = Counter()
        for c in self.docs:
            df.update(c.keys())
        n = len(docs)
        self.idf = {t: math.log(1.0 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: str) -> NDArray[np.float64]:
        out = np.zeros(len(self.docs), dtype=np.float64)
        norm = BM25_K1 * (1.0 - BM25_B + BM25_B * self.lengths / max(self.avg, 1e-9))
        for term in set(tokens(query)):
            idf = self.idf.get(term)
            if idf is None:
                continue
            tf = np.array([c.get(term, 0) for c in self.docs], dtype=np.float64)
            out += idf * tf * (BM25_K1 + 1.0) / (tf + norm)
        return out


def ranking(scores: NDArray[np.float64]) -> list[int]:
    """Indices by score descending, ties by position (a stable sort)."""
    return [int(i) for i in np.argsort(-scores, kind="stable")]


def rrf(*rankings: Sequence[int], k: int = RRF_K) -> list[int]:
    """Plain reciprocal-rank fusion of full rankings; ties by position."""
    n = max((len(r) for r in rankings), default=0)
    fused = np.zeros(n, dtype=np.float64)
    for r in rankings:
        for rank, i in enumerate(r):
            fused[i] += 1.0 / (k + rank + 1)
    return ranking(fused)


@dataclass
class Scores:
    """Per-question hits for one retriever."""

    all_at: dict[int, list[float]]
    frac_at: dict[int, list[float]]
    categories: list[int]

    @classmethod
    def empty(cls) -> Scores:
        return cls({k: [] for k in KS}, {k: [] for k in KS}, [])

    def add(self, evidence: frozenset[str], ranked: Sequence[str], category: int) -> None:
        for k in KS:
            top = set(ranked[:k])
            self.all_at[k].append(float(evidence <= top))
            self.frac_at[k].append(len(evidence & top) / len(evidence))
        self.categories.append(category)

    def summary(self) -> dict[str, Any]:
        cats = np.array(self.categories)

        def mean(values: list[float], mask: NDArray[np.bool_] | None = None) -> float:
            a = np.array(values, dtype=np.float64)
            if mask is not None:
                a = a[mask]
            return round(float(a.mean()), 4) if a.size else 0.0

        by_category: dict[str, Any] = {}
        for c, name in CATEGORIES.items():
            mask = cats == c
            by_category[str(c)] = {
                "name": name,
                "questions": int(mask.sum()),
                "recall_all": {f"@{k}": mean(self.all_at[k], mask) for k in KS},
                "recall_frac": {f"@{k}": mean(self.frac_at[k], mask) for k in KS},
            }
        return {
            "questions": len(self.categories),
            "recall_all": {f"@{k}": mean(v) for k, v in self.all_at.items()},
            "recall_frac": {f"@{k}": mean(v) for k, v in self.frac_at.items()},
            "by_category": by_category,
        }


def ingest(
    memory: Memory, scope: str, conv: Conversation, dates: dict[int, datetime]
) -> dict[str, str]:
    """Append every turn as a ``memory.episode``; returns ``{episode_id: dia_id}``."""
    events: list[Event] = []
    ids: dict[str, str] = {}
    for n, turn in enumerate(conv.turns):
        match = _SESSION.match(turn.dia_id)
        assert match is not None, turn.dia_id
        at = dates[int(match.group(1))]
        episode_id = f"ep_{conv.sample_id}_{n:04d}"
        ids[episode_id] = turn.dia_id
        events.append(
            Event(
                id=f"ev_{conv.sample_id}_{n:04d}",
                scope=scope,
                kind="memory.episode",
                at=at,
                actor="user",
                payload={
                    "episode": {
                        "episode_id": episode_id,
                        "kind": "interaction",
                        "text": turn.indexed,
                        "at": format_time(at),
                        "due": None,
                        "event_id": f"ev_{conv.sample_id}_{n:04d}",
                        "session_id": f"{conv.sample_id}/session_{match.group(1)}",
                    }
                },
            )
        )
    memory.store.append(events)
    return ids


def run(
    convs: list[Conversation], dates: dict[str, dict[int, datetime]], embedder: Embedder, db: Path
) -> dict[str, Any]:
    scores = {name: Scores.empty() for name in RETRIEVERS}
    halves = {h: {name: Scores.empty() for name in RETRIEVERS} for h in ("tune", "held_out")}
    latencies: list[float] = []
    ingest_s = 0.0
    short_lists = 0
    last = max(d for per in dates.values() for d in per.values())
    clock = FakeClock(last + timedelta(days=1))
    untuned_config = MemoryConfig(episode_weights=UNTUNED)
    with (
        Memory(f"sqlite:///{db}", embedder=embedder, clock=clock) as memory,
        Memory(f"sqlite:///{db}", embedder=embedder, clock=clock, config=untuned_config) as untuned,
    ):
        for position, conv in enumerate(convs):
            half = halves["tune" if position < TUNE_HALF else "held_out"]
            scope = f"locomo:{conv.sample_id}"
            t0 = time.perf_counter()
            ids = ingest(memory, scope, conv, dates[conv.sample_id])
            ingest_s += time.perf_counter() - t0
            dia = [t.dia_id for t in conv.turns]
            texts = [t.indexed for t in conv.turns]
            bm25 = BM25(texts)
            doc_vecs = np.asarray(embedder.embed(texts), dtype=np.float32)
            q_vecs = np.asarray(embedder.embed([q.text for q in conv.questions]), dtype=np.float32)
            for q, q_vec in zip(conv.questions, q_vecs, strict=True):
                t0 = time.perf_counter()
                result = memory.recall(q.text, user_id=scope, token_budget=TOKEN_BUDGET)
                latencies.append(time.perf_counter() - t0)
                veil_ranked = [ids[e.id] for e in result.episodes]
                if len(veil_ranked) < max(KS):
                    short_lists += 1
                before = untuned.recall(q.text, user_id=scope, token_budget=TOKEN_BUDGET)
                r_bm25 = ranking(bm25.scores(q.text))
                r_dense = ranking((doc_vecs @ q_vec).astype(np.float64))
                r_rrf = rrf(r_bm25, r_dense)
                ranked = {
                    "veil": veil_ranked,
                    "veil-untuned": [ids[e.id] for e in before.episodes],
                    "bm25": [dia[i] for i in r_bm25],
                    "dense": [dia[i] for i in r_dense],
                    "rrf": [dia[i] for i in r_rrf],
                }
                for name, ranks in ranked.items():
                    scores[name].add(q.evidence, ranks, q.category)
                    half[name].add(q.evidence, ranks, q.category)
    return {
        "retrievers": {name: s.summary() for name, s in scores.items()},
        "halves": {
            h: {name: s.summary() for name, s in per.items() if s.categories}
            for h, per in halves.items()
        },
        "veil_ingest_s": round(ingest_s, 2),
        "veil_recall_ms": summary(latencies, ("p50", "p95", "mean"), scale=MS, digits=2),
        "veil_lists_shorter_than_20": short_lists,
    }


def vars_of(weights: RecallWeights) -> dict[str, float]:
    return {
        "text": weights.text,
        "vector": weights.vector,
        "recency": weights.recency,
        "k": weights.k,
    }


def _tune_record() -> dict[str, Any] | None:
    """What ``--tune`` chose and on what (if it was run), for the report."""
    data = read("locomo_tune")
    if data is None:
        return None
    return {k: data[k] for k in ("conversations", "questions", "chosen", "rule", "grid")}


def tune(
    convs: list[Conversation], dates: dict[str, dict[int, datetime]], embedder: Embedder, db: Path
) -> dict[str, Any]:
    """Grid over the episode fusion weights on the tuning half only (conversations 1-5).

    Rule: the highest recall_all@10; ties go to the larger recency weight (memory in use is
    recency-biased, LoCoMo questions are not, so the benchmark cannot tell), then to the higher
    recall_all@5. The held-out half is never evaluated here."""
    half = convs[:TUNE_HALF]
    last = max(d for per in dates.values() for d in per.values())
    clock = FakeClock(last + timedelta(days=1))
    ids: dict[str, str] = {}
    with Memory(f"sqlite:///{db}", embedder=embedder, clock=clock) as memory:
        for conv in half:
            ids.update(ingest(memory, f"locomo:{conv.sample_id}", conv, dates[conv.sample_id]))
    grid: list[dict[str, Any]] = []
    for vector in GRID_VECTOR:
        for recency in GRID_RECENCY:
            for k in GRID_K:
                weights = RecallWeights(text=1.0, vector=vector, recency=recency, k=k)
                s = Scores.empty()
                config = MemoryConfig(episode_weights=weights)
                with Memory(
                    f"sqlite:///{db}", embedder=embedder, clock=clock, config=config
                ) as memory:
                    for conv in half:
                        for q in conv.questions:
                            r = memory.recall(
                                q.text,
                                user_id=f"locomo:{conv.sample_id}",
                                token_budget=TOKEN_BUDGET,
                            )
                            s.add(q.evidence, [ids[e.id] for e in r.episodes], q.category)
                summary = s.summary()["recall_all"]
                row = {"text": 1.0, "vector": vector, "recency": recency, "k": k, **summary}
                print(f"vector {vector} recency {recency} k {k}: {summary}", flush=True)
                grid.append(row)
    best = max(grid, key=lambda r: (r["@10"], r["recency"], r["@5"]))
    return {
        "conversations": [c.sample_id for c in half],
        "questions": sum(len(c.questions) for c in half),
        "grid": grid,
        "chosen": {k: best[k] for k in ("text", "vector", "recency", "k")},
        "rule": "max recall_all@10 on the tuning half; ties: larger recency, then higher @5",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="LoCoMo evidence recall: Veil vs baselines.")
    parser.add_argument("--quick", action="store_true", help="the first 2 conversations")
    parser.add_argument("--out", type=Path, help="JSON output path")
    parser.add_argument("--dir", type=Path, help="where to create the temporary database")
    parser.add_argument(
        "--tune",
        action="store_true",
        help="grid over the episode weights on conversations 1-5 only; writes locomo_tune.json",
    )
    args = parser.parse_args(argv)
    quick: bool = args.quick
    started = time.perf_counter()
    if not LOCOMO.exists():
        print(f"LoCoMo not found at {LOCOMO}; set VEIL_SHARED_DIR", file=sys.stderr)
        return 2
    convs = load_locomo(LOCOMO)
    if quick:
        convs = convs[:2]
    dates = session_dates(LOCOMO)
    embedder = default_embedder()
    embedder.embed(["warm up"])
    if args.tune:
        with tempfile.TemporaryDirectory(prefix="veil-locomo-", dir=args.dir) as tmp:
            tuned = tune(convs, dates, embedder, Path(tmp) / "tune.db")
        tuned["seconds"] = round(time.perf_counter() - started, 1)
        print(f"chosen on conversations 1-{TUNE_HALF}: {tuned['chosen']}")
        save(tuned, "locomo_tune")
        return 0
    with tempfile.TemporaryDirectory(prefix="veil-locomo-", dir=args.dir) as tmp:
        measured = run(convs, dates, embedder, Path(tmp) / "locomo.db")
        temp_fs = filesystem_of(Path(tmp).parent)
    report: dict[str, Any] = {
        "quick": quick,
        "conversations": [c.sample_id for c in convs],
        "turns": sum(len(c.turns) for c in convs),
        "questions": sum(len(c.questions) for c in convs),
        "embedder": embedder.name,
        "token_budget": TOKEN_BUDGET,
        "bm25": {"k1": BM25_K1, "b": BM25_B, "stop_words": len(STOP_WORDS), "stemming": False},
        "rrf_k": RRF_K,
        "reference_recall_all_10": REFERENCE_ALL_10,
        "episode_weights": {
            "tuned": vars_of(MemoryConfig().episode_weights),
            "untuned": vars_of(UNTUNED),
        },
        "tune": _tune_record(),
        **measured,
        "source": source_state(),
        "temp_fs": temp_fs,
        "machine": describe(sqlite=sqlite_version()),
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(locomo_table(report))
    print()
    print(locomo_category_table(report))
    print()
    save(report, "locomo_retrieval", quick=quick, out=args.out)
    print(f"total {report['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
