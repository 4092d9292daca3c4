"""The document: ``docs/benchmarks.md`` from the JSON results, section by section.

:data:`SECTIONS` lists the benchmarks in the order the document shows them, each with its title,
its command and the function of :mod:`benchmarks.lib.report` that renders it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.lib.paths import DOC, RESULTS, shown
from benchmarks.lib.report import (
    context_overhead,
    convergence_replay,
    embedders,
    eviction_replay,
    hook_latency,
    locomo_retrieval,
    proxy_fuzz,
    proxy_overhead,
    proxy_peers,
    real_model,
    recall_latency,
    recall_profile,
    redaction,
    server_load,
    soak,
    startup,
    vector_search,
    write_overhead,
)
from benchmarks.lib.report.common import machine_line
from benchmarks.lib.results import Loaded, load, load_other


@dataclass(frozen=True)
class Section:
    name: str
    title: str
    command: str
    render: Callable[[Loaded, Loaded | None], str]
    """The section's markdown from its result and, when both exist, the run of the other size
    (quick beside full)."""
    note: str = ""
    """What the commands block says after the command (default: its JSON and --quick)."""


SECTIONS: tuple[Section, ...] = (
    Section(
        "vector_search",
        "Vector search: the in-process index against sqlite-vec",
        "python -m benchmarks.vector_search",
        vector_search.section,
    ),
    Section(
        "startup",
        "Start-up: `veil -p`, `veil mcp` and the TUI, from a cold process",
        "python -m benchmarks.startup",
        startup.section,
    ),
    Section(
        "embedders",
        "Embedders: load, throughput, size, LoCoMo evidence recall",
        "python -m benchmarks.embedders",
        embedders.section,
    ),
    Section(
        "write_overhead",
        "Write overhead of `Memory.remember` beside the LLM call",
        "python -m benchmarks.write_overhead",
        write_overhead.section,
    ),
    Section(
        "recall_latency",
        "Recall latency vs memory size (1k to 1M items, SQLite and PostgreSQL)",
        "python -m benchmarks.recall_latency",
        recall_latency.section,
    ),
    Section(
        "recall_profile",
        "Where a recall's time goes (store calls per query type, SQLite and PostgreSQL)",
        "python -m benchmarks.recall_profile",
        recall_profile.section,
    ),
    Section(
        "locomo_retrieval",
        "LoCoMo evidence recall of `Memory.recall` vs BM25, dense and RRF",
        "python -m benchmarks.locomo_retrieval",
        locomo_retrieval.section,
    ),
    Section(
        "context_overhead",
        "Context hook overhead per tool call (capture + score + evict + render; persistence "
        "deferred)",
        "python -m benchmarks.context_overhead",
        context_overhead.section,
    ),
    Section(
        "convergence_replay",
        "Convergence monitor replayed over 1,326 real agent trajectories",
        "python -m benchmarks.convergence_replay",
        convergence_replay.section,
    ),
    Section(
        "eviction_replay",
        "Eviction replay on real agent trajectories vs masking, truncation, compaction, LRU",
        "python -m benchmarks.eviction_replay",
        eviction_replay.section,
    ),
    Section(
        "redaction",
        "Secret redaction: recall on a canary corpus, false positives on real tool outputs, cost",
        "python -m benchmarks.redaction",
        redaction.section,
    ),
    Section(
        "hook_latency",
        "Hook latency per tool call in the real Claude Code: `mcp_tool` vs one process per hook",
        "python -m benchmarks.hook_latency",
        hook_latency.section,
    ),
    Section(
        "proxy_overhead",
        "Proxy overhead per request: what `veil claude` / `veil codex` add before forwarding",
        "python -m benchmarks.proxy_overhead",
        proxy_overhead.section,
    ),
    Section(
        "proxy_fuzz",
        "Proxy fuzz: random conversations through `veil proxy`, every forwarded body checked",
        "python -m benchmarks.proxy_fuzz",
        proxy_fuzz.section,
    ),
    Section(
        "proxy_peers",
        "Veil's proxy beside a published peer (CliffCompaction 0.1.0), both over HTTP",
        "python -m benchmarks.proxy_peers",
        proxy_peers.section,
        "after `pip install cliffcompaction==0.1.0`; run by hand (not by `make bench`)",
    ),
    Section(
        "server_load",
        "Load on `veil serve`: recall and remember at 1, 8 and 32 clients",
        "python -m benchmarks.server_load",
        server_load.section,
    ),
    Section(
        "soak",
        "Soak: 10 minutes of steady load in-process, then on `veil serve` with 32 clients",
        "python -m benchmarks.soak",
        soak.section,
    ),
    Section(
        "real_model",
        "A real model: extraction and the agent on a local 1.5B model",
        "python -m benchmarks.real_model",
        real_model.section,
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
            # redaction records the machine before and after its run
            machine = item.data.get("machine") or item.data.get("machine_before", {})
            machines.setdefault(machine_line(machine), []).append(s.name)
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
        label = " — **quick run** (the full result is missing)" if item.quick else ""
        out += [f"Source: `{shown(item.path)}`{label}. Command: `{s.command}`.", ""]
        out.append(s.render(item, load_other(item, results)))
    return "\n".join(out) + "\n"


def write(doc: Path = DOC, results: Path = RESULTS) -> Path:
    """Render and write the document; returns its path."""
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(render(results))
    return doc
