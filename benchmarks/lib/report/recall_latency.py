"""The recall-latency section: recall percentiles per backend and size, the floor measured in
the same run, before and after issue 17 (``recall_latency-baseline.json``), and the plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.lib import results
from benchmarks.lib.report.common import Report, source_line
from benchmarks.lib.results import Loaded


def _ms(stats: dict[str, Any], key: str) -> str:
    value = stats.get(key)
    return "—" if value is None else f"{value:,.1f}"


def _load(values: list[float] | None) -> str:
    return ", ".join(f"{v:.2f}" for v in values) if values else "?"


def recall_latency_table(report: Report) -> str:
    """Recall percentiles per backend and size, with population time and database size."""
    targets: dict[str, float] = report.get("targets_p95_ms", {})
    pg_targets: dict[str, float] = report.get("targets_pg_p95_ms", {})
    lines = [
        "| backend | items | facts | episodes | import s | items/s | DB MB "
        "| first recall after reopen ms | recall p50 ms | p95 | p99 | max | p95 target |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| --- |",
    ]
    for r in report["results"]:
        rs = r["recall_ms"]
        table = pg_targets if r["backend"] == "postgresql" else targets
        target = table.get(str(r["n_items"]))
        verdict = "—"
        if target is not None:
            verdict = f"{target:g} ms: {'met' if rs['p95'] <= target else 'MISSED'}"
        carried = " *" if r.get("carried_over") else ""
        reopen = r.get("reopen", {}).get("first_recall_ms")
        lines.append(
            f"| {r['backend']}{carried} | {r['n_items']:,} | {r['facts']:,} | {r['episodes']:,} "
            f"| {r['populate_s']:,.1f} | {r['items_per_s']:,.0f} "
            f"| {r['db_bytes'] / 1e6:,.1f} | {'—' if reopen is None else f'{reopen:,.1f}'} "
            f"| {_ms(rs, 'p50')} | {_ms(rs, 'p95')} "
            f"| {_ms(rs, 'p99')} | {_ms(rs, 'max')} | {verdict} |"
        )
    return "\n".join(lines)


def recall_latency_type_table(report: Report) -> str:
    """Recall p50 / p95 per query type."""
    types = ("entity", "user", "keyword", "briefing")
    head = " | ".join(f"{t} p50 | {t} p95" for t in types)
    lines = [
        f"| backend | items | {head} |",
        "| --- | ---: |" + " ---: |" * (2 * len(types)),
    ]
    for r in report["results"]:
        by = r["by_type_ms"]
        cells = " | ".join(
            f"{_ms(by.get(t, {}), 'p50')} | {_ms(by.get(t, {}), 'p95')}" for t in types
        )
        lines.append(f"| {r['backend']} | {r['n_items']:,} | {cells} |")
    return "\n".join(lines)


def recall_latency_ratio_table(report: Report) -> str:
    """The floor measured in the same run (its three parts) and recall's ratio to it."""
    targets: dict[str, float] = report.get("targets_floor_ratio_p95", {})
    lines = [
        "| backend | items | embed p50 | p95 | numpy top-50 p50 | p95 | FTS one term p50 | p95 "
        "| floor p50 | p95 | recall (non-empty) p50 | p95 | ratio p50 | ratio p95 "
        "| per-query ratio p50 | p95 | ratio target |",
        "| --- | ---: |" + " ---: |" * 14 + " --- |",
    ]
    for r in report["results"]:
        refs = r["reference_ms"]
        if "floor" not in refs:
            continue
        ne, ratio = r["recall_nonempty_ms"], r["ratio"]
        target = targets.get(str(r["n_items"])) if r["backend"] == "sqlite" else None
        verdict = "—"
        if target is not None:
            verdict = f"{target:g}x: {'met' if ratio['floor']['p95'] <= target else 'MISSED'}"
        cells = [f"| {r['backend']} | {r['n_items']:,}"]
        for key in ("embed", "numpy_top50", "fts_term", "floor"):
            cells.append(f"| {refs[key]['p50']:.2f} | {refs[key]['p95']:.2f}")
        per = ratio.get("floor_per_query", {})
        cells.append(
            f"| {_ms(ne, 'p50')} | {_ms(ne, 'p95')} | {ratio['floor']['p50']:.2f}x "
            f"| {ratio['floor']['p95']:.2f}x | {per.get('p50', 0):.2f}x | {per.get('p95', 0):.2f}x "
            f"| {verdict} |"
        )
        lines.append(" ".join(cells))
    return "\n".join(lines)


def before_after_table(report: Report, baseline: Report) -> str:
    """Recall p50/p95 before issue 17 (the baseline file) and now, per backend and size."""
    before = {(r["backend"], r["n_items"]): r for r in baseline.get("results", [])}
    lines = [
        "| backend | items | before p50 ms | before p95 | now p50 | now p95 | p95 speed-up "
        "| before import s | now import s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in report["results"]:
        old = before.get((r["backend"], r["n_items"]))
        if old is None:
            continue
        o, n = old["recall_ms"], r["recall_ms"]
        lines.append(
            f"| {r['backend']} | {r['n_items']:,} | {o['p50']:,.1f} | {o['p95']:,.1f} "
            f"| {n['p50']:,.1f} | {n['p95']:,.1f} | {o['p95'] / max(n['p95'], 1e-9):,.1f}x "
            f"| {old['populate_s']:,.1f} | {r['populate_s']:,.1f} |"
        )
    return "\n".join(lines)


def recall_latency_reading(report: Report, baseline: Report | None = None) -> str:
    """One paragraph generated from the numbers: targets, slope, load, where time goes."""
    rows = report["results"]
    parts: list[str] = []
    verdicts: list[str] = []
    for r in rows:
        table = report.get(
            "targets_pg_p95_ms" if r["backend"] == "postgresql" else "targets_p95_ms", {}
        )
        target = table.get(str(r["n_items"]))
        if target is None:
            continue
        p95 = r["recall_ms"]["p95"]
        verdicts.append(
            f"{r['backend']} at {r['n_items']:,}: p95 {p95:.1f} ms vs {target:g} ms "
            f"({'met' if p95 <= target else f'missed by {p95 / target:.1f}x'})"
        )
    for r in rows:
        target = report.get("targets_floor_ratio_p95", {}).get(str(r["n_items"]))
        if target is None or r["backend"] != "sqlite" or "floor" not in r["ratio"]:
            continue
        ratio = r["ratio"]["floor"]["p95"]
        verdicts.append(
            f"sqlite at {r['n_items']:,}: p95 {ratio:.2f}x the floor's p95 vs {target:g}x "
            f"({'met' if ratio <= target else 'missed'})"
        )
    slopes: dict[str, dict[str, Any]] = report.get("slopes", {})
    target_slope = report.get("target_slope")
    for name, sl in slopes.items():
        verdict = ""
        if target_slope is not None and name == "sqlite":
            verdict = f" vs {target_slope:g} ({'met' if sl['p95'] <= target_slope else 'missed'})"
        verdicts.append(
            f"{name} log-log slope {sl['from']:,} → {sl['to']:,}: p50 {sl['p50']:.2f}, "
            f"p95 {sl['p95']:.2f}{verdict}"
        )
    if verdicts:
        parts.append("Against the issue-17 targets: " + "; ".join(verdicts) + ".")
    big = [r for r in rows if "floor" in r["reference_ms"] and r["backend"] == "sqlite"]
    if big:
        last = max(big, key=lambda r: r["n_items"])
        refs = last["reference_ms"]
        parts.append(
            f"The floor at {last['n_items']:,} items (per query: embedding the query, exact "
            f"numpy cosine top-50 over the scope's {last['fact_vectors']:,} fact vectors, and "
            "one FTS5 query of the query's most selective term, ranked, top 50) is p50 "
            f"{refs['floor']['p50']:.2f} ms: embed {refs['embed']['p50']:.2f}, numpy "
            f"{refs['numpy_top50']['p50']:.2f}, FTS {refs['fts_term']['p50']:.2f}. Recall "
            "does more than the floor — two full-text and two vector searches (facts and "
            "episodes), the graph reads, the rows, the fusion and the rendering — but above "
            "20k vectors it scans their 72-dimensional projections and ranks 1,000 candidates "
            "exactly where the floor scans all 256 dimensions, which is why it can be near or "
            "below the floor at large sizes."
        )
        reopen = last.get("reopen", {}).get("first_recall_ms")
        if reopen is not None:
            parts.append(
                f"A fresh handle's first recall at {last['n_items']:,} items took {reopen:,.0f} "
                "ms: it loads the scope's vector indexes from their sidecar files."
            )
    if baseline is not None:
        old = {(r["backend"], r["n_items"]): r for r in baseline.get("results", [])}
        gains = [
            f"{r['backend']} {r['n_items']:,} {before['recall_ms']['p95']:,.0f}"
            f" → {r['recall_ms']['p95']:,.1f} ms"
            for r in rows
            if (before := old.get((r["backend"], r["n_items"]))) is not None
        ]
        if gains:
            parts.append(
                "Before issue 17 (sqlite-vec `vec0`, an FTS5 scope token, one graph query for "
                "all keys, per-cell row decoding; `recall_latency-baseline.json`, measured on "
                "the same kind of machine on 2026-11-30, load not recorded) recall p95 was: "
                + "; ".join(gains)
                + "."
            )
    machine = report.get("machine", {})
    load = machine.get("load_average", {})
    parts.append(
        f"{machine.get('cpus', '?')} CPUs shared with other work: load average (1, 5, 15 min) "
        f"{_load(load.get('start'))} at the start and {_load(load.get('end'))} at the end of "
        "the run (each row's JSON has its own); absolute times move with that load, the ratios "
        "to the floor measured in the same run much less. Single process, one scope, warm OS "
        "cache, one sample per query; the data is synthetic (template sentences), so full-text "
        "selectivity and near-duplicate vectors differ from real memories."
    )
    peers: dict[str, float] = report.get("peers_published_p95_ms", {})
    if peers:
        listed = ", ".join(f"{k} {v:g} ms" for k, v in peers.items())
        parts.append(
            f"For orientation only: published p95 search latencies are {listed} — their own "
            "figures, on their hardware, workloads and network, not measured here."
        )
    if any(r.get("carried_over") for r in rows):
        parts.append(
            "Rows marked * were measured by an earlier full run (see their `measured_at` and "
            "commit in the JSON) and carried over, not re-measured by this one."
        )
    return " ".join(parts)


def section(loaded: Loaded, other: Loaded | None) -> str:
    data = loaded.data
    baseline = results.read("recall_latency-baseline", loaded.path.parent)
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


def plot(report: Report, path: Path) -> None:
    """Log-log p50/p95 vs N per backend, with the SPEC targets."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows_all: list[dict[str, Any]] = report["results"]
    targets: dict[str, float] = report["targets_p95_ms"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    styles = {"sqlite": "tab:blue", "postgresql": "tab:green"}
    for name, color in styles.items():
        rows = sorted((r for r in rows_all if r["backend"] == name), key=lambda r: r["n_items"])
        if not rows:
            continue
        xs = [r["n_items"] for r in rows]
        ax.plot(xs, [r["recall_ms"]["p50"] for r in rows], "o-", color=color, label=f"{name} p50")
        ax.plot(xs, [r["recall_ms"]["p95"] for r in rows], "s--", color=color, label=f"{name} p95")
    for n, target in targets.items():
        ax.plot([int(n)], [target], "r*", markersize=12)
    ax.plot([], [], "r*", label="SPEC p95 target")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("items in one scope (80% facts, 20% episodes)")
    ax.set_ylabel("Memory.recall latency, ms")
    ax.set_title("Veil recall latency (token_budget=1000, query embedding included)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
