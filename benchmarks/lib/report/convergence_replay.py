"""The convergence-replay section: when the convergence monitor would have escalated on real
agent trajectories, with thresholds chosen on set A and checked on held-out set B."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.report.common import body, pct
from benchmarks.lib.results import Loaded

SET_NAMES = {
    "A": "A: mini-swe-agent + Gemini 3 Pro (Verified)",
    "B": "B: SWE-agent + GPT-4 (Lite), held out",
}


def replay_table(result: dict[str, Any]) -> str:
    lines = [
        "| set | resolved / unresolved runs | level | resolved escalated | median step "
        "| unresolved escalated | median step |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, entry in result["sets"].items():
        res, unres = entry["resolved"], entry["unresolved"]
        for level in ("1", "2", "3"):
            a, b = res["levels"][level], unres["levels"][level]
            first = level == "1"
            label = SET_NAMES[name] if first else ""
            counts = f"{res['runs']} / {unres['runs']}" if first else ""
            lines.append(
                f"| {label} | {counts} | {level} "
                f"| {a['runs']} ({pct(a['share'])}) | {_num(a['median_step'])} "
                f"| {b['runs']} ({pct(b['share'])}) | {_num(b['median_step'])} |"
            )
    return "\n".join(lines)


def _loop(entry: dict[str, Any]) -> str:
    loop = entry["unresolved_looping"]
    return f"{loop['stopped']} of {loop['runs']}"


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:g}"


MATCH = "These are the `MonitorConfig()` defaults."


MISMATCH = "NOTE: the `MonitorConfig()` defaults differ from this choice."


def render_section(result: dict[str, Any]) -> str:
    """The markdown section for ``docs/benchmarks.md``, from the JSON alone."""
    t = result["thresholds"]
    sets = result["sets"]
    a_res = sets["A"]["resolved"]
    lines = [
        "## Convergence replay",
        "",
        f"`python -m benchmarks.convergence_replay{' --quick' if result['quick'] else ''}` — "
        f"{result['trajectories']:,} real SWE-bench trajectories replayed through the "
        f"convergence monitor, every step recorded as an attempt ({result['seconds']:.0f} s).",
        "",
        f"Thresholds chosen on set A only (resolved runs reaching the count: level 3 < 2%, "
        f"level 2 < 10%, level 1 < 25%): note after **{t['note_after']}**, demand a different "
        f"approach after **{t['demand_after']}**, stop after **{t['stop_after']}** circling "
        f"attempts since the last pass; the OpenHands stuck patterns raise the level to 2. "
        + (MATCH if result["defaults_match"] else MISMATCH),
        "",
        replay_table(result),
        "",
        "| set | max circling, resolved (median / p90) | unresolved (median / p90) "
        "| false stops (level 3 on resolved) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, entry in sets.items():
        r, u = entry["resolved"], entry["unresolved"]
        lines.append(
            f"| {SET_NAMES[name]} | {_num(r['max_circling_median'])} / "
            f"{_num(r['max_circling_p90'])} | {_num(u['max_circling_median'])} / "
            f"{_num(u['max_circling_p90'])} | {pct(entry['false_stop_rate'])} |"
        )
    lines += [
        "",
        f"Reading: on set A, level 3 stops {pct(sets['A']['false_stop_rate'])} of the runs "
        f"that were resolved and {pct(sets['A']['unresolved']['levels']['3']['share'])} of "
        f"those that were not ({_loop(sets['A'])} of the unresolved runs that reached level 2); "
        f"on held-out set B "
        f"{pct(sets['B']['false_stop_rate'])} and "
        f"{pct(sets['B']['unresolved']['levels']['3']['share'])} "
        f"({_loop(sets['B'])}). Set A's resolved runs have a "
        f"median maximum circling count of {_num(a_res['max_circling_median'])}. Set B has no "
        "exit codes (its outcomes come from test summaries and tracebacks only, so a passing "
        "run rarely resets the count) and its runs are short (at most 23 steps).",
    ]
    return "\n".join(lines) + "\n"


def section(loaded: Loaded, other: Loaded | None) -> str:
    return body(render_section(loaded.data))
