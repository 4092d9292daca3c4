"""The convergence verbs: ``attempts`` (what was tried on a goal) and ``record_attempt``.

An agent without Veil's hooks (an MCP client) has no other way to feed the attempt record, so
the model records its own attempts and reads the record back — the same
:class:`~veil.convergence.record.AttemptLog` the harness and the hooks write, on the same
store, so "that fix already failed" reaches every client of the project. A goal is named by
its text (the task in the user's words); its id is :func:`~veil.convergence.goals.goal_id` of
that text and the scope, so the same text in a later session finds the same record. The agent
binds its current goal (``Binding.goal_id``): its ``attempts`` without a goal reads that one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from veil.verbs.signature import NON_EMPTY
from veil.verbs.verb import Binding, Services, verb

if TYPE_CHECKING:
    from veil.convergence.record import AttemptLog

ActionName = Literal["edit", "run", "test", "command", "tool", "steer"]
"""``veil.convergence.attempt.ACTIONS``, spelt out (a test checks they agree)."""
OutcomeName = Literal["pass", "partial", "fail", "unknown"]
MAX_LISTED_GOALS = 20
MAX_ATTEMPTS_SHOWN = 30


@dataclass(frozen=True)
class AttemptRecord:
    """A goal's record (``log.history``'s JSON) or, without a goal, the goals that have one."""

    record: dict[str, Any] | None
    goals: tuple[dict[str, Any], ...] = ()

    def wire(self) -> dict[str, Any]:
        return self.record if self.record is not None else {"goals": list(self.goals)}


def _log(on: Services) -> AttemptLog:
    if on.attempts is None:
        raise LookupError("no attempt record here")
    return on.attempts


def _record_text(found: AttemptRecord) -> str:
    if found.record is None:
        if not found.goals:
            return "no goal yet"
        return "\n".join(
            f"- {g['goal']!s}: {g['attempts']} attempts, level {g['level']}" for g in found.goals
        )
    attempts = cast(list[dict[str, Any]], found.record["attempts"])
    total = int(found.record.get("attempts_total", len(attempts)))
    if not total:
        return "no attempts recorded for this goal yet"
    lines = [f"goal {found.record['goal_id']}: level {found.record['level']}; {total} attempts"]
    lines.extend(
        f"- #{a['iteration']} {a['action']} {a['target']}: {a['outcome']}"
        f"{' ' + str(a['fingerprint']) if a.get('fingerprint') else ''} ({a['session_id']})"
        for a in attempts[-20:]
    )
    return "\n".join(lines)


@verb(needs=("attempts",), read_only=True, text=_record_text)
def attempts(on: Services, who: Binding, *, goal: str | None = None) -> AttemptRecord:
    """What was already tried for a goal, in this and earlier sessions, with outcomes, error
    fingerprints and the convergence level (0 fine, 1 circling, 2 change approach, 3 stop and
    ask). Call it before retrying a fix. Without a goal: the current goal, or the goals.

    Args:
        goal: The task, in the user's words (the same text every time: attempts add up per
            goal, across sessions).
    """
    from veil.convergence.goals import goal_id

    log = _log(on)
    gid = who.goal_id
    if goal is not None and goal.strip():
        gid = goal_id(goal.strip(), log.scope)
    if gid is None:
        return AttemptRecord(None, tuple(_goals(log)))
    record = cast(dict[str, Any], log.history(gid))
    shown = cast(list[Any], record["attempts"])
    record["attempts"] = shown[-MAX_ATTEMPTS_SHOWN:]
    record["attempts_total"] = len(shown)
    return AttemptRecord(record)


def _goals(log: AttemptLog) -> list[dict[str, Any]]:
    """The most recent goals of the scope with their attempt counts and levels."""
    from veil.convergence.projection import ATTEMPTS, GOALS

    rows = log.store.fetch(GOALS, scope=log.scope)
    rows.sort(key=lambda r: str(r.get("at") or ""), reverse=True)
    out: list[dict[str, Any]] = []
    for row in rows[:MAX_LISTED_GOALS]:
        gid = str(row["goal_id"])
        count = len(log.store.fetch(ATTEMPTS, scope=log.scope, where={"goal_id": gid}))
        out.append(
            {
                "goal_id": gid,
                "goal": row.get("intent"),
                "first_seen": row.get("at"),
                "attempts": count,
                "level": log.assess(gid).level if count else 0,
            }
        )
    return out


@dataclass(frozen=True)
class Recorded:
    """What ``record_attempt`` stored and where the goal stands now."""

    attempt: dict[str, Any]
    level: int
    reasons: tuple[str, ...]
    note: str

    def wire(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "level": self.level,
            "reasons": list(self.reasons),
            "note": self.note,
        }


def _recorded_text(r: Recorded) -> str:
    a = r.attempt
    head = f"recorded #{a['iteration']} {a['action']} {a['target']}: {a['outcome']}; "
    return head + f"level {r.level}" + (f"\n{r.note}" if r.note else "")


@verb(needs=("attempts",), read_only=False, text=_recorded_text)
def record_attempt(
    on: Services,
    who: Binding,
    *,
    goal: Annotated[str, NON_EMPTY],
    action: ActionName,
    target: Annotated[str, NON_EMPTY],
    outcome: OutcomeName | None = None,
    output: str | None = None,
    exit_code: int | None = None,
    files: list[str] | None = None,
) -> Recorded:
    """Record one attempt at a goal after you made it: an edit, a test run or a command, and
    how it came out. Give the output (and exit code) of the command to let Veil detect the
    outcome and fingerprint the error, or give the outcome yourself. Returns the goal's
    convergence level and, when you are circling, a note of what was already tried.

    Args:
        goal: The task the attempts are for, in the user's words. Use the same text every
            time: attempts add up per goal, across sessions.
        action: What you did: edit (changed a file), test (ran tests), run (ran the program),
            command (another shell command) or tool.
        target: What it was aimed at: the file you edited, the test id or the command line you
            ran.
        outcome: How it came out, if you know: pass, partial (fewer failures than before),
            fail or unknown. Leave it out to have it detected from output and exit_code.
        output: The output of the command or the error message, as printed (the end of it is
            enough). Used to detect the outcome and to fingerprint the failure.
        exit_code: The command's exit status, if it ran one.
        files: The files the attempt changed or ran, as paths relative to the project root.
    """
    from veil.convergence.attempt import attempt_payload

    log = _log(on)
    if output is None and exit_code is None and outcome is None:
        raise ValueError(
            "say how it came out: give outcome, or the output (and exit_code) to detect it"
        )
    target = target.strip()[:500]
    changed = [f for f in files or [] if f.strip()]
    began = log.begin(goal.strip())  # checked first: a refused call writes nothing
    text = output or ""
    if outcome is None:
        attempt = log.record_call(
            action=action,
            target=target,
            tool_name=f"mcp:{action}",
            arguments={"target": target},
            output=text,
            exit_code=exit_code,
            files=changed,
            goal_id=began.id,
        )
    else:
        attempt = log.record(
            action=action,
            target=target,
            outcome=outcome,
            evidence=text[-300:],
            output=text,
            error_text=text if outcome in ("fail", "partial") else "",
            tool_name=f"mcp:{action}",
            arguments={"target": target},
            files=changed,
            goal_id=began.id,
        )
    assessment = log.assess(began.id)
    return Recorded(
        cast(dict[str, Any], attempt_payload(attempt)),
        assessment.level,
        tuple(assessment.reasons),
        log.note(began.id),
    )


__all__ = ["AttemptRecord", "Recorded", "attempts", "record_attempt"]
