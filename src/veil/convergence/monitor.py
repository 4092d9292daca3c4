"""The convergence monitor: is the agent getting anywhere on its goal? Pure.

**Progress** is an attempt that

- passes a check (a ``test`` or ``run`` whose outcome is ``pass``, or the pass of a command
  whose same command line failed before) — this also *resets* the count, as a pass is the goal
  (or a step of it) achieved, so reruns of a task that ended passing start at level 0;
- is ``partial`` (a test run with fewer failures than the previous run of the same target);
- fails with a fingerprint not seen before for this goal (a new failure is new information);
- touches a file not touched before for this goal.

Anything else is **circling**, with one exception: a successful read-only ``command`` or
``tool`` call (a ``cat``, a ``grep`` that found something) is *neutral* — looking is not an
attempt, and counting it would make every exploration look like a loop
(``MonitorConfig.count_neutral`` turns this off).

``circling_count`` is the number of circling attempts since the last pass. The level rises
with it (thresholds in :class:`MonitorConfig`) and falls back to 0 after a pass:

1. note what was tried (:func:`already_tried_note`, for the manifest);
2. demand a different approach: every fingerprint of the goal goes into the prompt
   (:func:`different_approach_note`), and an identical re-run of a failed edit is refused
   (:func:`should_block`);
3. stop the run and hand back to the user with :func:`summary`.

The OpenHands stuck patterns (:mod:`veil.convergence.stuck`) raise the level to at least
``MonitorConfig.stuck_level`` while they show.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

from veil.convergence import stuck
from veil.convergence.attempt import VERIFYING, Attempt, Level, call_digest
from veil.tape import JSONValue


@dataclass(frozen=True)
class MonitorConfig:
    """Escalation thresholds, in circling attempts since the last pass.

    The defaults were chosen on trajectory set A (mini-swe-agent + Gemini 3 Pro, 500 SWE-bench
    Verified runs) and checked on set B (SWE-agent + GPT-4, 826 runs) as held-out data; see
    ``docs/convergence.md`` and ``benchmarks/convergence_replay.py``. Each is the smallest
    circling count reached by fewer than 25% (note), 10% (demand) and 2% (stop) of set A's
    resolved runs: level 3 then fires on 1.6% of set A's resolved runs (0% of set B's) and on
    8.5% of its unresolved ones.
    """

    note_after: int = 4
    demand_after: int = 5
    stop_after: int = 10
    stuck_level: Level = 2
    count_neutral: bool = False

    def __post_init__(self) -> None:
        if not 0 < self.note_after <= self.demand_after <= self.stop_after:
            raise ValueError("thresholds must satisfy 0 < note_after <= demand_after <= stop_after")


@dataclass(frozen=True)
class Verdict:
    """How one attempt counted: ``progress``, ``neutral`` or neither (circling), and why."""

    attempt_id: str
    progress: bool
    neutral: bool
    reason: str


@dataclass(frozen=True)
class Assessment:
    """The monitor's view of one goal after its latest attempt."""

    level: Level
    reasons: tuple[str, ...]
    circling_count: int
    fingerprints: tuple[str, ...]
    stuck_patterns: tuple[stuck.Pattern, ...]


@dataclass(frozen=True)
class Escalation:
    """The level of a goal rose (a ``convergence.escalated`` event). The harness reacts: level 1
    and 2 change the prompt, level 3 stops the run; every escalation also triggers the context
    engine's multiplicative decrease (``ContextEngine.convergence_warning``)."""

    id: str
    goal_id: str
    level: Level
    reasons: tuple[str, ...]
    circling_count: int
    attempt_id: str
    session_id: str
    at: str


def verdicts(attempts: Sequence[Attempt], config: MonitorConfig | None = None) -> list[Verdict]:
    """Each attempt's verdict, in order (the rules in the module docstring)."""
    config = config or MonitorConfig()
    seen_fps: set[str] = set()
    seen_files: set[str] = set()
    failed_targets: set[str] = set()
    out: list[Verdict] = []
    for a in attempts:
        if a.action == "steer":  # the person stepped in after a stop: not an attempt
            out.append(Verdict(a.id, False, True, "steered"))
            continue
        if is_check(a, failed_targets) and a.outcome == "pass":
            failed_targets.discard(a.target)
            out.append(Verdict(a.id, True, False, "pass"))
            continue
        if a.outcome in ("fail", "partial") and a.action != "edit":
            failed_targets.add(a.target)
        read_only = a.action in ("command", "tool") and a.outcome in ("pass", "unknown")
        if read_only and not config.count_neutral:
            out.append(Verdict(a.id, False, True, "neutral: a successful read-only call"))
            continue
        reasons: list[str] = []
        if a.outcome == "partial":
            reasons.append("partial: fewer failures than last time")
        if a.fingerprint and a.fingerprint not in seen_fps:
            reasons.append(f"new failure {a.fingerprint}")
        new_files = [f for f in a.files if f not in seen_files]
        if new_files:
            reasons.append(f"new file {new_files[0]}")
        if a.fingerprint:
            seen_fps.add(a.fingerprint)
        seen_files.update(a.files)
        if reasons:
            out.append(Verdict(a.id, True, False, "; ".join(reasons)))
        else:
            out.append(Verdict(a.id, False, False, _circling_reason(a)))
    return out


def is_check(attempt: Attempt, failed_targets: Set[str]) -> bool:
    """Whether the attempt checks the goal: a test or program run, or the re-run of a command
    (or tool call) whose target failed before — its pass is progress and resets the count."""
    return attempt.action in VERIFYING or (
        attempt.action in ("command", "tool") and attempt.target in failed_targets
    )


def _circling_reason(a: Attempt) -> str:
    what = f"{a.action} {a.target}".strip()
    if a.fingerprint:
        return f"{what}: {a.outcome}, same failure {a.fingerprint} again"
    return f"{what}: {a.outcome}, same files, no new information"


def circling_count(found: Sequence[Verdict], config: MonitorConfig | None = None) -> int:
    """Circling attempts since the last pass. The person stepping in after a stop (a
    ``steered`` verdict) lowers the count to ``demand_after`` (level 2): the record stays,
    circling again stops again, a pass resets."""
    config = config or MonitorConfig()
    count = 0
    for v in found:
        if v.reason == "pass":
            count = 0
        elif v.reason == "steered":
            count = min(count, config.demand_after)
        elif not v.progress and not v.neutral:
            count += 1
    return count


def fingerprints(attempts: Sequence[Attempt]) -> tuple[str, ...]:
    """Every distinct fingerprint of the attempts, first-seen order."""
    return tuple(dict.fromkeys(a.fingerprint for a in attempts if a.fingerprint))


def steps_of(attempts: Sequence[Attempt]) -> list[stuck.Step]:
    """Attempts as stuck-detector steps: the call digest is the action, the output digest the
    observation, a ``fail`` outcome the error."""
    return [
        stuck.Step(a.call_digest or f"{a.action}:{a.target}", a.output_digest, a.outcome == "fail")
        for a in attempts
    ]


def assess(
    attempts: Sequence[Attempt],
    config: MonitorConfig | None = None,
    *,
    steps: Sequence[stuck.Step] | None = None,
) -> Assessment:
    """The level of the goal whose ``attempts`` (in order) are given.

    ``steps`` are the run's steps for the stuck patterns when the harness has them (they can
    include assistant messages with no tool call, which the monologue pattern needs); by
    default the attempts themselves are used.
    """
    config = config or MonitorConfig()
    found = verdicts(attempts, config)
    count = circling_count(found, config)
    level: Level = 0
    reasons: list[str] = []
    ladder: tuple[tuple[int, Level, str], ...] = (
        (config.stop_after, 3, "stop and hand back to the user"),
        (config.demand_after, 2, "demand a different approach"),
        (config.note_after, 1, "note what was tried"),
    )
    for threshold, lvl, name in ladder:
        if count >= threshold:
            level = lvl
            reasons.append(
                f"{count} attempts without progress since the last pass (>= {threshold}: {name})"
            )
            break
    patterns = stuck.detect(steps if steps is not None else steps_of(attempts))
    if patterns:
        reasons.append("stuck: " + ", ".join(p.replace("_", " ") for p in patterns))
        level = _higher(level, config.stuck_level)
    if level:
        repeated = Counter(a.fingerprint for a in attempts if a.fingerprint).most_common(1)
        if repeated and repeated[0][1] > 1:
            reasons.append(f"failure {repeated[0][0]} seen {repeated[0][1]} times")
    return Assessment(level, tuple(reasons), count, fingerprints(attempts), patterns)


def _higher(a: Level, b: Level) -> Level:
    return b if b > a else a


def failed_edits(attempts: Sequence[Attempt]) -> dict[str, tuple[Attempt, str]]:
    """Edits that did not work, by call digest, with what happened: the edit itself failed, or
    the first verifying attempt after it (a test or run) failed."""
    out: dict[str, tuple[Attempt, str]] = {}
    for i, a in enumerate(attempts):
        if a.action != "edit" or not a.call_digest:
            continue
        if a.outcome == "fail":
            out[a.call_digest] = (a, f"the edit itself failed: {a.evidence}".rstrip(": "))
            continue
        check = next((b for b in attempts[i + 1 :] if b.action in VERIFYING), None)
        if check is not None and check.outcome == "fail":
            what = f"{check.action} {check.target} failed after it"
            if check.evidence:
                what += f": {check.evidence}"
            out[a.call_digest] = (a, what)
    return out


def should_block(
    tool_name: str,
    arguments: Mapping[str, JSONValue] | str | None,
    attempts: Sequence[Attempt],
    config: MonitorConfig | None = None,
    *,
    steps: Sequence[stuck.Step] | None = None,
) -> str | None:
    """The reason to refuse this tool call, or ``None`` to let it run.

    Only at level 2 or above, and only an *identical* re-run (same tool, same canonical
    arguments) of an edit that did not work: a different edit, a test run or any other call
    is never blocked — re-running a test after other changes is how progress is measured.
    """
    if assess(attempts, config, steps=steps).level < 2:
        return None
    hit = failed_edits(attempts).get(call_digest(tool_name, arguments))
    if hit is None:
        return None
    edit, what = hit
    return (
        f"Veil blocked this call: this exact edit ({edit.target}) was already made in attempt "
        f"{edit.iteration} and did not work — {what}. You are circling on this goal; try a "
        "different approach."
    )


def _outcomes(attempts: Sequence[Attempt]) -> str:
    counts = Counter(a.outcome for a in attempts)
    return ", ".join(
        f"{counts[o]} {o}" for o in ("pass", "partial", "fail", "unknown") if counts[o]
    )


def _failure_lines(attempts: Sequence[Attempt], limit: int = 12) -> list[str]:
    by_fp: dict[str, list[Attempt]] = {}
    for a in attempts:
        if a.fingerprint:
            by_fp.setdefault(a.fingerprint, []).append(a)
    lines: list[str] = []
    for fp, seen in list(by_fp.items())[-limit:]:
        last = seen[-1]
        iterations = ", ".join(str(a.iteration) for a in seen[-6:])
        lines.append(f"- {fp} x{len(seen)} (attempts {iterations}): {last.evidence}".rstrip(": "))
    return lines


def tried(attempts: Sequence[Attempt]) -> list[Attempt]:
    """The attempts proper (a person's steer is in the record, but was not tried)."""
    return [a for a in attempts if a.action != "steer"]


def already_tried_note(attempts: Sequence[Attempt], limit: int = 8) -> str:
    """Level 1: a compact "already tried" note for the manifest (empty with no attempts)."""
    attempts = tried(attempts)
    if not attempts:
        return ""
    lines = [f"Already tried on this goal: {len(attempts)} attempts ({_outcomes(attempts)})."]
    for a in attempts[-limit:]:
        fp = f" [{a.fingerprint}]" if a.fingerprint else ""
        lines.append(f"- #{a.iteration} {a.action} {a.target}: {a.outcome}{fp}")
    failures = _failure_lines(attempts)
    if failures:
        lines.append("Failures seen:")
        lines.extend(failures)
    return "\n".join(lines)


def different_approach_note(attempts: Sequence[Attempt]) -> str:
    """Level 2: the demand for a different approach, with every fingerprint of the goal."""
    attempts = tried(attempts)
    lines = [
        "You are circling: the recent attempts on this goal made no progress. Stop repeating "
        "them and take a different approach (re-read the failure, question the assumption "
        "behind the fix, look at other code). Identical re-runs of failed edits will be refused.",
        "Every failure seen for this goal:",
    ]
    lines.extend(_failure_lines(attempts, limit=1_000) or ["- (no error output was recorded)"])
    return "\n".join(lines)


def summary(attempts: Sequence[Attempt]) -> str:
    """Level 3: the hand-back to the user — what was tried, what failed, where it stands."""
    attempts = tried(attempts)
    if not attempts:
        return "No attempts were recorded for this goal."
    files = list(dict.fromkeys(f for a in attempts for f in a.files))
    sessions = len({a.session_id for a in attempts})
    lines = [
        f"Stopped: {len(attempts)} attempts on this goal over {sessions} session(s) without "
        f"converging ({_outcomes(attempts)}).",
    ]
    if files:
        lines.append("Files touched: " + ", ".join(files[:20]))
    failures = _failure_lines(attempts)
    if failures:
        lines.append("Distinct failures:")
        lines.extend(failures)
    lines.append("Last attempts:")
    for a in attempts[-10:]:
        lines.append(f"- #{a.iteration} {a.action} {a.target}: {a.outcome} {a.evidence}".rstrip())
    lines.append("Over to you: a hint, a different direction, or confirmation to continue.")
    return "\n".join(lines)
