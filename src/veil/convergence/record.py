"""The attempt log on the tape: record attempts, reload them across sessions, escalate.

:class:`AttemptLog` is the thin stateful part. Every attempt is a ``convergence.attempt`` event,
every rise in a goal's level a ``convergence.escalated`` event, the first sight of a goal a
``convergence.goal`` event; :mod:`veil.convergence.projection` turns them into tables. The record of
a goal is read back from the store, never from memory, so a new session (a new ``AttemptLog``
on the same store and scope) sees every earlier attempt at the same goal.

The decisions are the pure functions of :mod:`veil.convergence.monitor`; this module only
stores, reloads and calls them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from veil.clock import Clock, SystemClock, format_time
from veil.convergence import monitor, stuck
from veil.convergence.attempt import (
    Action,
    Attempt,
    Outcome,
    attempt_payload,
    call_digest,
    text_digest,
)
from veil.convergence.events import ATTEMPT, ESCALATED, GOAL, GoalSeen
from veil.convergence.feedback import feedback
from veil.convergence.fingerprint import fingerprint
from veil.convergence.goals import Goal, goal_for
from veil.convergence.outcome import detect, resolve
from veil.convergence.projection import (
    ATTEMPTS,
    ESCALATIONS,
    GOALS,
    ConvergenceProjection,
    attempt_from_row,
    escalation_from_row,
)
from veil.tape import JSONValue, Store, new_id
from veil.tape.kinds import EventKind
from veil.tape.recorder import Recorder

P = TypeVar("P")


class AttemptLog:
    """Attempts of one project (``scope``) recorded by one session.

    ``begin(intent)`` sets the current goal (the task message); ``record_call`` records a tool
    call from what the harness has (detecting the outcome and fingerprint), ``record`` an
    attempt built by the caller. After each attempt the goal is assessed; when its level rises
    a ``convergence.escalated`` event is appended and ``on_escalation`` is called with it — the
    hook where the harness cuts the context engine's threshold
    (``ContextEngine.convergence_warning``) and, at level 3, stops the run.
    """

    def __init__(
        self,
        store: Store,
        scope: str,
        session_id: str,
        clock: Clock | None = None,
        *,
        config: monitor.MonitorConfig | None = None,
        on_escalation: Callable[[monitor.Escalation], None] | None = None,
        actor: str = "harness",
        cached: bool = False,
    ) -> None:
        """``cached``: reads are kept until this log writes — for a log that lives for one
        decision (a hook's answer), never for one that other writers share a store with for
        long."""
        self.store = store
        self.scope = scope
        self.session_id = session_id
        self.clock: Clock = clock or SystemClock()
        self.config = config or monitor.MonitorConfig()
        self.on_escalation = on_escalation
        self.actor = actor
        self.goal: Goal | None = None
        self.steps: list[stuck.Step] = []
        """This session's steps (its attempts, other calls and plain messages), for the stuck
        patterns: a loop is something one run does, so earlier sessions' steps do not count."""
        self._recorder = Recorder(
            store, scope, actor, self.clock, provenance={"session_id": session_id}
        )
        self._cache: dict[str, list[Attempt]] | None = {} if cached else None
        store.register(ConvergenceProjection())

    # ---- goals -----------------------------------------------------------------------------

    def begin(self, intent: str) -> Goal:
        """Make ``intent`` (the task message) the current goal; records it on first sight."""
        goal = goal_for(intent, self.scope)
        self.goal = goal
        if self.store.fetch(GOALS, scope=self.scope, where={"goal_id": goal.id}, limit=1):
            return goal
        now = format_time(self.clock.now())
        seen = GoalSeen(goal.id, goal.intent, goal.project, self.session_id, now)
        self._append(GOAL, seen, event_id=new_id("goal"))
        return goal

    def _goal_id(self, goal_id: str | None) -> str:
        if goal_id is not None:
            return goal_id
        if self.goal is None:
            raise ValueError("no current goal: call begin(intent) first or pass goal_id")
        return self.goal.id

    # ---- recording -------------------------------------------------------------------------

    def record(
        self,
        *,
        action: Action,
        target: str,
        outcome: Outcome,
        evidence: str = "",
        error_text: str | None = None,
        fingerprint_: str | None = None,
        tool_call_id: str | None = None,
        tool_name: str = "",
        arguments: Mapping[str, JSONValue] | str | None = None,
        output: str = "",
        files: Sequence[str] = (),
        failures: int | None = None,
        goal_id: str | None = None,
    ) -> Attempt:
        """Append one attempt for the goal (the current one by default) and assess the goal.

        The fingerprint is ``fingerprint_`` if given, else computed from ``error_text`` (or from
        ``output`` for a ``fail``/``partial`` outcome).
        """
        gid = self._goal_id(goal_id)
        previous = self.attempts(gid)
        if fingerprint_ is None:
            source = error_text if error_text is not None else None
            if source is None and outcome in ("fail", "partial"):
                source = output
            fingerprint_ = fingerprint(source)
        attempt = Attempt(
            id=new_id("att"),
            goal_id=gid,
            iteration=len(previous) + 1,
            action=action,
            target=target,
            outcome=outcome,
            evidence=evidence[:300],
            fingerprint=fingerprint_,
            session_id=self.session_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            call_digest=call_digest(tool_name, arguments) if tool_name else "",
            output_digest=text_digest(output),
            files=tuple(dict.fromkeys(files)),
            failures=failures,
            at=format_time(self.clock.now()),
        )
        self._append(ATTEMPT, attempt, event_id=attempt.id)
        steps_before = list(self.steps)
        self.steps.append(monitor.steps_of([attempt])[0])
        self._maybe_escalate(previous, [*previous, attempt], steps_before)
        return attempt

    def steer(self, goal_id: str | None = None) -> bool:
        """The person sent a new prompt. When the goal is at level 3 (the run was stopped),
        that is stepping in: the goal goes back to level 2 — its record stays, circling
        again stops again, a pass resets. Returns whether it did."""
        if self.assess(goal_id).level < 3:
            return False
        self.record(action="steer", target="the person's new prompt", outcome="unknown",
                    goal_id=goal_id)  # fmt: skip
        return True

    def observe(
        self,
        *,
        action: str | None,
        observation: str | None = None,
        is_error: bool = False,
        message: str | None = None,
        goal_id: str | None = None,
    ) -> None:
        """A step that is not an attempt: a read or search (``action`` and ``observation``
        digests), or an assistant message with no tool call (``message``), which the monologue
        pattern needs. The goal is re-assessed: a pattern may raise its level."""
        steps_before = list(self.steps)
        self.steps.append(stuck.Step(action, observation, is_error, message))
        if self.goal is None and goal_id is None:
            return
        attempts = self.attempts(goal_id)
        if attempts or message:
            self._maybe_escalate(attempts, attempts, steps_before)

    def record_call(
        self,
        *,
        action: Action,
        target: str,
        tool_name: str,
        arguments: Mapping[str, JSONValue] | str | None,
        output: str,
        exit_code: int | None = None,
        is_error: bool = False,
        tool_call_id: str | None = None,
        files: Sequence[str] = (),
        goal_id: str | None = None,
    ) -> Attempt:
        """Record a tool call from its raw result: outcome (with ``partial`` against the last
        run of the same target), evidence and fingerprint are detected here."""
        gid = self._goal_id(goal_id)
        found = detect(tool_name, arguments, output, exit_code, is_error, action=action)
        last = next(
            (
                a.failures
                for a in reversed(self.attempts(gid))
                if a.target == target and a.failures is not None
            ),
            None,
        )
        outcome = resolve(found, last)
        return self.record(
            action=action,
            target=target,
            outcome=outcome,
            evidence=found.evidence,
            error_text=output if outcome in ("fail", "partial") else "",
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            arguments=arguments,
            output=output,
            files=files,
            failures=found.failures,
            goal_id=gid,
        )

    def _maybe_escalate(
        self,
        before_attempts: Sequence[Attempt],
        attempts: Sequence[Attempt],
        steps_before: Sequence[stuck.Step],
    ) -> None:
        before = monitor.assess(before_attempts, self.config, steps=steps_before).level
        after = monitor.assess(attempts, self.config, steps=self.steps)
        if after.level <= before:
            return
        goal_id = self._goal_id(None) if not attempts else attempts[-1].goal_id
        escalation = monitor.Escalation(
            id=new_id("esc"),
            goal_id=goal_id,
            level=after.level,
            reasons=after.reasons,
            circling_count=after.circling_count,
            attempt_id=attempts[-1].id if attempts else "",
            session_id=self.session_id,
            at=format_time(self.clock.now()),
        )
        self._append(ESCALATED, escalation, event_id=escalation.id)
        if self.on_escalation is not None:
            self.on_escalation(escalation)

    def _append(self, kind: EventKind[P], payload: P, *, event_id: str) -> None:
        """Events are named by the record they carry (an attempt's id), so a retry is a no-op."""
        if self._cache is not None:
            self._cache.clear()
        self._recorder.record(kind, payload, id=event_id)

    # ---- reading ---------------------------------------------------------------------------

    def attempts(self, goal_id: str | None = None) -> list[Attempt]:
        """Every attempt at the goal, from every session, in tape order."""
        gid = self._goal_id(goal_id)
        if self._cache is not None and gid in self._cache:
            return list(self._cache[gid])
        rows = self.store.fetch(
            ATTEMPTS, scope=self.scope, where={"goal_id": gid}, order_by=["seq"]
        )
        found = [attempt_from_row(r) for r in rows]
        if self._cache is not None:
            self._cache[gid] = found
        return list(found)

    def escalations(self, goal_id: str | None = None) -> list[monitor.Escalation]:
        rows = self.store.fetch(
            ESCALATIONS,
            scope=self.scope,
            where={"goal_id": self._goal_id(goal_id)},
            order_by=["seq"],
        )
        return [escalation_from_row(r) for r in rows]

    def assess(
        self, goal_id: str | None = None, *, steps: Sequence[stuck.Step] | None = None
    ) -> monitor.Assessment:
        """The goal's current level, reasons, circling count, fingerprints and stuck patterns
        (over this session's steps unless ``steps`` are given)."""
        return monitor.assess(
            self.attempts(goal_id), self.config, steps=self.steps if steps is None else steps
        )

    def should_block(
        self,
        tool_name: str,
        arguments: Mapping[str, JSONValue] | str | None,
        goal_id: str | None = None,
    ) -> str | None:
        """For the harness's ``before_tool_call``: a reason to refuse the call, or ``None``."""
        return monitor.should_block(
            tool_name, arguments, self.attempts(goal_id), self.config, steps=self.steps
        )

    def note(self, goal_id: str | None = None, *, recap: bool = False) -> str:
        """What the agent is told about the goal at its current level ("" at 0 unless
        ``recap``): :func:`veil.convergence.feedback.feedback`, the one text of every surface."""
        gid = self._goal_id(goal_id)
        attempts = self.attempts(gid)
        level = monitor.assess(attempts, self.config, steps=self.steps).level
        return feedback(self.intent(gid), level, attempts, recap=recap)

    def intent(self, goal_id: str | None = None) -> str:
        """The goal's task as first recorded, in whichever session ("" for a goal never
        begun)."""
        gid = self._goal_id(goal_id)
        rows = self.store.fetch(GOALS, scope=self.scope, where={"goal_id": gid}, limit=1)
        return str(rows[0]["intent"]) if rows else ""

    def history(self, goal_id: str | None = None) -> dict[str, JSONValue]:
        """The goal's record for the memory tool ``attempts``: the goal, its attempts, its
        escalations and the current assessment, as JSON."""
        gid = self._goal_id(goal_id)
        attempts = self.attempts(gid)
        result = monitor.assess(attempts, self.config, steps=self.steps)
        return {
            "goal_id": gid,
            "intent": self.intent(gid) or None,
            "level": result.level,
            "reasons": list(result.reasons),
            "circling_count": result.circling_count,
            "fingerprints": list(result.fingerprints),
            "attempts": [attempt_payload(a) for a in attempts],
            "escalations": [
                {"level": e.level, "at": e.at, "reasons": list(e.reasons)}
                for e in self.escalations(gid)
            ],
            "note": monitor.already_tried_note(attempts),
        }
