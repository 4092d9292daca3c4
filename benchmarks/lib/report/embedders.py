"""The embedders section: load, throughput, size and LoCoMo recall per embedder."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.report.common import Report
from benchmarks.lib.results import Loaded


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


def section(loaded: Loaded, other: Loaded | None) -> str:
    data = loaded.data
    lines = [embedders_table(data), ""]
    skipped: dict[str, str] = data.get("skipped", {})
    for label, why in skipped.items():
        lines += [f"Skipped {label}: {why}.", ""]
    lines += [embedders_reading(data)]
    return "\n".join(lines)
