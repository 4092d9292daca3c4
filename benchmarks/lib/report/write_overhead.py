"""The write-overhead section: what ``Memory.remember`` costs beside its one LLM call."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.report.common import Report, source_line
from benchmarks.lib.results import Loaded


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


def section(loaded: Loaded, other: Loaded | None) -> str:
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
