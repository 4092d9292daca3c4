"""The proxy-fuzz section: random valid conversations through the real ``veil proxy``, every
forwarded body checked."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.report.common import source_line
from benchmarks.lib.results import Loaded

Json = dict[str, Any]


def _row(label: str, t: Json) -> str:
    compressed = ", ".join(f"{k} {v:,}" for k, v in t["compressed"].items()) or "none"
    also = ", ".join(f"{k} {v:,}" for k, v in t.get("also", {}).items()) or "none"
    return (
        f"| {label} | {t['conversations']} | {t['requests']:,} | {t['bodies_checked']:,} "
        f"| {t['unchanged']:,} | {t['stubbed_bodies']:,} | {t['stubs']:,} "
        f"| {t['stubbed_calls']:,} | {t['reserialised']:,} | {compressed} | {also} "
        f"| {t['violations']} |"
    )


def table(data: Json) -> str:
    together = data["together"]
    m = data["machine"]
    lines = [
        f"`veil proxy --window {data['window']:,}`; one conversation per seed "
        f"({', '.join(str(s) for s in data['seeds'])}) and dialect, "
        f"{data['requests_per_conversation']:,} requests each; then "
        f"{together['conversations']} conversations at once, "
        f"{together['requests_per_conversation']:,} requests each (seed {together['seed']}).",
        "",
        "| conversations | n | requests | bodies checked | untouched | with stubs | stubs "
        "| results stubbed | re-serialised | compressed | counts, retries | violations |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |",
        *(_row(f"{d}, one at a time", t) for d, t in data["by_dialect"].items()),
        *(_row(f"{d}, at once", t) for d, t in together["by_dialect"].items()),
        _row("all", data["total"]),
        "",
    ]
    examples = [e for t in data["by_dialect"].values() for e in t["violation_examples"]]
    examples += [e for t in together["by_dialect"].values() for e in t["violation_examples"]]
    examples += together["isolation_violations"]
    if examples:
        lines += ["Violations (first of each conversation):", ""]
        lines += [f"- {e}" for e in examples[:10]]
        lines.append("")
    stderr = data["proxy_stderr"]
    mixed = len(together["isolation_violations"])
    rss = data.get("proxy_rss_mb")
    memory = f"The proxy's resident memory at the end: {rss:,.0f} MB. " if rss else ""
    traceback = "holds a traceback" if stderr["traceback"] else "holds no traceback"
    zstd = "included" if data["zstd"] else "left out (zstandard not installed)"
    ahead = data.get("ahead")
    went = (
        f" Of the {ahead['recorded']:,} requests the proxy recorded, {ahead['went_ahead']:,} "
        "went out ahead of its bookkeeping; the bookkeeping came to other bytes for "
        f"{ahead['diverged']} of them ({ahead['logged']} logged)."
        if ahead
        else ""
    )
    lines.append(
        f"{data['violations']} violations; {mixed} between conversations run at once; the "
        f"proxy's stderr {traceback} ({stderr['lines']} lines). Re-serialised: stubbed bodies "
        "whose other bytes changed layout (allowed only for a client that writes spaced JSON, "
        "whose stubs are otherwise spliced in place too; a compact body that changed layout "
        f"is a violation). zstd bodies {zstd}.{went} {memory}Machine: {m['cpus']} CPUs, Python "
        f"{m['python']}; {source_line(data['source'])}; {data['seconds']:,.0f} s."
    )
    return "\n".join(lines)


def section(loaded: Loaded, other: Loaded | None) -> str:
    return (
        "Whether `veil proxy` ever breaks a session (issue 35): random valid agent "
        "conversations in each wire dialect — parallel tool calls, errors, images and "
        "documents in results, thinking and redacted thinking with signatures, server tools, "
        "`cache_control` markers, results of 10–60 KB, emoji and lone surrogates, gzip and "
        "zstd bodies, token counts, retries and rewinds — grow request by request through "
        "the real proxy, at a window small enough that it evicts all along, to an upstream "
        "that records every body. Each forwarded body must be valid JSON, pair every tool call "
        "with its result, and be the client's body but for evicted results' content (thinking "
        "blocks, signatures, encrypted reasoning and markers in place, byte for byte), each "
        "stub the same in every later request; conversations run at once must never see each "
        "other's text. `make test` runs a smaller fuzz (`tests/proxy/test_fuzz.py`).\n\n"
        + table(loaded.data)
    )
