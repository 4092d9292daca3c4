"""The redaction section (recall on a canary corpus, changes to real tool outputs, cost) and
``benchmarks/results/redaction_changes.md``, every change listed with its judgement."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.results import Loaded

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


def section(loaded: Loaded, other: Loaded | None) -> str:
    return (
        "Every text Veil writes passes the redactor first (docs/storage.md). Recall: a canary "
        "corpus written for it (`benchmarks/redaction_corpus.py`: secrets of every listed "
        "format inside realistic outputs — env dumps, config files, stack traces, curl "
        "commands, CI logs, kubeconfigs). False positives: every observation of the 1,326 "
        "real agent trajectories in `../shared/data`, each change listed by rule in "
        "`benchmarks/results/redaction_changes.md` and judged there. Cost: per captured "
        "result, real observations resized.\n\n" + table(loaded.data)
    )
