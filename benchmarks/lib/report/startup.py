"""The start-up section: ``veil -p``, ``veil mcp`` and the TUI from a cold process."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.results import Loaded

TARGETS = {"veil -p (one scripted turn)": 1.5, "veil mcp initialize": 1.5, "TUI first screen": 2.0}


def render_section(data: dict[str, Any]) -> str:
    floor = data["results"]["python -c pass (floor)"]["median"]
    lines = [
        f"Median of {data['runs']} fresh subprocesses each (a discarded first run warms the page "
        f"cache), load average {data['load_before']} before the run.",
        "",
        "| command | median s | min | max | x floor | target |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for name, s in data["results"].items():
        target = TARGETS.get(name)
        verdict = ""
        if target is not None:
            verdict = f"< {target:g} s: {'met' if s['median'] < target else 'MISSED'}"
        lines.append(
            f"| {name} | {s['median']:.2f} | {s['min']:.2f} | {s['max']:.2f} "
            f"| {s['median'] / floor:.1f} | {verdict} |"
        )
    sdks = data["sdk_imports_scripted"]
    lines += [
        "",
        "Provider SDKs imported by a scripted run: "
        + (", ".join(sdks) if sdks else "none (openai and anthropic load only when chosen)")
        + ".",
    ]
    return "\n".join(lines)


def section(loaded: Loaded, other: Loaded | None) -> str:
    return render_section(loaded.data)
