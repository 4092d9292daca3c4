"""The vector-search section: k-NN over the SQLite store's vectors, the in-process index
against sqlite-vec (``vec0`` and a scan), per query, cold, and per connection."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.results import Loaded


def table(data: dict[str, Any]) -> str:
    lines = [
        "| vectors in scope (of all) | method | p50 ms | p95 ms | recall@10 | first query on "
        "a fresh handle ms | vec0 fill s |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in data["results"]:
        for m, s in r["methods"].items():
            q = s["per_query_ms"]
            lines.append(
                f"| {r['vectors']:,} ({r['vectors_all_scopes']:,}) | {m} | {q['p50']:.2f} | "
                f"{q['p95']:.2f} | {s['recall_at_10']:.3f} | {s['cold_first_query_ms']:.1f} | "
                + (f"{s['build_s']:.2f} |" if "build_s" in s else "— |")
            )
    cost = data["extension"]
    lines += ["", f"Per connection and per import ({cost['driver']}):", ""]
    lines += ["| what | median ms |", "| --- | ---: |"]
    lines += [f"| {k} | {v['median_ms']:.2f} |" for k, v in cost.items() if k != "driver"]
    return "\n".join(lines)


def section(loaded: Loaded, other: Loaded | None) -> str:
    data = loaded.data
    load = f"load {data['load_before']} before, {data['load_after']} after"
    head = (
        f"k={data['k']}, {data['queries']} queries after {data['warmup']} warm-up, embedder "
        f"{data['embedder']}, sqlite-vec {data['sqlite_vec']}; {load}. The same rows of the "
        "store's table searched three ways in one run, interleaved per query: the store "
        "(`in-process`), a sqlite-vec `vec0` table partitioned by scope, and "
        "`vec_distance_cosine` over the blob column (`scan`). Why Veil serves vectors in process: "
        'docs/architecture.md, "No SQLite extension".'
    )
    return head + "\n\n" + table(data)
