"""Replay real agent trajectories through the convergence monitor: when would it have escalated?

Run from the repository root::

    python -m benchmarks.convergence_replay            # all 1,326 trajectories
    python -m benchmarks.convergence_replay --quick    # the first 50 of each set (100)

Data: ``../shared/data/trajectories`` (``$VEIL_SHARED_DIR/data/trajectories``), streamed line by
line with gzip. Set A: mini-swe-agent 1.15.0 + Gemini 3 Pro on SWE-bench Verified (500 runs,
MIT). Set B: SWE-agent 0.x + GPT-4 on SWE-bench Lite (826 runs, research use).

Every step becomes an attempt, as the harness would record it:

- action from ``steps[].kind``: ``edit``→edit, ``test``→test, ``run``→run, everything else →
  command. ``submit`` and ``format_error`` steps are not attempts (nothing ran); a
  ``format_error`` step is a message without an action for the stuck detector.
- target: the first path of the step (repository-relative), else the command's first line.
- files: the step's paths for edit/test/run steps.
- outcome: :func:`veil.convergence.outcome.detect` on the observation (the mini-swe-agent
  ``<returncode>``/``<output>`` wrapper removed) with set A's ``returncode``; set B has no exit
  codes, so its outcome comes from test summaries and tracebacks only, plus SWE-agent's own
  edit-rejection message ("Your proposed edit has introduced new syntax error(s)") as a failed
  edit. ``partial`` when a test target has fewer failures than its previous run.
- fingerprint: :func:`veil.convergence.fingerprint.fingerprint` of the output of every step
  whose outcome is fail or partial.

For each run the monitor's assessment after every attempt is recorded; the tables give, per
level, the share of resolved and unresolved runs that reached it and the median step at which
they first did. **False stop** = level 3 on a resolved run (the agent would have been stopped
on a task it went on to solve).

Thresholds are *chosen on set A only* (set B is held out) by a stated rule over the per-run
maximum circling count of set A's resolved runs: ``stop_after`` is the smallest count reached by
fewer than 2% of them, ``demand_after`` by fewer than 10%, ``note_after`` by fewer than 25%.
The replay then runs with those thresholds (and the OpenHands stuck patterns) on both sets.
The JSON records the chosen thresholds and whether they equal ``MonitorConfig()``'s defaults.

Results: a markdown table on stdout and ``benchmarks/results/convergence_replay.json``
(``convergence_replay-quick.json`` with ``--quick``).
:func:`benchmarks.lib.report.convergence_replay.render_section` renders the section for
``docs/benchmarks.md`` from that JSON.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.lib.machine import describe
from benchmarks.lib.paths import TRAJECTORIES, TRAJECTORY_SETS
from benchmarks.lib.report.convergence_replay import render_section
from benchmarks.lib.results import save
from benchmarks.lib.timing import summary
from veil.convergence.attempt import Action, Attempt, call_digest, text_digest
from veil.convergence.fingerprint import fingerprint
from veil.convergence.monitor import MonitorConfig, assess, verdicts
from veil.convergence.outcome import detect, resolve
from veil.convergence.stuck import Step

QUICK_PER_SET = 50
RULES = {"stop_after": 0.02, "demand_after": 0.10, "note_after": 0.25}
"""Threshold rule: the smallest circling count reached by fewer than this share of set A's
resolved runs."""

_KIND_TO_ACTION: dict[str, Action] = {"edit": "edit", "test": "test", "run": "run"}
_WRAPPER = re.compile(r"</?(?:returncode|output)>")
_REPO_PREFIX = re.compile(r"^/(?:testbed|[\w.-]+__[\w.-]+)/")
_SWE_AGENT_EDIT_ERROR = "Your proposed edit has introduced new syntax error"


def stream(name: str, limit: int | None) -> Iterator[dict[str, Any]]:
    with gzip.open(TRAJECTORIES / TRAJECTORY_SETS[name], "rt", encoding="utf-8") as handle:
        for n, line in enumerate(handle):
            if limit is not None and n >= limit:
                return
            yield json.loads(line)


def to_attempts(traj: dict[str, Any]) -> tuple[list[Attempt], list[Step], list[int]]:
    """The trajectory's attempts, its stuck-detector steps, and each attempt's step index."""
    attempts: list[Attempt] = []
    steps: list[Step] = []
    index: list[int] = []
    last_failures: dict[str, int] = {}
    goal = traj["id"]
    for s in traj["steps"]:
        kind = s["kind"]
        if kind == "format_error":
            steps.append(Step(None, message=(s.get("thought") or "")[:2000] or "(no action)"))
            continue
        if kind == "submit":
            continue
        action = _KIND_TO_ACTION.get(kind, "command")
        raw = s.get("observation") or ""
        output = _WRAPPER.sub("", raw) if s.get("returncode") is not None else raw
        paths = [_REPO_PREFIX.sub("", p) for p in s.get("paths") or []]
        command = (s.get("action") or "").strip()
        target = paths[0] if paths else command.splitlines()[0][:120] if command else ""
        is_error = action == "edit" and output.startswith(_SWE_AGENT_EDIT_ERROR)
        found = detect(
            s.get("tool") or "bash", command, output, s.get("returncode"), is_error, action=action
        )
        outcome = resolve(found, last_failures.get(target))
        if found.failures is not None:
            last_failures[target] = found.failures
        attempt = Attempt(
            id=f"{goal}#{s['i']}",
            goal_id=goal,
            iteration=len(attempts) + 1,
            action=action,
            target=target,
            outcome=outcome,
            evidence=found.evidence,
            fingerprint=fingerprint(output) if outcome in ("fail", "partial") else None,
            tool_name=s.get("tool") or "bash",
            call_digest=call_digest(s.get("tool") or "bash", command),
            output_digest=text_digest(output),
            files=tuple(paths) if action != "command" else (),
            failures=found.failures,
        )
        attempts.append(attempt)
        steps.append(Step(attempt.call_digest, attempt.output_digest, outcome == "fail"))
        index.append(int(s["i"]))
    return attempts, steps, index


@dataclass
class Run:
    source: str
    id: str
    resolved: bool
    steps: int
    attempts: list[Attempt]
    stuck_steps: list[Step]
    step_index: list[int]
    max_circling: int = 0
    first_level_step: dict[int, int] = field(default_factory=dict[int, int])
    stuck: set[str] = field(default_factory=set[str])


def load(limit: int | None) -> list[Run]:
    runs: list[Run] = []
    for name in TRAJECTORY_SETS:
        for traj in stream(name, limit):
            attempts, stuck_steps, index = to_attempts(traj)
            runs.append(
                Run(
                    name,
                    traj["id"],
                    bool(traj["resolved"]),
                    len(traj["steps"]),
                    attempts,
                    stuck_steps,
                    index,
                )
            )
    return runs


def max_circling(run: Run) -> int:
    """The largest circling count the run reached (verdicts are computed once, then the count
    is followed attempt by attempt)."""
    best = count = 0
    for v in verdicts(run.attempts, MonitorConfig(count_neutral=False)):
        if v.reason == "pass":
            count = 0
        elif not v.progress and not v.neutral:
            count += 1
            best = max(best, count)
    return best


def choose_thresholds(runs: list[Run]) -> dict[str, int]:
    """Apply :data:`RULES` to set A's resolved runs (see the module docstring)."""
    counts = [r.max_circling for r in runs if r.source == "A" and r.resolved]
    chosen: dict[str, int] = {}
    for name, share in RULES.items():
        t = 1
        while sum(c >= t for c in counts) >= share * len(counts):
            t += 1
        chosen[name] = t
    chosen["demand_after"] = max(chosen["demand_after"], chosen["note_after"])
    chosen["stop_after"] = max(chosen["stop_after"], chosen["demand_after"])
    return chosen


def replay(run: Run, config: MonitorConfig) -> None:
    """Assess after every attempt; record the first step index at which each level showed."""
    stuck_positions = [i for i, s in enumerate(run.stuck_steps) if s.action is not None]
    for k in range(1, len(run.attempts) + 1):
        upto = stuck_positions[k - 1] + 1
        result = assess(run.attempts[:k], config, steps=run.stuck_steps[:upto])
        run.stuck.update(result.stuck_patterns)
        for level in range(1, result.level + 1):
            run.first_level_step.setdefault(level, run.step_index[k - 1])
        if result.level == 3:
            break  # the run would have stopped here


def summarise(runs: list[Run]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in TRAJECTORY_SETS:
        mine = [r for r in runs if r.source == name]
        groups = {
            "resolved": [r for r in mine if r.resolved],
            "unresolved": [r for r in mine if not r.resolved],
        }
        entry: dict[str, Any] = {"runs": len(mine)}
        for label, group in groups.items():
            g: dict[str, Any] = {
                "runs": len(group),
                "median_steps": statistics.median([r.steps for r in group]) if group else None,
                "max_circling_median": (
                    statistics.median([r.max_circling for r in group]) if group else None
                ),
                "max_circling_p90": summary(
                    [r.max_circling for r in group], ("p90",), digits=None, method="higher"
                )["p90"],
                "stuck_runs": sum(bool(r.stuck) for r in group),
                "levels": {},
            }
            for level in (1, 2, 3):
                hit = [r for r in group if level in r.first_level_step]
                g["levels"][str(level)] = {
                    "runs": len(hit),
                    "share": round(len(hit) / len(group), 4) if group else None,
                    "median_step": (
                        statistics.median([r.first_level_step[level] for r in hit]) if hit else None
                    ),
                    "median_run_steps": (
                        statistics.median([r.steps for r in hit]) if hit else None
                    ),
                }
            entry[label] = g
        patterns: dict[str, dict[str, int]] = {}
        for r in mine:
            for p in r.stuck:
                slot = patterns.setdefault(p, {"resolved": 0, "unresolved": 0})
                slot["resolved" if r.resolved else "unresolved"] += 1
        entry["stuck_patterns"] = patterns
        looping = [r for r in groups["unresolved"] if 2 in r.first_level_step]
        entry["unresolved_looping"] = {
            "runs": len(looping),
            "stopped": sum(3 in r.first_level_step for r in looping),
        }
        entry["false_stop_rate"] = groups["resolved"] and round(
            sum(3 in r.first_level_step for r in groups["resolved"]) / len(groups["resolved"]), 4
        )
        out[name] = entry
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Replay trajectories through the monitor.")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_PER_SET} runs per set")
    parser.add_argument("--out", type=Path, help="JSON output path")
    args = parser.parse_args(argv)
    quick: bool = args.quick
    t0 = time.perf_counter()
    runs = load(QUICK_PER_SET if quick else None)
    for run in runs:
        run.max_circling = max_circling(run)
    chosen = choose_thresholds(runs)
    defaults = MonitorConfig()
    config = MonitorConfig(
        note_after=chosen["note_after"],
        demand_after=chosen["demand_after"],
        stop_after=chosen["stop_after"],
    )
    for run in runs:
        replay(run, config)
    seconds = time.perf_counter() - t0
    result: dict[str, Any] = {
        "quick": quick,
        "trajectories": len(runs),
        "attempts": sum(len(r.attempts) for r in runs),
        "seconds": round(seconds, 1),
        "thresholds": chosen,
        "rules": RULES,
        "defaults": {
            "note_after": defaults.note_after,
            "demand_after": defaults.demand_after,
            "stop_after": defaults.stop_after,
        },
        "defaults_match": chosen
        == {
            "note_after": defaults.note_after,
            "demand_after": defaults.demand_after,
            "stop_after": defaults.stop_after,
        },
        "sets": summarise(runs),
        "stopped_resolved": sorted(r.id for r in runs if r.resolved and 3 in r.first_level_step),
        "machine": describe(),
    }
    print(render_section(result))
    save(result, "convergence_replay", quick=quick, out=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
