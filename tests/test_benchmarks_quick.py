"""The benchmark scripts cannot rot: their quick runs must succeed and write sane JSON.

Each quick run is the documented command (``python -m benchmarks.NAME --quick``) in a
subprocess; it must exit 0, write ``benchmarks/results/NAME-quick.json`` and leave the full
result ``NAME.json`` untouched. Together they take about 30 s (embedders ~17 s, write_overhead
~2 s, recall_latency ~6 s, locomo_retrieval ~2 s). The report must render from whatever
results exist, without ``veil``; and ``benchmarks/`` keeps its shape: scripts import the shared
library (``benchmarks.lib`` and the benchmarks' own packages), never each other.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from benchmarks.lib.report import document
from benchmarks.run import BENCHMARKS, EXPLICIT

from tests.hosts.binaries import CLAUDE_CODE, AgentUnavailable, install

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"


def run_quick(name: str) -> dict[str, Any]:
    """Run ``python -m benchmarks.NAME --quick``; return its fresh quick JSON."""
    full = RESULTS / f"{name}.json"
    full_before = full.read_bytes() if full.exists() else None
    started = time.time()
    done = subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, f"{name} --quick failed:\n{done.stdout}\n{done.stderr}"
    quick = RESULTS / f"{name}-quick.json"
    assert quick.exists() and quick.stat().st_mtime >= started - 1, f"{quick} was not written"
    if full_before is not None:
        assert full.read_bytes() == full_before, f"--quick overwrote {full}"
    data: dict[str, Any] = json.loads(quick.read_text())
    assert data["quick"] is True
    assert {"python", "platform", "cpus"} <= set(data["machine"])
    return data


def test_startup_quick() -> None:
    data = run_quick("startup")
    results = data["results"]
    assert set(results) == {
        "python -c pass (floor)",
        "veil --version",
        "veil -p (one scripted turn)",
        "veil mcp initialize",
        "TUI first screen",
    }
    for stats in results.values():
        assert stats["n"] == 2 and 0 < stats["min"] <= stats["median"] <= stats["max"]
    # A scripted run imports no provider SDK (measured, not assumed: -X importtime).
    assert data["sdk_imports_scripted"] == []


def test_write_overhead_quick() -> None:
    data = run_quick("write_overhead")
    assert data["existing_facts"] == 1_000 and data["measured_calls"] == 50
    assert data["populate"]["facts"] >= 1_000
    assert [r["mode"] for r in data["results"]] == ["full", "normal"]
    for r in data["results"]:
        assert r["llm_calls_per_remember"] == [1]
        for key in ("per_remember_ms", "per_fact_ms", "append_floor_ms"):
            stats = r[key]
            assert 0 < stats["median"] <= stats["p95"] <= stats["p99"] <= stats["max"]
            assert stats["median"] < 1_000, f"{key} median is {stats['median']} ms"
        assert r["per_fact_ms"]["median"] <= r["per_remember_ms"]["median"]
        outcomes = r["outcomes"]
        assert outcomes["added"] > 0 and outcomes["superseded"] > 0 and outcomes["reinforced"] > 0


def test_embedders_quick() -> None:
    # Needs LoCoMo in the shared data folder ($VEIL_SHARED_DIR); missing data fails, not skips.
    data = run_quick("embedders")
    labels = [r["embedder"] for r in data["results"]]
    assert "static" in labels and "hash" in labels
    for r in data["results"]:
        assert r["dim"] > 0 and r["emb_per_s"] > 0 and r["questions"] > 0
        recalls = [r["recall_all"][f"@{k}"] for k in (1, 5, 10, 20, 50)]
        assert all(0 <= x <= 1 for x in recalls)
        assert recalls == sorted(recalls)


def test_recall_latency_quick() -> None:
    data = run_quick("recall_latency")
    rows = data["results"]
    assert [(r["backend"], r["n_items"]) for r in rows] == [("sqlite", 1_000), ("sqlite", 10_000)]
    assert data["plot"] is None and data["queries"] == 50
    assert data["machine"]["load_average"]["start"]
    assert set(data["slopes"]) == set()  # one size of at least 10k: no slope
    for r in rows:
        assert r["facts"] + r["episodes"] == r["n_items"]
        assert r["facts"] > 0 and r["episodes"] > 0 and r["entities"] > 0
        assert r["fact_vectors"] > 0 and r["db_bytes"] > 0
        stats = r["recall_ms"]
        assert stats["n"] == 50
        assert 0 < stats["p50"] <= stats["p95"] <= stats["p99"] <= stats["max"]
        assert set(r["by_type_ms"]) == {"entity", "user", "keyword", "briefing"}
        for ref in ("numpy_top50", "fts_term", "embed", "floor"):
            assert r["reference_ms"][ref]["p50"] > 0
            assert r["ratio"][ref]["p50"] > 0
        assert r["ratio"]["floor_per_query"]["p95"] > 0
        assert r["reopen"]["first_recall_ms"] > 0
        assert r["mean_returned"]["facts"] > 0


def test_locomo_retrieval_quick() -> None:
    # Needs LoCoMo in the shared data folder ($VEIL_SHARED_DIR); missing data fails, not skips.
    data = run_quick("locomo_retrieval")
    assert len(data["conversations"]) == 2 and data["questions"] > 0
    assert list(data["retrievers"]) == ["veil", "veil-untuned", "bm25", "dense", "rrf"]
    for r in data["retrievers"].values():
        assert r["questions"] == data["questions"]
        recalls = [r["recall_all"][f"@{k}"] for k in (1, 5, 10, 20)]
        assert all(0 <= x <= 1 for x in recalls) and recalls == sorted(recalls)
        for k in (1, 5, 10, 20):
            assert r["recall_all"][f"@{k}"] <= r["recall_frac"][f"@{k}"]
        assert sum(c["questions"] for c in r["by_category"].values()) == r["questions"]
    # Lexical matching is strong on LoCoMo: BM25 beats chance by far on 2 conversations.
    assert data["retrievers"]["bm25"]["recall_all"]["@10"] > 0.3
    assert data["veil_lists_shorter_than_20"] == 0
    # the quick run's two conversations are both in the tuning half
    assert set(data["halves"]["tune"]) == set(data["retrievers"])
    assert data["halves"]["held_out"] == {}


def test_run_lists_every_benchmark_module() -> None:
    """BENCHMARKS names exactly the modules of benchmarks/ with a top-level ``main``, except
    the runner and the report themselves."""
    found: set[str] = set()
    for path in (REPO / "benchmarks").glob("*.py"):
        tree = ast.parse(path.read_text())
        if any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
            found.add(path.stem)
    assert found - {"run", "report", *EXPLICIT} == set(BENCHMARKS)


def test_report_renders_from_results() -> None:
    text = document.render()
    assert text.startswith("# Benchmarks")
    for section in document.SECTIONS:
        assert section.command in text


def test_report_renders_without_veil_or_third_party_packages() -> None:
    """``python -m benchmarks.report`` imports no ``veil`` (it must render while the package is
    broken or mid-edit) and no third-party package: run in a fresh interpreter."""
    code = (
        "import sys\n"
        "from benchmarks import report\n"
        "assert report.main(['--stdout']) == 0\n"
        "third_party = {'veil', 'numpy', 'httpx', 'orjson', 'matplotlib', 'psycopg'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & third_party), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Benchmarks")
    assert done.stderr.strip() == "[]"


SCRIPTS = frozenset(f"benchmarks.{name}" for name in (*BENCHMARKS, *EXPLICIT, "run", "report"))
"""The modules of ``benchmarks/`` run as ``python -m benchmarks.NAME``; everything else there is
the library they share."""


def _module(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` names in an import, anywhere in it (function bodies too):
    ``import a.b`` gives ``a.b``; ``from a.b import c`` gives ``a.b`` and ``a.b.c`` (which is a
    module or a name in ``a.b``); relative imports resolved."""
    name = _module(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            out.add(base)
            out |= {f"{base}.{alias.name}" for alias in node.names}
    return out


def _benchmark_modules() -> dict[str, Path]:
    return {_module(p): p for p in sorted((REPO / "benchmarks").rglob("*.py"))}


def test_scripts_import_the_library_never_each_other() -> None:
    """Scripts import only the library (``benchmarks.lib``, the benchmarks' own packages such
    as ``benchmarks.replay``, ``benchmarks.redaction_corpus``), ``veil`` and third-party
    packages — never another script; the library imports no script; of ``tests`` only the
    agent harness ``tests.hosts`` is used (the real Claude Code the hook benchmark drives)."""
    modules = _benchmark_modules()
    assert not SCRIPTS - set(modules), sorted(SCRIPTS - set(modules))
    wrong: list[str] = []
    for name, path in modules.items():
        imported = _imports(path)
        wrong += [f"{name} imports the script {m}" for m in sorted(imported & SCRIPTS)]
        wrong += [
            f"{name} imports {m}"
            for m in sorted(imported)
            if (m == "tests" or m.startswith("tests.")) and not m.startswith("tests.hosts")
        ]
    assert wrong == []


def test_benchmarks_have_no_import_cycle() -> None:
    """The import graph of ``benchmarks/`` (a module depends on what it imports and on the
    packages above it, whose ``__init__`` runs first) has no cycle."""
    modules = _benchmark_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        parents = {".".join(name.split(".")[:k]) for k in range(1, name.count(".") + 1)}
        graph[name] = ((_imports(path) | parents) & set(modules)) - {name}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt) :], nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)


def test_recall_profile_quick() -> None:
    data = run_quick("recall_profile")
    assert data["n_items"] == 5_000
    [run] = data["runs"]  # the quick run profiles SQLite only
    assert run["backend"] == "sqlite"
    assert set(run["types"]) == {"entity", "user", "keyword", "briefing"}
    for t in run["types"].values():
        # the store calls are inside the recall's time; what is left is Python
        assert 0 < t["store_ms"] <= t["recall_mean_ms"]
        assert all(p["calls_per_query"] > 0 for p in t["parts"])
    searched = {p["call"].split(" ")[0] for t in run["types"].values() for p in t["parts"]}
    assert {"search_text", "search_vector", "fetch_values"} <= searched


def test_context_overhead_quick() -> None:
    data = run_quick("context_overhead")
    sizes = [r["items"] for r in data["results"]]
    assert len(sizes) == 2 and sizes[0] < sizes[1]
    for r in data["results"]:
        hook = r["hook_ms"]
        assert 0 < hook["median"] <= hook["p95"] <= hook["p99"]
        assert r["references_ms"]["numpy_score_many"]["median"] > 0
    prof = data["profile"]
    parts = {p["part"]: p for p in prof["parts"]}
    # every timed part ran, once or more per hook call where it must
    # scored only at a batch (outside one only stage 3 runs, which reads no score), and again
    # when the batch's rendering was over budget and the window evicted once more
    assert 0 < parts["scores (all items)"]["calls_per_call"] <= 1.2
    assert parts["the three stages' plan"]["calls_per_call"] == 1.0
    assert parts["working-set row"]["calls_per_call"] == 1.0
    assert 0 < sum(p["us_per_call"] for p in prof["parts"]) < 2 * prof["hook_cpu_us_mean"]


def test_convergence_replay_quick() -> None:
    data = run_quick("convergence_replay")
    assert data["trajectories"] > 0
    assert set(data["sets"]) <= {"A", "B"}


def test_server_load_quick() -> None:
    data = run_quick("server_load")
    ops = {(r["op"], r["clients"]) for r in data["rows"]}
    assert ops == {("recall", 1), ("recall", 8), ("remember", 1), ("remember", 8)}
    assert all(r["rps"] > 0 and r["p50_ms"] <= r["p95_ms"] for r in data["rows"])


def test_proxy_overhead_quick() -> None:
    data = run_quick("proxy_overhead")
    assert data["steps"] == 300 and data["tokens_last"] > data["tokens_tail_first"] > 0
    for part in ("proxy_ms", "baseline_ms"):
        s = data["newest_tenth"][part]
        assert s["n"] == 30 and 0 < s["p50"] <= s["p95"] <= s["max"]
    e2e = data["end_to_end"]
    assert e2e["direct_ms"]["n"] == e2e["proxy_ms"]["n"] == 50


def test_proxy_fuzz_quick() -> None:
    data = run_quick("proxy_fuzz")
    assert data["violations"] == 0 and not data["proxy_stderr"]["traceback"]
    # requests went ahead of the bookkeeping, and it always came to the bytes they were sent as
    ahead = data["ahead"]
    assert ahead["recorded"] > 0 and 0 < ahead["went_ahead"] < ahead["recorded"]
    assert ahead["diverged"] == 0 and ahead["logged"] == 0
    for dialect, tally in data["by_dialect"].items():
        assert tally["bodies_checked"] == tally["requests"] > 0, dialect
        assert tally["stubs"] > 0, f"{dialect}: nothing was evicted, so nothing was checked"
    assert data["together"]["conversations"] == 16
    assert data["together"]["isolation_violations"] == []


def test_hook_latency_quick() -> None:
    # Drives the real Claude Code; where it cannot be installed the test skips, loudly.
    try:
        install(CLAUDE_CODE)
    except AgentUnavailable as exc:
        pytest.skip(f"REAL AGENT NOT RUN: {CLAUDE_CODE.spec} could not be installed: {exc}")
    data = run_quick("hook_latency")
    assert list(data["configs"]) == ["mcp_tool", "command"]
    for name, c in data["configs"].items():
        assert c["exit"] == 0 and c["tool_calls"] == data["tool_calls"] == 8
        # every tool call got its PreToolUse and PostToolUse/PostToolUseFailure, all answered
        assert c["tool_calls_with_hooks"] == 8, name
        assert c["not_success"] == [], name
        assert set(c["by_event"]) == {
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PostToolUseFailure",
        }
        kinds = {e["kind"] for e in c["by_event"].values()}
        assert kinds == {name}
        per = c["per_tool_call_ms"]
        assert per["n"] == 8 and 0 < per["p50"] <= per["p95"] <= per["max"]
        # a process per hook may miss veil hook's 0.9 s deadline on a busy machine (no answer)
        assert c["briefing_delivered"] or "UserPromptSubmit" in c["gave_up"], name
    assert data["configs"]["mcp_tool"]["briefing_delivered"]
    # one process per hook is slower than a call into the warm server, measured in one run
    assert data["ratio_command_to_mcp_tool"]["per_tool_call_p50"] > 1
    wall = data["session_start"]["wall_ms"]
    assert set(wall) == {"python -c pass (floor)", "SessionStart startup", "SessionStart resume"}
    assert all(s["n"] == 3 and s["p50"] > 0 for s in wall.values())


def test_vector_search_quick() -> None:
    data = run_quick("vector_search")
    (row,) = data["results"]
    assert row["vectors"] == 1_000 and row["vectors_all_scopes"] == 2_000
    assert set(row["methods"]) == {"in-process", "sqlite-vec vec0", "sqlite-vec scan"}
    for name, method in row["methods"].items():
        assert method["recall_at_10"] == 1.0, name  # all three are exact at this size
        q = method["per_query_ms"]
        assert q["n"] == 20 and 0 < q["p50"] <= q["p95"] <= q["max"], name
        assert method["cold_first_query_ms"] > 0, name
    assert data["extension"]["driver"].startswith(("sqlite3", "sqlean"))
