"""The eviction-replay section: tokens kept against needs missed, every policy on real agent
trajectories, the host agents' policies beside Veil, the goals, the ``--sweep`` table; the
plots; and the reading paragraph the script stores in its JSON."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.lib.report.common import body, pct
from benchmarks.lib.results import Loaded
from benchmarks.replay.goals import BILL_BUDGETS, bill_goals, goals_met, paying_recency
from benchmarks.replay.grid import (
    BUDGETS,
    CURVES_AT_SHARE,
    GOAL_BUDGETS,
    HOSTS,
    KEEP3_AT_LEAST,
    PROXY,
    RECENCY,
    SET_NAMES,
    family,
)


def _label(key: str, chosen: str) -> str:
    name, f = family(key)
    if name.startswith("veil["):
        base = name[5:-1]
        name = "Veil (defaults)" if base == "defaults" else f"Veil ({base})"
        if base == chosen and base != "defaults":
            name += " — chosen on A"
    return name if f is None else f"{name} @ {f:g}"


def is_host(key: str) -> bool:
    """A row of the host table: a host agent's own policy (:data:`HOSTS`) or Veil's
    proxy inside them (:data:`PROXY`)?"""
    return family(key)[0] in HOSTS or family(key)[0] == PROXY


def is_anchor(key: str) -> bool:
    """A row of the bill's table only: the recency anchor's depths, keep-3 + clear_at_least."""
    name = family(key)[0]
    return name.startswith(RECENCY) or name == KEEP3_AT_LEAST


SHAPE: tuple[tuple[str, str], ...] = (
    ("stubs", "stubs sent"),
    ("batches", "batches"),
    ("back_to_back", "back to back"),
    ("changed", "sent results changed"),
    ("over_budget", "requests over budget"),
    ("clipped_unread", "unread clipped"),
)


def bill_table(rows: dict[str, dict[str, Any]], chosen: str) -> str:
    """At each bill budget: Veil through its proxy and in its harness, the baselines the
    proxy is read against, and the cache-paying recency anchor — tokens, misses, cost with
    caching and what each did to the prompt (sums over the set's requests)."""
    lines = [
        "| policy @ budget | tokens vs keep-all | miss rate | cost vs keep-all (cached) | "
        + " | ".join(title for _, title in SHAPE)
        + " |",
        "| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in SHAPE) + " |",
    ]
    for f in BILL_BUDGETS:
        keys = [f"{PROXY}@{f}", f"veil[{chosen}]@{f}"]
        keys += [f"{fam}@{f}" for fam in CURVES_AT_SHARE]
        anchor = paying_recency(rows, f)
        if anchor is not None:
            keys.append(anchor[0])
        for key in keys:
            r = rows.get(key)
            if r is None:
                continue
            shape = r.get("shape", {})
            label = _label(key, chosen)
            if key.startswith(RECENCY):
                label += " (cache-paying: the smallest depth costing ≤ keep-all)"
            lines.append(
                f"| {label} | {pct(r['tokens_vs_keep_all'])} | {pct(r['miss_rate'])} "
                f"| {pct(r.get('cost_vs_keep_all'))} | "
                + " | ".join(f"{shape.get(k, 0):,}" for k, _ in SHAPE)
                + " |"
            )
    return "\n".join(lines)


def verdict(met: bool | None, miss: float, against: dict[str, Any]) -> str:
    if met is None:
        return "n/a"
    if met:
        return "met"
    return "tied" if against.get("miss_at_share") == miss else "NOT met"


def bill_lines(name: str, g: dict[str, Any]) -> list[str]:
    """Issue 33's goals, cell by cell, won or lost."""
    out: list[str] = []
    for p in g["points"]:
        f = p["budget"]
        proxy = p.get("proxy")
        if proxy is not None:
            word = "met" if proxy["cost_met"] else "NOT met"
            against = ", ".join(
                f"{fam} {pct(v['miss_at_share'])} ({verdict(v['met'], proxy['miss_rate'], v)})"
                for fam, v in proxy["against"].items()
            )
            out.append(
                f"- set {name} @{f:g}, through the proxy: cost {pct(proxy['cost'])} of keep-all's "
                f"({word}); misses {pct(proxy['miss_rate'])} at {pct(proxy['tokens'])} tokens "
                f"vs, at that share: {against}"
            )
        veil = p.get("harness")
        if veil is not None:
            word = "met" if veil["cost_met"] else "NOT met"
            trunc = veil["truncation_at_share"]
            said = verdict(veil["met"], veil["miss_rate"], {"miss_at_share": trunc})
            out.append(
                f"- set {name} @{f:g}, in the harness: cost {pct(veil['cost'])} of keep-all's "
                f"({word}); misses {pct(veil['miss_rate'])} at {pct(veil['tokens'])} tokens vs "
                f"truncation's {pct(trunc)} at that share ({said})"
            )
    return out


def table(rows: dict[str, dict[str, Any]], chosen: str) -> str:
    lines = [
        "| policy @ budget | mean tokens/step | vs keep-all | peak | vs keep-all "
        "| cost vs keep-all (cached) | misses / needs "
        "| miss rate | region | command | identifier | copied lines (2nd detector) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for key, r in rows.items():
        by = r["miss_rate_by_rule"]
        lines.append(
            f"| {_label(key, chosen)} | {r['mean_tokens']:,.0f} | {pct(r['tokens_vs_keep_all'])} "
            f"| {r['peak_tokens']:,.0f} | {pct(r['peak_vs_keep_all'])} "
            f"| {pct(r.get('cost_vs_keep_all'))} "
            f"| {r['misses']:,} / {r['needs']:,} | {pct(r['miss_rate'])} | {pct(by['region'])} "
            f"| {pct(by['command'])} | {pct(by['identifier'])} "
            f"| {pct(r.get('copied_lines', {}).get('miss_rate'))} |"
        )
    return "\n".join(lines)


def goal_line(name: str, g: dict[str, Any]) -> str:
    parts: list[str] = []
    for x in g["points"]:
        verdicts = []
        for fam, v in x["against"].items():
            at = v["miss_at_equal_tokens"]
            word = "n/a" if v["met"] is None else ("met" if v["met"] else "NOT met")
            verdicts.append(f"{fam} {pct(at)} ({word})")
        parts.append(
            f"@{x['budget']:g}: Veil {pct(x['miss_rate'])} at {pct(x['tokens'])} tokens vs "
            + ", ".join(verdicts)
        )
    for mask, m in g["masks"].items():
        word = (
            "n/a (outside Veil's range)" if m["met"] is None else ("met" if m["met"] else "NOT met")
        )
        parts.append(
            f"{mask} ({pct(m['tokens'])} tokens, {pct(m['miss_rate'])} missed) vs Veil at equal "
            f"tokens {pct(m['veil_miss_at_equal_tokens'])} ({word})"
        )
    margin = g["best_margin_at_0.5"]
    parts.append(
        "margin over the best baseline at f = 0.5: "
        + ("n/a" if margin is None else f"{100 * margin:+.1f} points")
    )
    return f"- {name}: " + "; ".join(parts)


def render_section(data: dict[str, Any]) -> str:
    """The section for docs/benchmarks.md (no ``##`` heading)."""
    chosen = data["chosen"]
    lines = [
        "Real trajectories, every step's prompt rebuilt (system + task + assistant messages + "
        "observations), each policy deciding which earlier observations stay verbatim. Tokens: "
        "`estimate_tokens` (≈ chars/4) for all policies. Budgets per trajectory: fixed + f × "
        "(keep-all peak − fixed), f ∈ {" + ", ".join(f"{f:g}" for f in data["budgets"]) + "}. "
        "A **need**: a later step re-reads the same file region, re-runs the same command "
        "with no edit in between, or names an identifier (path, symbol, quoted error text) "
        "printed by an earlier observation and absent from the task and the agent's own earlier "
        "actions; it is a **miss** when none of the observations that satisfy it is verbatim in "
        "the prompt at that step. Definitions: `benchmarks/replay/needs.py`. A second detector "
        "of another kind (`copied_lines`: the action carries a line of 24+ characters an "
        "earlier observation printed verbatim — an edit's old text, a pasted error) shares "
        "no rule with the engine's re-reference scan; its miss rate is the last column, "
        "outside the goals. **Cost** (with prompt caching): every step's prompt priced per input "
        "token, the prefix it shares with the previous step's prompt read at 0.1×, the rest "
        "written to the cache at 1.25× (compaction's summarising calls priced the same way), "
        "as a share of keep-all's cost on the same trajectories.",
        "",
        f"Sample: {data['sample_note']}. Embedder: {data['embedder']}. "
        f"Run time {data['seconds']:,.0f} s on {data['machine']['cpus']} CPUs "
        f"(Python {data['machine']['python']}).",
        "",
    ]
    for name in ("A", "B"):
        entry = data["sets"].get(name)
        if entry is None:
            continue
        rows: dict[str, dict[str, Any]] = entry["rows"]
        lines += [
            f"**Set {SET_NAMES[name]}** — {entry['trajectories']} trajectories, "
            f"{entry['steps']:,} steps, {entry['needs']:,} needs "
            f"({', '.join(f'{r} {n:,}' for r, n in entry['needs_by_rule'].items())}); "
            f"second detector: {entry.get('copied_lines_needs', 0):,} copied-line needs.",
            "",
            table({k: r for k, r in rows.items() if not is_host(k) and not is_anchor(k)}, chosen),
            "",
            f"Set {name}, the bill (issue 33): Veil through its proxy and in its harness beside "
            "the baselines the proxy is read against and the cache-paying recency anchor "
            "(oldest results first, stubs frozen, never the unread). Shape columns are sums "
            "over the set's requests: results sent in another form than verbatim; batches "
            "(requests that do not start with the previous request's prompt); batches at the "
            "very next request after another; already-sent results shown otherwise than in the "
            "previous request; requests over the budget; requests whose newest result (unread) "
            "was not verbatim.",
            "",
            bill_table(rows, chosen),
            "",
            *bill_lines(name, bill_goals(rows, f"veil[{chosen}]")),
            "",
        ]
        host = host_rows(rows, chosen)
        if host:
            lines += [
                f"Set {name}, the host agents' own policies at the same budgets "
                "(`benchmarks/replay/host_policies.py` states each rule and its source; "
                "constants scaled to the budget as host constant × budget / host window), and "
                "Veil as its proxy runs inside them (`benchmarks/replay/proxy_policy.py`). The "
                "proxy may change only tool results and, where results alone cannot meet the "
                "budget and it pays, the long strings of old tool inputs "
                "(`veil/proxy/inputs.py`) — the agent's own messages, its thoughts included, go "
                "as they are; Veil in its own harness also stubs old turns. Both "
                "run the same batch rule (`veil/context/batching.py`): nothing changes while "
                "the conversation fits, and over the budget one batch deep enough to pay for "
                "the cache it breaks:",
                "",
                table(host, chosen),
                "",
                host_comparison(name, rows, chosen),
                "",
                host_comparison(name, rows, chosen, PROXY),
                "",
            ]
        lines += [
            f"![tokens kept vs miss rate, set {name}](img/eviction_replay_{name}.png)",
            "",
        ]
    lines.append(
        "Goals, read on each curve (one point per budget, linear between points): masking — "
        "Veil's miss rate at masking N=10's token share is below masking's, i.e. some budget "
        "gives fewer tokens at a lower miss rate; compaction — at each Veil point, a lower "
        "miss rate than compaction's curve at the same token share:"
    )
    lines.append("")
    for name in ("A", "B"):
        entry = data["sets"].get(name)
        if entry is None:
            continue
        for veil, g in entry["goals"].items():
            lines.append(goal_line(f"set {name}, {veil}", g))
    sweep_data = data.get("sweep")
    if sweep_data:
        lines += [
            "",
            f"ContextConfig candidates tried on set A only (every {sweep_data['every']}th "
            f"trajectory, {sweep_data['trajectories']} runs, at f = "
            + ", ".join(f"{f:g}" for f in GOAL_BUDGETS)
            + "; rule (`choose`): the most cells with a cost with caching at most keep-all's "
            "(proxy and harness at f = 0.5 and 0.625), then the most miss goals met, then the "
            "lowest mean miss rate; each row moves one knob of the defaults; every row's exact "
            "ContextConfig is in the JSON). "
            f"Chosen: `{sweep_data['chosen']}`"
            + (
                "."
                if sweep_data["chosen"] == "defaults"
                else f" — adopted as the default (`ContextConfig()` now equals it), so the "
                f"`defaults` row is the configuration at commit {sweep_data.get('commit')}, "
                "before that change (the tables above run the current one)."
                if sweep_data.get("chosen_is_default_now")
                else " — **not** the current default: re-run `--sweep`."
            ),
            "",
            sweep_table(sweep_data),
        ]
    lines += ["", data.get("reading", "")]
    return "\n".join(lines).rstrip() + "\n"


def host_rows(rows: dict[str, dict[str, Any]], chosen: str) -> dict[str, dict[str, Any]]:
    """keep-all, every host policy's rows (policy by policy), then the chosen Veil's (for the
    side-by-side table); empty when the run has no host policies."""
    host = {
        f"{fam}@{f}": rows[f"{fam}@{f}"] for fam in HOSTS for f in BUDGETS if f"{fam}@{f}" in rows
    }
    if not host:
        return {}
    veil = {k: r for k, r in rows.items() if family(k)[0] in (f"veil[{chosen}]", PROXY)}
    keep = {k: r for k, r in rows.items() if k == "keep-all"}
    return keep | host | veil


HOST_METRICS: tuple[tuple[str, str, str], ...] = (
    ("miss_rate", "Miss rate", ""),
    ("tokens_vs_keep_all", "Tokens per step", " of keep-all's"),
    ("cost_vs_keep_all", "Cost with caching", " of keep-all's"),
)


def host_comparison(
    name: str, rows: dict[str, dict[str, Any]], chosen: str, veil: str | None = None
) -> str:
    """Where a Veil row family (default: the chosen configuration in the harness) wins and
    loses against each host policy at the same budgets, on miss rate, tokens and cost with
    caching (lower is better on each), from the rows."""
    veil = veil or f"veil[{chosen}]"
    hosts = [fam for fam in HOSTS if any(f"{fam}@{f}" in rows for f in BUDGETS)]
    budgets = [f for f in BUDGETS if f"{veil}@{f}" in rows]
    if not hosts or not budgets:
        return ""
    mid = 0.5 if 0.5 in budgets else budgets[len(budgets) // 2]
    n = len(budgets)
    sentences: list[str] = []
    for metric, title, unit in HOST_METRICS:
        groups: dict[str, list[str]] = {"lower": [], "higher": [], "equal": [], "mixed": []}
        for fam in hosts:
            lower = higher = 0
            for f in budgets:
                v = rows[f"{veil}@{f}"].get(metric) or 0.0
                h = rows.get(f"{fam}@{f}", {}).get(metric) or 0.0
                lower += v < h
                higher += v > h
            if lower == n:
                groups["lower"].append(fam)
            elif higher == n:
                groups["higher"].append(fam)
            elif lower == higher == 0:
                groups["equal"].append(fam)
            else:
                groups["mixed"].append(f"{fam} (lower at {lower}, higher at {higher})")
        said = [
            f"{word} {', '.join(groups[key])}"
            for key, word in (
                ("lower", "lower at every budget than"),
                ("higher", "higher at every budget than"),
                ("equal", "equal at every budget to"),
                ("mixed", "mixed against"),
            )
            if groups[key]
        ]
        at = [rows[f"{fam}@{mid}"].get(metric) or 0.0 for fam in hosts if f"{fam}@{mid}" in rows]
        spread = (
            f" (f={mid:g}: Veil {pct(rows[f'{veil}@{mid}'].get(metric))}, the hosts "
            f"{pct(min(at))}–{pct(max(at))}{unit})"
            if at
            else ""
        )
        sentences.append(f"{title}: Veil is " + "; ".join(said) + spread + ".")
    return (
        f"Set {name}, {_label(veil, chosen)} against the host policies at the same budget "
        f"({n} budgets, lower is better). " + " ".join(sentences)
    )


def sweep_table(sweep_data: dict[str, Any]) -> str:
    lines = [
        "| ContextConfig tried on set A | "
        + " | ".join(f"@{f:g}: tokens / miss" for f in GOAL_BUDGETS)
        + " | proxy cost @0.5 / 0.625 | harness cost @0.5 / 0.625 | goals met |",
        "| --- | " + " | ".join("---:" for _ in GOAL_BUDGETS) + " | ---: | ---: | ---: |",
    ]
    for name, g in sweep_data["goals"].items():
        cells = [f"{pct(x['tokens'])} / {pct(x['miss_rate'])}" for x in g["points"]]
        met, known = goals_met(g)
        bill = g.get("bill", {}).get("points", [])
        costs = [
            " / ".join(pct(p.get(side, {}).get("cost")) for p in bill)
            for side in ("proxy", "harness")
        ]
        lines.append(
            f"| {name} | " + " | ".join(cells) + f" | {costs[0]} | {costs[1]} | {met} / {known} |"
        )
    return "\n".join(lines)


def reading(data: dict[str, Any]) -> str:
    """A plain statement of whether the goals were met, from the numbers."""
    chosen = f"veil[{data['chosen']}]"
    parts: list[str] = []
    losses: list[str] = []
    for name in ("A", "B"):
        entry = data["sets"][name]
        g = entry["goals"].get(chosen)
        if g is None:
            continue
        met, known = goals_met(g)
        margin = g["best_margin_at_0.5"]
        parts.append(
            f"set {name}: {met} of {known} goals met, margin over the best baseline at f=0.5 "
            + ("n/a" if margin is None else f"{100 * margin:+.1f} points")
        )
        for x in g["points"]:
            for fam, v in x["against"].items():
                if v["met"] is False:
                    losses.append(
                        f"set {name} f={x['budget']:g}: {fam} {pct(v['miss_at_equal_tokens'])} "
                        f"vs Veil {pct(x['miss_rate'])}"
                    )
        for mask, m in g["masks"].items():
            if m["met"] is False:
                losses.append(
                    f"set {name}: {mask} {pct(m['miss_rate'])} vs Veil "
                    f"{pct(m['veil_miss_at_equal_tokens'])}"
                )
    text = "Reading: " + "; ".join(parts) + "."
    if losses:
        text += " Where Veil loses at equal rendered tokens: " + "; ".join(losses) + "."
    cache: list[str] = []
    for name in ("A", "B"):
        rows = data["sets"][name]["rows"]
        v, t = rows.get(f"{chosen}@0.5"), rows.get("truncate-oldest@0.5")
        if v and t:
            cache.append(
                f"set {name} {pct(v['cache_hit_share'])} vs truncation's "
                f"{pct(t['cache_hit_share'])}"
            )
    if cache:
        text += (
            " Prompt-cache share at f=0.5 (tokens of each prompt that repeat the previous one "
            "from its start): " + ", ".join(cache) + "."
        )
    fresh: list[str] = []
    for name in ("A", "B"):
        entry = data["sets"][name]
        row = entry["rows"].get(f"{chosen}@0.5")
        if row and "fresh_evicted" in row["info"]:
            share = row["info"]["fresh_evicted"] * entry["trajectories"] / max(1, entry["steps"])
            fresh.append(f"set {name} {pct(share)}")
    if fresh:
        text += (
            " Steps whose newest observation was not verbatim when the model read it (only "
            "results too large for the window even alone, shown as head and tail): "
            + ", ".join(fresh)
            + " at f=0.5."
        )
    return text


def _curves(
    rows: dict[str, dict[str, Any]], keep: Callable[[str], bool]
) -> dict[str, list[tuple[float, float]]]:
    curves: dict[str, list[tuple[float, float]]] = {}
    for key, r in rows.items():
        fam, _ = family(key)
        if not keep(fam):
            continue
        if fam.startswith("opencode ") and fam[9:10].isdigit():
            fam = "opencode prune (40k/20k, 10k/5k, 4k/2k)"
        curves.setdefault(fam, []).append((r["tokens_vs_keep_all"], r["miss_rate"] or 0.0))
    return curves


def plot(name: str, rows: dict[str, dict[str, Any]], chosen: str, path: Path) -> None:
    """Tokens kept vs miss rate: the baselines and every Veil configuration on the left, the
    host agents' policies and the chosen Veil on the right."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("baselines", _curves(rows, lambda fam: fam not in HOSTS and fam != PROXY)),
        (
            "host agents' policies",
            _curves(rows, lambda fam: fam in HOSTS or fam in (f"veil[{chosen}]", PROXY)),
        ),
    ]
    panels = [(title, curves) for title, curves in panels if curves]
    fig, axes = plt.subplots(1, len(panels), figsize=(7.5 * len(panels), 5), squeeze=False)
    for ax, (title, curves) in zip(axes[0], panels, strict=True):
        for fam, pts in curves.items():
            pts.sort()
            xs = [100 * x for x, _ in pts]
            ys = [100 * y for _, y in pts]
            label = _label(fam, chosen) if fam.startswith("veil[") else fam
            style = "o-" if len(pts) > 1 else "s"
            lw = 2.5 if fam.startswith("veil[") else 1.2
            ax.plot(xs, ys, style, label=label, linewidth=lw, markersize=5)
        ax.set_xlabel("mean prompt tokens per step, % of keep-all")
        ax.set_ylabel("miss rate, % of needs")
        ax.set_title(f"Eviction replay, set {SET_NAMES[name]}: {title}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def section(loaded: Loaded, other: Loaded | None) -> str:
    return body(render_section(loaded.data))
