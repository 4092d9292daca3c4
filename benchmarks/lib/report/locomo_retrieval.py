"""The LoCoMo-retrieval section: evidence recall of ``Memory.recall`` against BM25, dense
retrieval and their RRF, overall, per category and per half (tuned on one, reported on both)."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.report.common import Report, source_line
from benchmarks.lib.results import Loaded

LOCOMO_LABELS = {
    "veil": "Veil `Memory.recall` (episodes)",
    "veil-untuned": "Veil before the split tuning",
    "bm25": "BM25 (k1=1.2, b=0.75, stop-words)",
    "dense": "dense (default embedder, cosine)",
    "rrf": "RRF(k=60) of BM25 + dense",
}


LOCOMO_CATEGORIES = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}


def locomo_table(report: Report) -> str:
    """Overall recall_all@k and recall_frac@k per retriever."""
    lines = [
        "| retriever | all@1 | all@5 | all@10 | all@20 | frac@5 | frac@10 | frac@20 "
        "| README all@10 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    refs: dict[str, float] = report.get("reference_recall_all_10", {})
    for name, r in report["retrievers"].items():
        ra, rf = r["recall_all"], r["recall_frac"]
        ref = refs.get(name)
        lines.append(
            f"| {LOCOMO_LABELS.get(name, name)} | {ra['@1']:.3f} | {ra['@5']:.3f} "
            f"| {ra['@10']:.3f} | {ra['@20']:.3f} | {rf['@5']:.3f} | {rf['@10']:.3f} "
            f"| {rf['@20']:.3f} | {'—' if ref is None else f'{ref:.3f}'} |"
        )
    return "\n".join(lines)


def locomo_category_table(report: Report) -> str:
    """recall_all@5/@10/@20 and recall_frac@10 per category and retriever."""
    first = next(iter(report["retrievers"].values()))
    head = " | ".join(
        f"{name} (n={first['by_category'][c]['questions']}) all@5 | all@10 | all@20 | frac@10"
        for c, name in LOCOMO_CATEGORIES.items()
    )
    lines = [f"| retriever | {head} |", "| --- |" + " ---: |" * (4 * len(LOCOMO_CATEGORIES))]
    for name, r in report["retrievers"].items():
        cells: list[str] = []
        for c in LOCOMO_CATEGORIES:
            cat = r["by_category"][c]
            ra, rf = cat["recall_all"], cat["recall_frac"]
            cells.append(f"{ra['@5']:.3f} | {ra['@10']:.3f} | {ra['@20']:.3f} | {rf['@10']:.3f}")
        lines.append(f"| {LOCOMO_LABELS.get(name, name)} | {' | '.join(cells)} |")
    return "\n".join(lines)


def locomo_halves_table(report: Report) -> str:
    """recall_all@k per retriever on the tuning half and on the held-out half."""
    halves: dict[str, Any] = report.get("halves", {})
    lines = [
        "| retriever | tuning half (conv. 1-5) all@5 | all@10 | all@20 "
        "| held-out half (conv. 6-10) all@5 | all@10 | all@20 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name in report["retrievers"]:
        cells: list[str] = []
        for half in ("tune", "held_out"):
            r = halves.get(half, {}).get(name)
            for k in (5, 10, 20):
                cells.append("–" if r is None else f"{r['recall_all'][f'@{k}']:.3f}")
        lines.append(f"| {LOCOMO_LABELS.get(name, name)} | {' | '.join(cells)} |")
    return "\n".join(lines)


def locomo_tune_line(report: Report) -> str:
    tuned: dict[str, Any] | None = report.get("tune")
    weights: dict[str, Any] = report.get("episode_weights", {})
    if not tuned:
        return ""
    grid: list[dict[str, Any]] = tuned["grid"]
    at10 = sorted(r["@10"] for r in grid)
    return (
        f"Episode fusion weights (`MemoryConfig.episode_weights`) chosen by "
        f"`python -m benchmarks.locomo_retrieval --tune` on conversations "
        f"{', '.join(tuned['conversations'])} only ({tuned['questions']} questions; "
        f"{len(grid)} combinations of vector weight, recency weight and RRF k; recall_all@10 "
        f"ranged {at10[0]:.3f}-{at10[-1]:.3f}; rule: {tuned['rule']}): chosen "
        f"{tuned['chosen']}, now the default {weights.get('tuned')}; before: "
        f"{weights.get('untuned')}."
    )


def locomo_reading(report: Report) -> str:
    """One paragraph generated from the numbers: where Veil wins and where it loses."""
    rs: dict[str, Any] = report["retrievers"]
    veil = rs["veil"]
    parts = [
        f"Turn-level evidence recall over {len(report['conversations'])} conversation(s) "
        f"({report['questions']:,} questions of categories 1-4, {report['turns']:,} turns), no "
        "LLM anywhere; each turn is remembered as one episode and nothing else (no extracted "
        "facts), so this measures recall's episode ranking: weighted RRF of FTS5, vector "
        "search and recency over at most 50 candidates."
    ]
    baselines = [n for n in ("bm25", "dense", "rrf") if n in rs]
    v10 = veil["recall_all"]["@10"]
    comparisons: list[str] = []
    for name in baselines:
        b10 = rs[name]["recall_all"]["@10"]
        sign = "+" if v10 >= b10 else "-"
        comparisons.append(f"{name} {b10:.3f} ({sign}{abs(v10 - b10) * 100:.1f} points)")
    parts.append(f"Veil reaches recall_all@10 {v10:.3f} vs " + ", ".join(comparisons) + ".")
    held: dict[str, Any] = report.get("halves", {}).get("held_out", {})
    if "veil" in held and baselines:
        best_base = max(
            (n for n in baselines if n in held), key=lambda n: held[n]["recall_all"]["@10"]
        )
        hv, hb = held["veil"]["recall_all"]["@10"], held[best_base]["recall_all"]["@10"]
        parts.append(
            f"On the held-out conversations 6-10 (never used to choose the weights) Veil "
            f"reaches {hv:.3f} vs the best baseline there, {best_base}, {hb:.3f} "
            f"({'+' if hv >= hb else '-'}{abs(hv - hb) * 100:.1f} points)."
        )
    best = max(rs, key=lambda n: rs[n]["recall_all"]["@10"])
    if best not in ("veil", "veil-untuned"):
        parts.append(f"So Veil loses to {best} at k=10 over all ten conversations.")
    wins = [
        f"@{k}"
        for k in (5, 20)
        if all(veil["recall_all"][f"@{k}"] >= rs[n]["recall_all"][f"@{k}"] for n in baselines)
    ]
    if wins:
        parts.append(f"Veil beats every baseline at {' and '.join(wins)} too.")
    losses: list[str] = []
    for c, label in LOCOMO_CATEGORIES.items():
        v = veil["by_category"][c]["recall_all"]["@10"]
        top = max(baselines, key=lambda n, c=c: rs[n]["by_category"][c]["recall_all"]["@10"])
        t = rs[top]["by_category"][c]["recall_all"]["@10"]
        if t - v >= 0.01:
            losses.append(f"{label} ({v:.3f} vs {top} {t:.3f})")
    if losses:
        parts.append(
            "Per category at k=10 Veil trails the best baseline on " + ", ".join(losses) + "."
        )
    multi = veil["by_category"]["1"]["recall_all"]["@10"]
    parts.append(
        f"Multi-hop questions are the weak spot of every single-shot retriever here (Veil "
        f"{multi:.3f} at k=10): all evidence turns must be in the top k at once."
    )
    refs: dict[str, float] = report.get("reference_recall_all_10", {})
    if refs and not report.get("quick"):
        diffs = {n: rs[n]["recall_all"]["@10"] - refs[n] for n in refs if n in rs}
        listed = ", ".join(f"{n} {rs[n]['recall_all']['@10']:.3f} vs {refs[n]:.3f}" for n in diffs)
        worst = max(abs(d) for d in diffs.values()) if diffs else 0.0
        parts.append(
            f"The baselines land within {worst * 100:.1f} points of shared/data/README.md's "
            f"recall_all@10 ({listed}); the README's exact tokeniser and stop-word list are not "
            "known, so small differences are expected."
        )
    lat = report.get("veil_recall_ms", {})
    if lat:
        parts.append(
            f"`Memory.recall` took p50 {lat['p50']:.1f} ms / p95 {lat['p95']:.1f} ms per "
            f"question over 369-689 episodes per scope (ingest {report['veil_ingest_s']:.1f} s "
            "for all turns)."
        )
    return " ".join(parts)


def section(loaded: Loaded, other: Loaded | None) -> str:
    data = loaded.data
    lines = [
        locomo_table(data),
        "",
        "Per category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop; 5 excluded):",
        "",
        locomo_category_table(data),
        "",
        "Split (tuned on one half, reported on both):",
        "",
        locomo_halves_table(data),
        "",
        locomo_tune_line(data),
        "",
        f"Setup: embedder `{data['embedder']}`; Veil on SQLite ({data.get('temp_fs', '?')}), one "
        f"scope per conversation, `token_budget={data['token_budget']:,}`; BM25 "
        f"k1={data['bm25']['k1']}, b={data['bm25']['b']}, {data['bm25']['stop_words']} "
        f"stop-words, no stemming, per-conversation IDF; RRF k={data['rrf_k']}; "
        f"{source_line(data.get('source', {}))}; the run took {data['seconds']:,.0f} s. "
        "LoCoMo (Maharana et al., ACL 2024) is CC BY-NC 4.0 and is read from the shared data "
        "folder, never copied here.",
        "",
        locomo_reading(data),
    ]
    return "\n".join(lines)
