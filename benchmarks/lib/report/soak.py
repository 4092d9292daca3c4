"""The soak section: RSS and latency drift under a steady load, growing and steady data."""

from __future__ import annotations

from typing import Any

from benchmarks.lib import results
from benchmarks.lib.results import Loaded


def render_section(data: dict[str, Any]) -> str:
    lines = [
        "| phase | duration s | RSS first → last MB | RSS slope MB/min | DB first → last MB "
        "| p95 slope ms/min |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for phase in data["phases"]:
        w = phase["windows"]
        slopes = ", ".join(
            f"{k.split('_p95')[0]} {v}"
            for k, v in phase.items()
            if k.endswith("_p95_slope_ms_per_min")
        )
        lines.append(
            f"| {phase['phase']} | {w[-1]['t'] if w else 0} | "
            f"{w[0]['rss_mb'] if w else '–'} → {w[-1]['rss_mb'] if w else '–'} | "
            f"{phase['rss_slope_mb_per_min']} | "
            f"{w[0].get('db_mb', '–') if w else '–'} → {w[-1].get('db_mb', '–') if w else '–'} | "
            f"{slopes} |"
        )
    findings: list[str] = []
    for phase in data["phases"]:
        rss = phase["rss_slope_mb_per_min"]
        if rss is not None and rss > 1.0:
            findings.append(f"{phase['phase']}: RSS grows {rss} MB/min")
        for key, value in phase.items():
            if key.endswith("_p95_slope_ms_per_min") and value is not None and value > 5.0:
                findings.append(
                    f"{phase['phase']}: {key.split('_p95')[0]} p95 drifts up {value} ms/min"
                )
    verdict = (
        "Drift found — " + "; ".join(findings) + "."
        if findings
        else "No RSS growth above 1 MB/min and no p95 drift above 5 ms/min."
    )
    lines += [
        "",
        verdict,
        "",
        "Slopes are least-squares fits over 10 s windows after the first minute. "
        "In the growing phases every remember adds an episode and facts, so the database "
        "grows for the whole run (DB column) and recall/remember work over more data as "
        "time passes; the steady phases erase the scope every minute, so data stays bounded "
        "and a slope there is not explained by growth. RSS slope is the leak detector. "
        "Measured on a shared 2-CPU machine.",
    ]
    return "\n".join(lines)


def section(loaded: Loaded, other: Loaded | None) -> str:
    text = render_section(loaded.data)
    steady = results.read("soak-steady", loaded.path.parent)
    if steady is not None:
        text += (
            "\n\nSteady state (`python -m benchmarks.soak --steady`, source "
            "`benchmarks/results/soak-steady.json`): the same load with the scope erased "
            "every minute, so the data stays bounded.\n\n" + render_section(steady)
        )
    return text
