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
  "Changed wrongly" counts ``not-secret`` and unjudged changes. Also reported: the share of
  observations for which a detect-secrets rule's trigger hits, i.e. how often a fresh process
  would pay for importing detect-secrets.
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
import json
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.redaction_corpus import Sample, corpus
from benchmarks.replay.load import load
from veil.redaction import Finding, Redactor, placeholder

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
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

EARLIER_ITERATIONS: tuple[tuple[str, str, str, str], ...] = (
    (
        "veil:assignment",
        "trajectory mini-gemini3pro-verified/psf__requests-6028, step 21",
        "`auth: user%40name:pass%40word` (requests' test fixture)",
        "not-secret. Values holding `passw`/`secret`, also %-escaped, are stand-ins.",
    ),
    (
        "veil:authorization",
        "trajectory mini-gemini3pro-verified/psf__requests-6028, steps 15 and 32",
        "`'Proxy-Authorization': 'Basic dXNlcjpwYXNz'` (base64 of `user:pass`)",
        "not-secret (fixture). Base64 of printable text is decoded and checked for stand-ins.",
    ),
    (
        "veil:assignment",
        "site-packages: agents, cryptography, jwt, pydantic_ai",
        "type annotations: `hosted_key: HostedMCPApprovalKey = (`, "
        "`private_key: Ed25519PrivateKey | …`, `credentials: OpenAIChatGPTCredentials,`",
        "not-secret. A bare value followed by `= | ) ,` is code; names are recognised.",
    ),
    (
        "veil:assignment",
        "site-packages: genai_prices, fontTools, socks (npm), setuptools, cryptography",
        "names as values: `'cache_write_5m_mtok'`, `\"com.github.googlei18n.cu2qu.curve_type\"`, "
        "`exports.SOCKS5_CUSTOM_AUTH_END`, `rust_openssl.hpke.MLKEM768X25519PrivateKey`",
        "not-secret. New name test (words with vowels ≥ 80%) and module paths.",
    ),
    (
        "veil:assignment",
        "site-packages: numpy, huggingface_hub, _pytest, charset_normalizer",
        '`publicKeyToken="1fc8…"`, `Signature: 8a477f…` (CACHEDIR.TAG), '
        '`signature="float64|complex64"`, `"utf_8_sig": "UTF-8-SIG"`',
        "not-secret. A `public` name is not secret; `signature` needs a qualifier; `sig` dropped.",
    ),
    (
        "veil:assignment, veil:authorization",
        "site-packages: npm docs, pydantic, fastapi docs",
        "`auth: 'aXNhYWNz…'` (base64 of `isaacs:not my real password`), "
        "`_authToken=MYTOKEN1`, `password='IAmSensitive'`, `Bearer deadbeef12346`",
        "fixtures. Decoded base64 checked; `my`/`your` + fixture word; digit-free values "
        "that read as words; `deadbeef` is a stand-in.",
    ),
)
"""Changes made by earlier versions of the rules — on the trajectories and on the installed
site-packages, a second false-positive corpus of code and documentation — each judged, with
what was changed because of it."""


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
        times.sort()
        best.sort()
        out[label] = {
            "n": n,
            "p50_ms": round(statistics.median(times), 3),
            "p95_ms": round(times[min(n - 1, int(0.95 * n))], 3),
            "max_ms": round(times[-1], 3),
            "best_of_3_p50_ms": round(statistics.median(best), 3),
            "best_of_3_p95_ms": round(best[min(n - 1, int(0.95 * n))], 3),
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
    return {
        "cores": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


# ---- report ----------------------------------------------------------------------------------


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


def table(result: dict[str, Any]) -> str:
    rec, real, cost, start = (
        result["recall"],
        result["real_outputs"],
        result["cost"],
        result["startup"],
    )
    lines = ["| format | secrets | caught | recall |", "| --- | ---: | ---: | ---: |"]
    for fmt, r in rec["formats"].items():
        lines.append(f"| {fmt} | {r['secrets']} | {r['caught']} | {r['recall']:.0%} |")
    lines.append(
        f"| **all** | {rec['secrets']} | {sum(r['caught'] for r in rec['formats'].values())} "
        f"| **{rec['recall']:.1%}** |"
    )
    lines += [
        "",
        f"Decoys kept: {rec['decoys']['kept']}/{rec['decoys']['total']}; "
        f"idempotent: {rec['idempotent']}.",
        "",
        "| real tool outputs | value |",
        "| --- | ---: |",
        f"| trajectories | {real['trajectories']} |",
        f"| observations | {real['observations']} |",
        f"| changed | {real['changed']} ({real['changed_share']:.3%}) |",
        f"| changed wrongly (not-secret or unjudged) | {real['changed_wrongly']} "
        f"({real['changed_wrongly_share']:.3%}) |",
        f"| a detect-secrets trigger hits | {real['detect_secrets_trigger_share']:.3%} |",
        f"| site-packages text files changed | {result['site_packages']['changed']} of "
        f"{result['site_packages']['files']} |",
        "",
        "| output size | n | p50 ms | p95 ms | max ms | best of 3: p50 ms | p95 ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, c in cost.items():
        lines.append(
            f"| {label} | {c['n']} | {c['p50_ms']} | {c['p95_ms']} | {c['max_ms']} "
            f"| {c['best_of_3_p50_ms']} | {c['best_of_3_p95_ms']} |"
        )
    m0, m1 = result["machine_before"], result["machine_after"]
    lines += [
        "",
        f"`import veil.redaction`: {start['import_veil_redaction_ms']} ms in a fresh "
        f"interpreter (-X importtime, cumulative), {start['import_veil_redaction_own_ms']} ms of "
        f"it in Veil's own modules; detect-secrets' plugins: "
        f"{start['import_detect_secrets_plugins_ms']} ms. "
        f"First `redact` in a fresh process: {start['first_redact_no_trigger_ms']} ms "
        f"(no trigger; detect-secrets imported: "
        f"{start['first_redact_no_trigger_imports_detect_secrets']}), "
        f"{start['first_redact_detect_secrets_trigger_ms']} ms (an AWS key id: imports it).",
        "",
        f"Machine: {m0['cores']} cores, load average {m0['load_average']} before, "
        f"{m1['load_average']} after; Python {m0['python']}.",
    ]
    return "\n".join(lines)


def changes_report(result: dict[str, Any]) -> str:
    real = result["real_outputs"]
    lines = [
        "# Redaction: every change to real tool outputs",
        "",
        f"`python -m benchmarks.redaction` over {real['observations']} observations of "
        f"{real['trajectories']} trajectories: {real['changed']} changed "
        f"({real['changed_share']:.3%}), {real['changed_wrongly']} wrongly "
        f"({real['changed_wrongly_share']:.3%}). Context is taken from the redacted text; the "
        "secret is shown only as its placeholder, length and character classes "
        "(a: lower, A: upper, 9: digit, +: other).",
        "",
        "| rule | kind | trajectory | step | context | verdict |",
        "| --- | --- | --- | ---: | --- | --- |",
    ]
    for c in real["changes"]:
        verdict = c["verdict"] + (f": {c['reason']}" if c["reason"] else "")
        lines.append(
            f"| {c['rule']} | {c['kind']} | {c['trajectory']} | {c['step']} | "
            f"`{c['context']}` | {verdict} |"
        )
    if not real["changes"]:
        lines.append("| – | – | – | – | no observation was changed | – |")
    site = result["site_packages"]
    lines += [
        "",
        "## Installed site-packages",
        "",
        f"The same redactor over {site['files']} text files of the installed site-packages "
        f"(code, documentation, configuration): {site['changed']} changed.",
        "",
        "| rule | kind | file | context |",
        "| --- | --- | --- | --- |",
    ]
    for c in site["changes"]:
        lines.append(f"| {c['rule']} | {c['kind']} | {c['file']} | `{c['context']}` |")
    if not site["changes"]:
        lines.append("| – | – | – | no file was changed |")
    lines += [
        "",
        "## Earlier iterations",
        "",
        "Changes the rules made before their last revision, each judged, and what changed.",
        "",
        "| rule | where | what | verdict and fix |",
        "| --- | --- | --- | --- |",
    ]
    for rule, where, what, verdict in EARLIER_ITERATIONS:
        lines.append(f"| {rule} | {where} | {what} | {verdict} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Measure the secret redactor.")
    parser.add_argument("--quick", action="store_true", help="a small sample, a few seconds")
    args = parser.parse_args(argv)
    quick: bool = args.quick
    result = run(quick=quick)
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "redaction-quick.json" if quick else "redaction.json"
    (RESULTS / name).write_text(json.dumps(result, indent=2) + "\n")
    if not quick:
        (RESULTS / "redaction_changes.md").write_text(changes_report(result))
    print(table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
