"""The real-model section: extraction and the agent on a real (local) model; opt-in."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.results import Loaded

Json = dict[str, Any]


def extraction_table(which: str, ext: Json) -> list[str]:
    """One set's extraction table: raw (guardrails off) beside guarded, same model output."""
    raw, guarded = ext["raw"], ext["guarded"]
    lines: list[str] = []
    rows = [
        ("fact precision", "precision", "{:.2f}"),
        ("fact recall", "recall", "{:.2f}"),
        ("facts correct / wrong / unlabelled", None, ""),
        ("supersessions done / expected", None, ""),
        ("wrong supersessions", "supersessions_wrong", "{}"),
        ("claims kept out of user facts / expected", None, ""),
        ("due dates right / expected", None, ""),
        ("spurious due dates", "due_spurious", "{}"),
        ("ungrounded flags", "ungrounded_flags", "{}"),
        ("invalid items", "invalid_items", "{}"),
    ]
    lines += [
        "",
        f"Extraction, {which} set: {ext['statements']} statements, {ext['llm_calls']} model calls, "
        f"{ext['seconds_per_remember']:.1f} s per remember (median {ext['median_s']:.1f} s).",
        "",
        "| | raw (guardrails off) | guarded |",
        "| --- | ---: | ---: |",
    ]
    for name, key, fmt in rows:
        if key is not None:
            lines.append(f"| {name} | {fmt.format(raw[key])} | {fmt.format(guarded[key])} |")
            continue

        def pair(r: Json, name: str = name) -> str:
            if name.startswith("facts"):
                return f"{r['correct']} / {r['wrong']} / {r['unlabelled']}"
            if name.startswith("supersessions"):
                return f"{r['supersessions_done']} / {r['supersessions_expected']}"
            if name.startswith("claims"):
                return f"{r['claims_kept_out']} / {r['claims_expected']}"
            return f"{r['due_correct']} / {r['due_expected']}"

        lines.append(f"| {name} | {pair(raw)} | {pair(guarded)} |")
    return lines


def render_section(data: Json) -> str:
    info = data["model"]
    lines = [
        f"Model: `{info['model']}`"
        + (f" ({info['gguf']}, {info['quantisation']}, {info['server']})" if "gguf" in info else "")
        + f". Machine: {data['machine']['platform']}, {data['machine']['cpus']} CPUs, load "
        f"{data['machine']['load']} at the start.",
    ]
    for which, ext in (data.get("extraction") or {}).items():
        lines += extraction_table(which, ext)
    agent = data.get("agent")
    if agent:
        lines += [
            "",
            f"Agent: {len(agent) // 2} tiny repositories, one failing unittest each, window "
            f"{data.get('window')} tokens, profile small, at most 12 turns.",
            "",
            "| repo | mode | solved | end | turns | tokens in | cached | out | calls from text "
            "| call problems | evicted | s |",
            "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in agent:
            lines.append(
                f"| {r['repo']} | {r['mode']} | {'yes' if r['solved'] else 'no'} | {r['end']} "
                f"| {r['turns']} | {r['tokens_in']} | {r['cached']} | {r['tokens_out']} "
                f"| {r['from_text']} | {r['call_problems'] + r['invalid_arguments']} "
                f"| {r['evicted']} | {r['seconds']:.0f} |"
            )
        for mode in ("veil", "keep-all"):
            rs = [r for r in agent if r["mode"] == mode]
            if rs:
                lines.append(
                    f"\n{mode}: {sum(r['solved'] for r in rs)}/{len(rs)} solved, "
                    f"{sum(r['turns'] for r in rs)} turns, "
                    f"{sum(r['tokens_in'] for r in rs)} tokens in "
                    f"({sum(r['cached'] for r in rs)} cached), "
                    f"{sum(r['seconds'] for r in rs) / 60:.1f} min."
                )
    return "\n".join(lines)


def section(loaded: Loaded, other: Loaded | None) -> str:
    return (
        "Opt-in (needs a model; not in `make bench`): the local lane of docs/local-model.md, "
        "or any `VEIL_MODEL`. Extraction is scored raw (guardrails off) and guarded on the "
        "same recorded output; the held-out set was written and recorded after the guardrails "
        "and changed none of them.\n\n" + render_section(loaded.data)
    )
