"""The hand check of the need detector: 20 needs drawn with a fixed seed from the full run's
sample, each read by hand (:data:`VERDICTS`), written to
``benchmarks/results/eviction_needs_sample.md``."""

from __future__ import annotations

import random

from benchmarks.replay.grid import SEED
from benchmarks.replay.load import Trajectory
from benchmarks.replay.needs import Need

VERDICTS: dict[tuple[str, int, str], tuple[str, str]] = {
    ("mini-gemini3pro-verified/django__django-10973", 25, "test_basic"): (
        "true",
        "the rewritten test file keeps the test name the failing run at step 23 printed",
    ),
    (
        "mini-gemini3pro-verified/django__django-15503",
        17,
        "django/db/models/fields/json.py:172-200",
    ): ("true", "re-reads lines 172-200, all shown by step 11 (172-260), no edit in between"),
    ("mini-gemini3pro-verified/django__django-15280", 38, "get_cache_name"): (
        "true",
        "greps for the definition first seen in mixins.py at step 23",
    ),
    ("mini-gemini3pro-verified/django__django-13810", 12, "status_code"): (
        "false",
        "`response.status_code` is Django knowledge; the observation was not needed",
    ),
    ("mini-gemini3pro-verified/django__django-15280", 72, "rel_obj_attr"): (
        "true",
        "the sed -i replacement rewrites the lines step 71 printed",
    ),
    ("mini-gemini3pro-verified/sphinx-doc__sphinx-8551", 15, "XRefRole"): (
        "true",
        "the class name comes from the import line step 7 printed",
    ),
    ("mini-gemini3pro-verified/scikit-learn__scikit-learn-12585", 15, "clf2.empty"): (
        "true",
        "the appended test copies the pattern of the existing test read at step 14",
    ),
    ("mini-gemini3pro-verified/matplotlib__matplotlib-24570", 22, "DrawingArea.get_offset"): (
        "true",
        "names the method from the TypeError at step 2",
    ),
    ("mini-gemini3pro-verified/sphinx-doc__sphinx-8035", 74, "app.config.autoclass_content"): (
        "true",
        "the new test copies the setup line of the test file read at step 73",
    ),
    ("mini-gemini3pro-verified/django__django-15554", 35, "parent_alias"): (
        "true",
        "the patched join() uses the attribute documented in the file read at step 22",
    ),
    ("sweagent-gpt4-lite-run2/django__django-15252", 7, "django/test/runner.py:814-913"): (
        "true",
        "`open runner.py 829` re-shows lines 814-874 that the scroll at step 6 showed",
    ),
    ("sweagent-gpt4-lite-run1/pytest-dev__pytest-11148", 13, 'echo "Goodbye!"'): (
        "false",
        "a looping agent echoing a constant; the earlier output carries nothing needed",
    ),
    (
        "sweagent-gpt4-lite-run3/scikit-learn__scikit-learn-13142",
        13,
        "sklearn/mixture/gaussian_mixture.py:558-657",
    ): ("true", "scrolls back to the window step 9 already showed"),
    ("sweagent-gpt4-lite-run3/django__django-11133", 10, "_container"): (
        "true",
        "the edit rewrites the content setter the scroll window showed",
    ),
    ("sweagent-gpt4-lite-run2/django__django-13447", 12, "model._meta.verbose_name_plural"): (
        "true",
        "the edit rewrites lines the previous edit window printed",
    ),
    ("sweagent-gpt4-lite-run2/sympy__sympy-16988", 9, "UniversalSet"): (
        "true",
        "the edit rewrites simplify_intersection, which the goto window showed",
    ),
    ("sweagent-gpt4-lite-run1/django__django-13710", 5, "smart_split"): (
        "true",
        "the edit rewrites the import list shown when options.py was opened",
    ),
    ("sweagent-gpt4-lite-run1/django__django-12708", 3, "constraint_kwargs"): (
        "true",
        "the edit rewrites the method whose signature the open window showed",
    ),
    ("sweagent-gpt4-lite-run3/django__django-13710", 7, "ls -a"): (
        "true",
        "the same listing requested again, nothing changed in between",
    ),
    ("sweagent-gpt4-lite-run1/sympy__sympy-24066", 7, "exp_factor"): (
        "true",
        "restores a name the file window (and the failed edit's error) showed",
    ),
}
"""(trajectory id, step, evidence) → (verdict, note), written after reading each sample."""


def needs_sample(
    sets: dict[str, list[Trajectory]], needs: dict[str, list[tuple[str, Need]]], n: int = 20
) -> str:
    rng = random.Random(SEED)
    by_id = {t.id: t for trajs in sets.values() for t in trajs}
    picked: list[tuple[str, Need]] = []
    for name in sets:
        pool = needs[name]
        picked += rng.sample(pool, min(len(pool), n // len(sets)))
    lines = [
        "# Eviction replay: 20 sampled needs, checked by hand",
        "",
        f"Seed {SEED}; {n // len(sets)} needs drawn uniformly from each set's detected needs "
        "(full-run sample). Verdict: **true** = the step really needed what the source "
        "observation showed (losing it would have cost a re-read or a guess); **false** = a "
        "false positive of the detector.",
        "",
    ]
    true = 0
    for i, (tid, need) in enumerate(picked, 1):
        t = by_id[tid]
        step = t.steps[need.step]
        src = t.steps[need.sources[-1]]
        idx = src.observation.find(need.evidence) if need.rule == "identifier" else -1
        snippet = (
            src.observation[max(0, idx - 150) : idx + 150] if idx >= 0 else src.observation[:300]
        )
        verdict, note = VERDICTS.get((tid, need.step, need.evidence), ("unchecked", ""))
        true += verdict == "true"
        lines += [
            f"## {i}. `{tid}` step {need.step} — {need.rule}",
            "",
            f"- evidence: `{need.evidence[:160]}`",
            f"- sources (steps): {list(need.sources)}",
            f"- action at step {need.step}: `{' '.join(step.action.split())[:240]}`",
            f"- source step {need.sources[-1]} action: `{' '.join(src.action.split())[:160]}`",
            "- source observation around the evidence:",
            "",
            "```",
            snippet.replace("```", "'''"),
            "```",
            "",
            f"**Verdict: {verdict}.** {note}",
            "",
        ]
    lines.insert(4, f"Result: {true} of {len(picked)} judged true needs.\n")
    lines.insert(
        5,
        "False-positive classes seen while checking (two earlier samples led to fixes now in "
        "the detector: pattern-addressed `sed` treated as a whole-file view, `nl | grep` line "
        "numbers taken as a region, the `/<owner>__<repo>/` checkout directory taken as a "
        "symbol): a common framework name the model knows without the observation "
        "(`status_code`, `sphinx.application`), a variable name that merely coincides, and "
        "a re-run of a command whose output carries nothing (`echo`).\n",
    )
    return "\n".join(lines) + "\n"
