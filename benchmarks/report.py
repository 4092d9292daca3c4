"""Render ``docs/benchmarks.md`` from the JSON results, without measuring anything.

Run from the repository root::

    python -m benchmarks.report            # rewrite docs/benchmarks.md
    python -m benchmarks.report --stdout   # print it instead

Each benchmark's full result (``benchmarks/results/NAME.json``) is used when it exists; the
quick one (``NAME-quick.json``) only when the full one is missing, and then it is labelled as
quick. A benchmark with neither is listed as not run. The "reading" paragraphs are generated
from the numbers in the JSON, so re-rendering never leaves prose that contradicts the tables.

Only the standard library is used here (no ``veil`` import), so the report renders even when
the package is broken or mid-edit.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.recall_report import (
    before_after_table,
    recall_latency_ratio_table,
    recall_latency_reading,
    recall_latency_table,
    recall_latency_type_table,
)

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
DOC = REPO / "docs" / "benchmarks.md"

Report = dict[str, Any]


@dataclass(frozen=True)
class Loaded:
    """One benchmark's JSON report and where it came from."""

    name: str
    data: Report
    path: Path
    quick: bool


def load(name: str, results: Path = RESULTS) -> Loaded | None:
    """The full result of ``name`` if present, else the quick one, else ``None``."""
    for quick, filename in ((False, f"{name}.json"), (True, f"{name}-quick.json")):
        path = results / filename
        if path.exists():
            data: Report = json.loads(path.read_text())
            return Loaded(name, data, path, quick)
    return None


def machine_line(machine: dict[str, Any]) -> str:
    parts = [
        f"{machine.get('platform', '?')}",
        f"{machine.get('cpus', '?')} CPUs",
        f"Python {machine.get('python', '?')}",
    ]
    if "sqlite" in machine:
        parts.append(f"SQLite {machine['sqlite']}")
    return ", ".join(parts)


# ---- embedders ------------------------------------------------------------------------------


def embedders_table(report: Report) -> str:
    """The table ``benchmarks.embedders`` prints, rebuilt from its JSON."""
    lines = [
        "| embedder | dim | load s | emb/s | size MB | recall_all@1 | @5 | @10 | @20 | @50 "
        "| frac@10 | questions |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in report["results"]:
        ra = r["recall_all"]
        lines.append(
            f"| {r['name']} | {r['dim']} | {r['load_s']:.2f} | {r['emb_per_s']:,.0f} "
            f"| {r['size_bytes'] / 1e6:.1f} | {ra['@1']:.3f} | {ra['@5']:.3f} "
            f"| {ra['@10']:.3f} | {ra['@20']:.3f} | {ra['@50']:.3f} "
            f"| {r['recall_frac_10']:.3f} | {r['questions']} |"
        )
    return "\n".join(lines)


def embedders_reading(report: Report) -> str:
    by_label: dict[str, dict[str, Any]] = {r["embedder"]: r for r in report["results"]}
    n_conv = len(report.get("conversations", []))
    questions = max((int(r["questions"]) for r in report["results"]), default=0)
    parts = [
        f"Dense-only, turn-level retrieval over {n_conv} LoCoMo conversation(s) "
        f"({questions:,} questions of categories 1-4); recall_all@k counts a question only when "
        "every evidence turn is in the top k, so it is strict."
    ]
    static, minilm, hashed = by_label.get("static"), by_label.get("minilm"), by_label.get("hash")
    if static and minilm:
        s10, m10 = static["recall_all"]["@10"], minilm["recall_all"]["@10"]
        speed = static["emb_per_s"] / max(minilm["emb_per_s"], 1e-9)
        if abs(s10 - m10) < 0.01:
            verdict = "matches the MiniLM ONNX model's recall@10 within a point"
        elif s10 > m10:
            verdict = f"beats the MiniLM ONNX model by {(s10 - m10) * 100:.1f} points of recall@10"
        else:
            verdict = f"trails the MiniLM ONNX model by {(m10 - s10) * 100:.1f} points of recall@10"
        parts.append(
            f"The default static embedder {verdict} ({s10:.3f} vs {m10:.3f}) while embedding "
            f"about {speed:,.0f}x faster on this CPU ({static['emb_per_s']:,.0f} vs "
            f"{minilm['emb_per_s']:,.0f} texts/s, one batch of "
            f"{report.get('throughput_texts', '?')} short turns) and loading in "
            f"{static['load_s']:.2f} s."
        )
    elif static:
        parts.append(
            f"The default static embedder reaches recall_all@10 "
            f"{static['recall_all']['@10']:.3f}; MiniLM was not measured "
            f"({report.get('skipped', {}).get('minilm', 'not installed')})."
        )
    if hashed and static:
        parts.append(
            f"The hashing embedder (no semantics, a floor) reaches "
            f"{hashed['recall_all']['@10']:.3f} at k=10, so a large share of the recall above "
            "comes from lexical overlap that any embedder catches; the static embedder adds "
            f"{(static['recall_all']['@10'] - hashed['recall_all']['@10']) * 100:.1f} points "
            "over it."
        )
    parts.append(
        "Absolute recall is low because single-turn dense retrieval cannot answer multi-hop "
        "(category 1) questions; this compares embedders, not Veil's recall pipeline."
    )
    return " ".join(parts)


# ---- write overhead -----------------------------------------------------------------------


def write_overhead_table(report: Report) -> str:
    """Per remember / per fact overhead percentiles and the append floor, per SQLite mode."""
    lines = [
        "| SQLite synchronous | per remember median ms | p95 | p99 | per fact median ms | p95 "
        "| p99 | store.append floor median ms | p95 | p99 | LLM calls / remember |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in report["results"]:
        pr, pf, fl = r["per_remember_ms"], r["per_fact_ms"], r["append_floor_ms"]
        calls = ", ".join(str(c) for c in r["llm_calls_per_remember"])
        lines.append(
            f"| {r['mode'].upper()} | {pr['median']:.2f} | {pr['p95']:.2f} | {pr['p99']:.2f} "
            f"| {pf['median']:.2f} | {pf['p95']:.2f} | {pf['p99']:.2f} "
            f"| {fl['median']:.2f} | {fl['p95']:.2f} | {fl['p99']:.2f} | {calls} |"
        )
    return "\n".join(lines)


def write_overhead_kind_table(report: Report) -> str:
    """Median overhead per kind of call, per SQLite mode."""
    lines = [
        "| SQLite synchronous | new (1-3 facts) ms | supersede (2 facts) ms "
        "| reinforce (2 facts) ms | time inside complete, median ms |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in report["results"]:
        k = r["by_kind_median_ms"]
        lines.append(
            f"| {r['mode'].upper()} | {k['new']:.2f} | {k['supersede']:.2f} "
            f"| {k['reinforce']:.2f} | {r['complete_ms']['median']:.4f} |"
        )
    return "\n".join(lines)


def write_overhead_reading(report: Report, other: Report | None = None) -> str:
    """One honest paragraph; ``other`` is the run at the other size (quick vs full), if any."""
    modes = {r["mode"]: r for r in report["results"]}
    full, normal = modes.get("full"), modes.get("normal")
    n = int(report["existing_facts"])
    parts: list[str] = []
    if full and normal:
        f_med, f_p99 = full["per_remember_ms"]["median"], full["per_remember_ms"]["p99"]
        n_med = normal["per_remember_ms"]["median"]
        floor_gap = full["append_floor_ms"]["median"] - normal["append_floor_ms"]["median"]
        parts.append(
            f"With {n:,} facts already in the scope, `remember` spends a median {f_med:.1f} ms "
            f"(p99 {f_p99:.1f} ms) beside its single LLM call under the default "
            f"`synchronous=FULL`, and {n_med:.1f} ms under `synchronous=normal`."
        )
        parts.append(
            f"A bare one-event commit costs {full['append_floor_ms']['median']:.2f} ms (FULL) vs "
            f"{normal['append_floor_ms']['median']:.2f} ms (normal) on this disk "
            f"({report.get('temp_fs', 'unknown')} file system) and `remember` commits twice, so "
            f"the fsync of a minimal commit accounts for about {2 * floor_gap:.1f} ms of the "
            f"{f_med - n_med:.1f} ms gap between the modes (`remember`'s commits are larger). "
            f"Either way most of the overhead — {n_med:.1f} ms even without the power-loss "
            "guarantee — is Veil's own Python and SQL work (prompt building, supersession "
            "lookups, embedding and indexing each fact), not fsync."
        )
        kinds = full["by_kind_median_ms"]
        slowest = max(kinds, key=lambda k: kinds[k])
        parts.append(
            f"The slowest kind of call is `{slowest}` ({kinds[slowest]:.1f} ms median under FULL)."
        )
    if other is not None:
        other_n = int(other["existing_facts"])
        other_full = {r["mode"]: r for r in other["results"]}.get("full")
        if full and other_full and other_n != n:
            o_med = other_full["per_remember_ms"]["median"]
            ratio = full["per_remember_ms"]["median"] / max(o_med, 1e-9)
            if n > other_n:
                ratio_text = f"{ratio:.1f}x"
                small, big = o_med, full["per_remember_ms"]["median"]
            else:
                ratio_text = f"{1 / ratio:.1f}x"
                small, big = full["per_remember_ms"]["median"], o_med
            grows = "grows" if max(ratio, 1 / ratio) >= 1.3 else "barely changes"
            parts.append(
                f"The overhead {grows} with the size of the memory: {small:.1f} ms at "
                f"{min(n, other_n):,} facts vs {big:.1f} ms at {max(n, other_n):,} "
                f"({ratio_text}, FULL, from the {'quick' if n > other_n else 'full'} run)."
            )
    parts.append(
        "Against a real model's hundreds of milliseconds per extraction this is small, but it "
        "is measured with an instant fake model on a warm cache, one process, one user and one "
        "machine; fsync cost in particular varies by orders of magnitude between devices."
    )
    return " ".join(parts)


# ---- recall latency (benchmarks/recall_report.py) ------------------------------------------


def _ms(stats: dict[str, Any], key: str) -> str:
    value = stats.get(key)
    return "—" if value is None else f"{value:,.1f}"


# ---- LoCoMo retrieval ---------------------------------------------------------------------

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


# ---- the document -----------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    name: str
    title: str
    command: str
    render: Callable[[Loaded, Loaded | None], str]
    note: str = ""
    """What the commands block says after the command (default: its JSON and --quick)."""


def _embedders_section(loaded: Loaded, other: Loaded | None) -> str:
    data = loaded.data
    lines = [embedders_table(data), ""]
    skipped: dict[str, str] = data.get("skipped", {})
    for label, why in skipped.items():
        lines += [f"Skipped {label}: {why}.", ""]
    lines += [embedders_reading(data)]
    return "\n".join(lines)


def source_line(source: dict[str, Any]) -> str:
    commit = source.get("commit")
    if not commit:
        return "source revision unknown"
    dirty = " with uncommitted changes in `src/`" if source.get("src_dirty") else ""
    return f"measured at commit `{str(commit)[:12]}`{dirty}"


def _write_overhead_section(loaded: Loaded, other: Loaded | None) -> str:
    data = loaded.data
    populate: dict[str, Any] = data["populate"]
    lines = [
        write_overhead_table(data),
        "",
        "Median overhead by kind of call:",
        "",
        write_overhead_kind_table(data),
        "",
        f"Setup: {data['existing_facts']:,} existing facts "
        f"({populate['facts']:,} fact rows, {populate['entities']:,} entities, "
        f"{populate['user_current_facts']:,} current facts about the user), built in "
        f"{populate['seconds']:.1f} s by {populate['method']}; {data['warmup_calls']} warm-up "
        f"calls then {data['measured_calls']} measured calls per mode; floor over "
        f"{data['floor_appends']} appends; embedder `{data['embedder']}`; databases in "
        f"`{data.get('temp_dir', '?')}` ({data.get('temp_fs', 'unknown')}); "
        f"{source_line(data.get('source', {}))}. Workload: {data['workload']}.",
        "",
        write_overhead_reading(data, other.data if other else None),
    ]
    return "\n".join(lines)


def _recall_latency_section(loaded: Loaded, other: Loaded | None) -> str:
    data = loaded.data
    baseline_path = loaded.path.parent / "recall_latency-baseline.json"
    baseline = json.loads(baseline_path.read_text()) if baseline_path.exists() else None
    lines = [
        recall_latency_table(data),
        "",
        "Per query type:",
        "",
        recall_latency_type_table(data),
        "",
        "The floor, measured on the same queries in the same run (the briefing has no query "
        "text and is left out), and recall's ratio to it:",
        "",
        recall_latency_ratio_table(data),
        "",
    ]
    if baseline is not None:
        lines += [
            "Before and after issue 17 (before: `recall_latency-baseline.json`):",
            "",
            before_after_table(data, baseline),
            "",
        ]
    if data.get("plot"):
        lines += [f"![recall latency vs N]({data['plot'].removeprefix('docs/')})", ""]
    lines += [
        f"Setup: {data['queries']} measured queries per size after {data['warmup_queries']} "
        f"warm-up queries, mix {data['query_mix']}, `token_budget={data['token_budget']}`, "
        f"embedder `{data['embedder']}` (query embedding inside the measured time); workload: "
        f"{data['workload']}; SQLite databases in `{data.get('temp_dir', '?')}` "
        f"({data.get('temp_fs', 'unknown')}), default `synchronous`; "
        f"{source_line(data.get('source', {}))}; the run took {data['seconds']:,.0f} s.",
        "",
        recall_latency_reading(data, baseline),
    ]
    return "\n".join(lines)


def _locomo_section(loaded: Loaded, other: Loaded | None) -> str:
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


def _body(markdown: str) -> str:
    """A benchmark module's own section without its ``##`` heading (added here)."""
    lines = markdown.splitlines()
    if lines and lines[0].startswith("## "):
        lines = lines[1:]
    while lines and not lines[0].strip():
        lines = lines[1:]
    return "\n".join(lines)


def _recall_profile_section(loaded: Loaded, other: Loaded | None) -> str:
    from benchmarks.recall_profile import render_section

    return _body(render_section(loaded.data))


def _context_overhead_section(loaded: Loaded, other: Loaded | None) -> str:
    from benchmarks.context_overhead import render_section

    body = _body(render_section(loaded.data)).splitlines()
    return "\n".join(line for line in body if not line.startswith("Source: "))


def _convergence_section(loaded: Loaded, other: Loaded | None) -> str:
    from benchmarks.convergence_replay import render_section

    return _body(render_section(loaded.data))


def _server_load_section(loaded: Loaded, other: Loaded | None) -> str:
    from benchmarks.server_load import render_section

    return render_section(loaded.data)


def _eviction_replay_section(loaded: Loaded, other: Loaded | None) -> str:
    from benchmarks.eviction_replay import render_section

    return _body(render_section(loaded.data))


def _soak_section(loaded: Loaded, other: Loaded | None) -> str:
    from benchmarks.soak import render_section

    text = render_section(loaded.data)
    steady = loaded.path.parent / "soak-steady.json"
    if steady.exists():
        text += (
            "\n\nSteady state (`python -m benchmarks.soak --steady`, source "
            "`benchmarks/results/soak-steady.json`): the same load with the scope erased "
            "every minute, so the data stays bounded.\n\n"
            + render_section(json.loads(steady.read_text()))
        )
    return text


def _real_model_section(loaded: Loaded, other: Loaded | None) -> str:
    from benchmarks.real_model import render_section

    return (
        "Opt-in (needs a model; not in `make bench`): the local lane of docs/local-model.md, "
        "or any `VEIL_MODEL`. Extraction is scored raw (guardrails off) and guarded on the "
        "same recorded output; the held-out set was written and recorded after the guardrails "
        "and changed none of them.\n\n" + render_section(loaded.data)
    )


def _redaction_section(loaded: Loaded, other: Loaded | None) -> str:
    from benchmarks.redaction import table

    return (
        "Every text Veil writes passes the redactor first (docs/storage.md). Recall: a canary "
        "corpus written for it (`benchmarks/redaction_corpus.py`: secrets of every listed "
        "format inside realistic outputs — env dumps, config files, stack traces, curl "
        "commands, CI logs, kubeconfigs). False positives: every observation of the 1,326 "
        "real agent trajectories in `../shared/data`, each change listed by rule in "
        "`benchmarks/results/redaction_changes.md` and judged there. Cost: per captured "
        "result, real observations resized.\n\n" + table(loaded.data)
    )


def _hook_latency_section(loaded: Loaded, other: Loaded | None) -> str:
    from benchmarks.hook_latency import table

    return (
        "What Veil's hooks cost inside the real Claude Code (the pinned binary, headless and "
        "offline against the scripted model server): the `mcp_tool` hooks `veil install "
        "claude-code` installs, answered by the warm `veil mcp`, against the same handlers run "
        "as one `veil hook` process per hook, in the same run. Durations come from Claude "
        "Code's debug log.\n\n" + table(loaded.data)
    )


def _proxy_overhead_section(loaded: Loaded, other: Loaded | None) -> str:
    from benchmarks.proxy_overhead import table

    return (
        "What Veil's model-API proxy (docs/proxy.md) does to each request before forwarding "
        "it — read the conversation, capture the new results, measure, evict in a batch when "
        "over budget, stub, splice — timed in process on a growing Claude Code-like "
        "conversation, and over HTTP against an upstream that answers at once.\n\n"
        + table(loaded.data)
    )


def _startup_section(loaded: Loaded, other: Loaded | None) -> str:
    from benchmarks.startup import render_section

    return render_section(loaded.data)


SECTIONS: tuple[Section, ...] = (
    Section(
        "startup",
        "Start-up: `veil -p`, `veil mcp` and the TUI, from a cold process",
        "python -m benchmarks.startup",
        _startup_section,
    ),
    Section(
        "embedders",
        "Embedders: load, throughput, size, LoCoMo evidence recall",
        "python -m benchmarks.embedders",
        _embedders_section,
    ),
    Section(
        "write_overhead",
        "Write overhead of `Memory.remember` beside the LLM call",
        "python -m benchmarks.write_overhead",
        _write_overhead_section,
    ),
    Section(
        "recall_latency",
        "Recall latency vs memory size (1k to 1M items, SQLite and PostgreSQL)",
        "python -m benchmarks.recall_latency",
        _recall_latency_section,
    ),
    Section(
        "recall_profile",
        "Where a recall's time goes (store calls per query type, SQLite and PostgreSQL)",
        "python -m benchmarks.recall_profile",
        _recall_profile_section,
    ),
    Section(
        "locomo_retrieval",
        "LoCoMo evidence recall of `Memory.recall` vs BM25, dense and RRF",
        "python -m benchmarks.locomo_retrieval",
        _locomo_section,
    ),
    Section(
        "context_overhead",
        "Context hook overhead per tool call (capture + score + evict + render; persistence "
        "deferred)",
        "python -m benchmarks.context_overhead",
        _context_overhead_section,
    ),
    Section(
        "convergence_replay",
        "Convergence monitor replayed over 1,326 real agent trajectories",
        "python -m benchmarks.convergence_replay",
        _convergence_section,
    ),
    Section(
        "eviction_replay",
        "Eviction replay on real agent trajectories vs masking, truncation, compaction, LRU",
        "python -m benchmarks.eviction_replay",
        _eviction_replay_section,
    ),
    Section(
        "redaction",
        "Secret redaction: recall on a canary corpus, false positives on real tool outputs, cost",
        "python -m benchmarks.redaction",
        _redaction_section,
    ),
    Section(
        "hook_latency",
        "Hook latency per tool call in the real Claude Code: `mcp_tool` vs one process per hook",
        "python -m benchmarks.hook_latency",
        _hook_latency_section,
    ),
    Section(
        "proxy_overhead",
        "Proxy overhead per request: what `veil claude` / `veil codex` add before forwarding",
        "python -m benchmarks.proxy_overhead",
        _proxy_overhead_section,
    ),
    Section(
        "server_load",
        "Load on `veil serve`: recall and remember at 1, 8 and 32 clients",
        "python -m benchmarks.server_load",
        _server_load_section,
    ),
    Section(
        "soak",
        "Soak: 10 minutes of steady load in-process, then on `veil serve` with 32 clients",
        "python -m benchmarks.soak",
        _soak_section,
    ),
    Section(
        "real_model",
        "A real model: extraction and the agent on a local 1.5B model",
        "python -m benchmarks.real_model",
        _real_model_section,
        note="real_model.json; opt-in, needs VEIL_MODEL (docs/local-model.md)",
    ),
)


def render(results: Path = RESULTS) -> str:
    """The whole of ``docs/benchmarks.md`` from the JSON files in ``results``."""
    loaded: dict[str, Loaded | None] = {s.name: load(s.name, results) for s in SECTIONS}
    out = [
        "# Benchmarks",
        "",
        "Generated by `python -m benchmarks.report` from `benchmarks/results/*.json`; do not "
        "edit by hand. Full results are shown; a quick result appears only when the full one "
        "is missing, and is labelled **quick**.",
        "",
        "## Commands",
        "",
        "```sh",
        "make bench                               # python -m benchmarks.run: full runs + report",
        "python -m benchmarks.run --quick         # quick runs + report",
        "python -m benchmarks.report              # re-render this page from the JSON only",
    ]
    out += [
        f"{s.command:<40} # {s.note or f'{s.name}.json; --quick writes {s.name}-quick.json'}"
        for s in SECTIONS
    ]
    out += ["```", "", "## Machine", ""]
    machines: dict[str, list[str]] = {}
    for s in SECTIONS:
        item = loaded[s.name]
        if item is not None:
            machines.setdefault(machine_line(item.data.get("machine", {})), []).append(s.name)
    if not machines:
        out.append("No results yet.")
    for line, names in machines.items():
        out.append(f"- {line} ({', '.join(names)})")
    for s in SECTIONS:
        item = loaded[s.name]
        out += ["", f"## {s.title}", ""]
        if item is None:
            out.append(f"Not run yet: `{s.command}`.")
            continue
        source = item.path.relative_to(REPO) if item.path.is_relative_to(REPO) else item.path
        label = " — **quick run** (the full result is missing)" if item.quick else ""
        out += [f"Source: `{source}`{label}. Command: `{s.command}`.", ""]
        other_path = results / (f"{s.name}-quick.json" if not item.quick else f"{s.name}.json")
        other = (
            Loaded(s.name, json.loads(other_path.read_text()), other_path, not item.quick)
            if other_path.exists()
            else None
        )
        out.append(s.render(item, other))
    return "\n".join(out) + "\n"


def write(doc: Path = DOC, results: Path = RESULTS) -> Path:
    """Render and write the document; returns its path."""
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(render(results))
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render docs/benchmarks.md from the results.")
    parser.add_argument("--stdout", action="store_true", help="print instead of writing")
    args = parser.parse_args(argv)
    if args.stdout:
        sys.stdout.write(render())
        return 0
    path = write()
    print(f"wrote {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
