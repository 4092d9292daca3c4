"""Measure the secret redactor: recall on a canary corpus, changes to real tool outputs, cost.

Run from the repository root::

    python -m benchmarks.redaction            # 5 rounds of the corpus, all 1,326 trajectories
    python -m benchmarks.redaction --quick    # 1 round, 12 trajectories, few timing samples

What is measured:

- **Recall per format** on :mod:`benchmarks.redaction_corpus` (seeded fake secrets of 27
  formats inside realistic tool outputs). A secret is caught when it no longer occurs in the
  redacted text and its expected placeholder does; decoys (hashes, UUIDs, base64 of text,
  paths, colours, versions, stand-ins) must survive verbatim; re-redacting must change nothing.
- **Changes to real tool outputs**: the default redactor over every observation of the agent
  trajectories in ``shared/data/trajectories`` (loaded by :mod:`benchmarks.replay.load`). Every
  change is listed in ``benchmarks/results/redaction_changes.md`` — rule, trajectory, step,
  kind, a short context taken from the *redacted* text and the masked secret's shape (length
  and character classes; never the secret) — with the judgement recorded in
  :data:`JUDGEMENTS` (``secret``, ``fixture``: secret-shaped test data, or ``not-secret``).
  "Changed wrongly" counts ``not-secret`` and unjudged changes (the changes earlier versions of
  the rules made, judged: :data:`benchmarks.lib.report.redaction.EARLIER_ITERATIONS`). Also
  reported: the share of observations for which a detect-secrets rule's trigger hits, i.e. how
  often a fresh process would pay for importing detect-secrets.
- **Installed site-packages**: every text file (code, docs, configs) of the environment's
  site-packages, a second false-positive corpus; its changes are listed too.
- **Cost per captured result**: wall time of ``Redactor.redact`` on real outputs resized to
  1 KB, 10 KB and 100 KB (windows of all observations joined, at evenly spaced offsets), after
  a warm-up; p50/p95/max of the first timed run of each window, and p50/p95 of the best of
  three runs per window (what the code costs with scheduler noise taken out). The first call
  in a fresh process (rule compilation; detect-secrets' import when a trigger hits) and
  ``import veil.redaction`` (``-X importtime``) are measured in subprocesses. The machine's
  cores and load average are recorded: other work on the machine shows up in the tail.

Results: ``benchmarks/results/redaction.json`` (``redaction-quick.json`` with ``--quick``), a
markdown table on stdout; the full run also writes ``redaction_changes.md``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import sysconfig
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.lib.machine import describe, load_average
from benchmarks.lib.paths import REPO, RESULTS, shown
from benchmarks.lib.report.redaction import changes_report, table
from benchmarks.lib.results import save
from benchmarks.lib.timing import summary
from benchmarks.redaction_corpus import Sample, corpus
from benchmarks.replay.load import load
from veil.redaction import Finding, Redactor, placeholder

SIZES = {"1KB": 1_000, "10KB": 10_000, "100KB": 100_000}
FULL_SAMPLES = {"1KB": 2_000, "10KB": 1_000, "100KB": 150}
QUICK_SAMPLES = {"1KB": 100, "10KB": 40, "100KB": 4}

_DJANGO_KEY: tuple[str, str] = (
    "secret",
    "the `SECRET_KEY` that `django-admin startproject` generated for the agent's scratch "
    "project (`django-insecure-` + 50 random characters): a real signing key, if a throwaway one",
)
_DJANGO_STEPS = {
    "sweagent-gpt4-lite-run2/django__django-14580": (6, 7, 15),
    "sweagent-gpt4-lite-run3/django__django-14238": (3, 4, 6, 9, 15),
}
JUDGEMENTS: dict[tuple[str, int, str], tuple[str, str]] = {
    (trajectory, step, "veil:assignment"): _DJANGO_KEY
    for trajectory, steps in _DJANGO_STEPS.items()
    for step in steps
}
"""(trajectory id, step, rule) → (verdict, reason) for every change the full run lists:
``secret``, ``fixture`` (secret-shaped test data) or ``not-secret``. A change not listed here
counts as wrong until someone judges it."""

# ---- recall ----------------------------------------------------------------------------------


def caught(sample: Sample, redacted: str) -> list[bool]:
    out: list[bool] = []
    for c in sample.canaries:
        expected = placeholder(c.kind, c.secret, last4=c.kind != "private-key")
        out.append(c.secret not in redacted and expected in redacted)
    return out


def measure_recall(redactor: Redactor, samples: Sequence[Sample]) -> dict[str, Any]:
    total: Counter[str] = Counter()
    hits: Counter[str] = Counter()
    misses: list[dict[str, str]] = []
    decoys = kept = 0
    idempotent = True
    for sample in samples:
        done = redactor.redact(sample.text)
        idempotent &= redactor.redact(done.text).text == done.text
        for canary, ok in zip(sample.canaries, caught(sample, done.text), strict=True):
            total[canary.format] += 1
            hits[canary.format] += ok
            if not ok:
                misses.append({"scenario": sample.scenario, "format": canary.format})
        decoys += len(sample.decoys)
        kept += sum(d in done.text for d in sample.decoys)
    formats = {
        f: {"secrets": total[f], "caught": hits[f], "recall": hits[f] / total[f]}
        for f in sorted(total)
    }
    return {
        "samples": len(samples),
        "secrets": sum(total.values()),
        "formats": formats,
        "recall": sum(hits.values()) / sum(total.values()),
        "misses": misses,
        "decoys": {"total": decoys, "kept": kept},
        "idempotent": idempotent,
    }


# ---- real tool outputs -------------------------------------------------------------------------


def _classes(secret: str) -> str:
    marks = [
        ("a", any(c.islower() for c in secret)),
        ("A", any(c.isupper() for c in secret)),
        ("9", any(c.isdigit() for c in secret)),
        ("+", any(not c.isalnum() for c in secret)),
    ]
    return "".join(m for m, present in marks if present)


def masked_context(original: str, redacted: str, finding: Finding, shift: int) -> str:
    """±40 characters of the redacted text around the placeholder, then the secret's shape."""
    secret = original[finding.start : finding.end]
    start = finding.start + shift
    end = redacted.find("]", start) + 1
    before = redacted[max(0, start - 40) : start]
    after = redacted[end : end + 40]
    context = (before + redacted[start:end] + after).replace("\n", "⏎").replace("|", "\\|")
    return f"{context} (len {len(secret)}, {_classes(secret)})"


def scan_trajectories(redactor: Redactor, *, quick: bool) -> dict[str, Any]:
    from veil.redaction.rules import builtin_rules

    ds_rules = [r for r in builtin_rules() if r.name.startswith("detect-secrets:")]
    trajectories = load("A", limit=6) + load("B", limit=6) if quick else load("A") + load("B")
    observations = changed = ds_triggered = 0
    changes: list[dict[str, Any]] = []
    by_rule: Counter[str] = Counter()
    started = time.perf_counter()
    for traj in trajectories:
        for step in traj.steps:
            observations += 1
            text = step.observation
            lowered = text.lower()
            ds_triggered += any(
                any(t.search(lowered if r.fold else text) for t in r.trigger)
                and (r.gate is None or r.gate.search(text) is not None)
                for r in ds_rules
            )
            done = redactor.redact(text)
            if not done.changed:
                continue
            changed += 1
            shift = 0
            for f in done.findings:
                by_rule[f.rule] += 1
                verdict, reason = JUDGEMENTS.get((traj.id, step.i, f.rule), ("unjudged", ""))
                changes.append(
                    {
                        "rule": f.rule,
                        "kind": f.kind,
                        "trajectory": traj.id,
                        "step": step.i,
                        "context": masked_context(text, done.text, f, shift),
                        "verdict": verdict,
                        "reason": reason,
                    }
                )
                shift += len(placeholder(f.kind, text[f.start : f.end])) - (f.end - f.start)
    wrong_obs = len(
        {
            (c["trajectory"], c["step"])
            for c in changes
            if c["verdict"] in ("not-secret", "unjudged")
        }
    )
    return {
        "trajectories": len(trajectories),
        "observations": observations,
        "changed": changed,
        "changed_share": changed / observations,
        "changed_wrongly": wrong_obs,
        "changed_wrongly_share": wrong_obs / observations,
        "verdicts": dict(Counter(c["verdict"] for c in changes)),
        "by_rule": dict(by_rule),
        "detect_secrets_trigger_share": ds_triggered / observations,
        "seconds": round(time.perf_counter() - started, 2),
        "changes": changes,
    }


CODE_SUFFIXES = frozenset(
    {".py", ".md", ".rst", ".txt", ".json", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".js"}
)


def scan_site_packages(redactor: Redactor, *, quick: bool) -> dict[str, Any]:
    """Every text file of the installed site-packages (code, docs, configs: a second
    false-positive corpus, where test fixtures and names in secrets' places abound)."""
    root = Path(sysconfig.get_paths()["purelib"])
    paths = sorted(p for p in root.rglob("*") if p.suffix in CODE_SUFFIXES and p.is_file())
    if quick:
        paths = paths[:: max(1, len(paths) // 300)]
    files = changed = 0
    changes: list[dict[str, Any]] = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        files += 1
        done = redactor.redact(text)
        if not done.changed:
            continue
        changed += 1
        shift = 0
        for f in done.findings:
            changes.append(
                {
                    "rule": f.rule,
                    "kind": f.kind,
                    "file": str(path.relative_to(root)),
                    "context": masked_context(text, done.text, f, shift),
                }
            )
            shift += len(placeholder(f.kind, text[f.start : f.end])) - (f.end - f.start)
    return {"files": files, "changed": changed, "changes": changes}


# ---- cost ------------------------------------------------------------------------------------


def measure_cost(redactor: Redactor, *, quick: bool) -> dict[str, Any]:
    trajectories = load("A", limit=40) + load("B", limit=40)
    joined = "\n".join(s.observation for t in trajectories for s in t.steps)
    samples = QUICK_SAMPLES if quick else FULL_SAMPLES
    out: dict[str, Any] = {}
    for label, size in SIZES.items():
        n = samples[label]
        span = max(1, len(joined) - size)
        windows = [joined[i * span // n : i * span // n + size] for i in range(n)]
        for w in windows[:5]:
            redactor.redact(w)
        times: list[float] = []
        best: list[float] = []
        for w in windows:
            runs: list[float] = []
            for _ in range(3):
                t0 = time.perf_counter()
                redactor.redact(w)
                runs.append((time.perf_counter() - t0) * 1e3)
            times.append(runs[0])
            best.append(min(runs))
        # p95: the sample at rank int(0.95 n) of the sorted samples
        first = summary(times, ("p50", "max")) | summary(times, ("p95",), method="higher")
        best_of_3 = summary(best, ("p50",)) | summary(best, ("p95",), method="higher")
        out[label] = {
            "n": n,
            "p50_ms": first["p50"],
            "p95_ms": first["p95"],
            "max_ms": first["max"],
            "best_of_3_p50_ms": best_of_3["p50"],
            "best_of_3_p95_ms": best_of_3["p95"],
        }
    return out


_FIRST_CALL = """
import sys, time
t0 = time.perf_counter()
from veil.redaction import Redactor
t1 = time.perf_counter()
Redactor().redact(sys.argv[1])
t2 = time.perf_counter()
print(f"{(t1 - t0) * 1e3:.3f} {(t2 - t1) * 1e3:.3f} {int('detect_secrets' in sys.modules)}")
"""


def _importtime(module: str) -> tuple[float, float]:
    """``import module`` in a fresh interpreter (``-X importtime``): the cumulative ms, and the
    ms spent in the modules of ``module``'s own top-level package (the rest is the standard
    library and dependencies, which a Veil process has mostly imported already)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    top = module.split(".", maxsplit=1)[0]
    cumulative = own = 0.0
    for line in done.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) != 3 or not parts[0].startswith("import time:"):
            continue
        if parts[2] == top or parts[2].startswith(top + "."):
            own += int(parts[0].removeprefix("import time:")) / 1e3
        if parts[2] == module:
            cumulative = int(parts[1]) / 1e3
    return cumulative, own


def measure_startup(*, quick: bool) -> dict[str, Any]:
    runs = 3 if quick else 7
    no_trigger = "collected 12 items\n\ntests/test_a.py ........ [100%]\n" * 20
    ds_trigger = "AWS_ACCESS_KEY_ID=AKIA" + "Q7RZ2XK9VBTM4WPN"

    def first(text: str) -> tuple[float, float, bool]:
        done = subprocess.run(
            [sys.executable, "-c", _FIRST_CALL, text],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        )
        imp, call, ds = done.stdout.split()
        return float(imp), float(call), ds == "1"

    veil = [_importtime("veil.redaction") for _ in range(runs)]
    ds = [_importtime("detect_secrets.plugins.aws") for _ in range(runs)]
    plain = [first(no_trigger) for _ in range(runs)]
    token = [first(ds_trigger) for _ in range(runs)]
    return {
        "runs": runs,
        "import_veil_redaction_ms": round(statistics.median(c for c, _ in veil), 2),
        "import_veil_redaction_own_ms": round(statistics.median(o for _, o in veil), 2),
        "import_detect_secrets_plugins_ms": round(statistics.median(c for c, _ in ds), 2),
        "first_redact_no_trigger_ms": round(statistics.median(c for _, c, _ in plain), 2),
        "first_redact_no_trigger_imports_detect_secrets": any(d for _, _, d in plain),
        "first_redact_detect_secrets_trigger_ms": round(
            statistics.median(c for _, c, _ in token), 2
        ),
    }


def machine() -> dict[str, Any]:
    """The machine and its load now (this result's schema says ``cores`` for the CPUs)."""
    m = describe(load_average=load_average())
    return {
        "cores": m["cpus"],
        "load_average": m["load_average"],
        "python": m["python"],
        "platform": m["platform"],
    }


# ---- the run ---------------------------------------------------------------------------------


def run(*, quick: bool) -> dict[str, Any]:
    redactor = Redactor()
    result: dict[str, Any] = {"quick": quick, "machine_before": machine()}
    result["recall"] = measure_recall(redactor, corpus(seed=0, rounds=1 if quick else 5))
    result["real_outputs"] = scan_trajectories(redactor, quick=quick)
    result["site_packages"] = scan_site_packages(redactor, quick=quick)
    result["cost"] = measure_cost(redactor, quick=quick)
    result["startup"] = measure_startup(quick=quick)
    result["machine_after"] = machine()
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Measure the secret redactor.")
    parser.add_argument("--quick", action="store_true", help="a small sample, a few seconds")
    args = parser.parse_args(argv)
    quick: bool = args.quick
    result = run(quick=quick)
    save(result, "redaction", quick=quick)
    if not quick:
        changes = RESULTS / "redaction_changes.md"
        changes.write_text(changes_report(result))
        print(f"wrote {shown(changes)}")
    print(table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
