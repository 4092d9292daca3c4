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


# ---- the document -----------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    name: str
    title: str
    command: str
    render: Callable[[Loaded, Loaded | None], str]


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


SECTIONS: tuple[Section, ...] = (
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
        f"{s.command:<40} # {s.name}.json; --quick writes {s.name}-quick.json" for s in SECTIONS
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
