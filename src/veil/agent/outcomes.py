"""What a finished tool call means beyond working memory: the attempt record and the credit.

:class:`Outcomes` is the harness's convergence side. Edits, tests and commands are recorded
as attempts (target, outcome, error fingerprint; :mod:`veil.convergence`), other calls and
plain assistant messages as steps of the stuck patterns; level changes become events, level 2
refuses an identical re-run of a failed edit, the goal's feedback text goes into the prompt,
and level 3 becomes the stop the harness answers at the next turn end. A check that passed or
failed gives the items used since the previous check their cognitive weight, and the
procedural facts of long-term memory whose tool or source a call used their outcome.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import cast

from veil.agent.capture import Capture
from veil.agent.events import AgentEvent, AttemptRecorded, LevelChanged
from veil.agent.tool import ToolResult
from veil.context import ContextEngine
from veil.convergence.attempt import Attempt, call_digest, text_digest
from veil.convergence.monitor import Escalation, is_check
from veil.convergence.record import AttemptLog
from veil.llm.messages import ToolCall
from veil.memory import Fact, Memory
from veil.tape import JSONValue


class Outcomes:
    def __init__(
        self,
        engine: ContextEngine,
        attempts: AttemptLog,
        memory: Memory | None,
        scope: str,
        events: list[AgentEvent],
    ) -> None:
        self.engine = engine
        self.attempts = attempts
        self.memory = memory
        self.scope = scope
        self.events = events
        """Where events go (the harness drains them into the loop's stream)."""
        self.turn = 0
        self.level = 0
        self.escalations: list[Escalation] = []
        self.stop: str | None = None
        """Why the run must stop (level 3), once it must."""
        self._checked_tick = engine.tick
        self._procedural: dict[str, Fact] = {}
        self._used_facts: dict[str, None] = {}

    def begin(self, task: str) -> None:
        """A new goal: earlier sessions' attempts at it reload. A task stopped at level 3 that
        the person starts again is stepping in: it goes back to level 2."""
        self.attempts.begin(task)
        self.attempts.steer()
        self.level = self.attempts.assess().level

    def note(self) -> str:
        """What the prompt carries about the goal at its level (the feedback every surface
        gives, :mod:`veil.convergence.feedback`; "" without a goal or at level 0)."""
        return self.attempts.note() if self.attempts.goal is not None else ""

    def block(self, call: ToolCall) -> str | None:
        """Why ``call`` must not run (at level 2, an identical re-run of an edit that did not
        work), or None."""
        if self.attempts.goal is None:
            return None
        return self.attempts.should_block(call.name, _arguments(call))

    def steered(self) -> None:
        """The person wrote after the run stopped: level 2 again, and the stop is lifted
        (circling again stops again)."""
        if self.stop is None:
            return
        self.stop = None
        self.attempts.steer()
        self.report_level()

    def on_escalation(self, escalation: Escalation) -> None:
        self.escalations.append(escalation)
        self.engine.convergence_warning()
        if escalation.level >= 3:
            self.stop = self.attempts.note()

    def finished(
        self, call: ToolCall, result: ToolResult, found: Capture, item_id: str
    ) -> Attempt | None:
        """A coding tool's call finished and its result is the item ``item_id``."""
        self._note_used_facts(call)
        if self.attempts.goal is None:
            return None
        if found.action is None:
            self.attempts.observe(
                action=call_digest(call.name, _arguments(call)),
                observation=text_digest(result.content),
                is_error=result.is_error,
            )
            self.report_level()
            return None
        attempt = self.attempts.record_call(
            action=found.action,
            target=(found.target or call.name)[:500],
            tool_name=call.name,
            arguments=_arguments(call),
            output=result.full_output or result.content,
            exit_code=found.exit_code,
            is_error=result.is_error,
            tool_call_id=call.id,
            files=list(found.files),
        )
        self.events.append(
            AttemptRecorded(
                self.turn,
                attempt.action,
                attempt.target,
                attempt.outcome,
                attempt.fingerprint,
                attempt.tool_call_id,
            )
        )
        self.report_level()
        self._credit(attempt, exclude=item_id)
        return attempt

    def said(self, text: str) -> None:
        """An assistant message with no tool call: a step of its own (the monologue pattern)."""
        if text.strip() and self.attempts.goal is not None:
            self.attempts.observe(action=None, message=text.strip())
            self.report_level()

    def report_level(self) -> None:
        assessment = self.attempts.assess()
        if assessment.level != self.level:
            self.events.append(
                LevelChanged(self.turn, assessment.level, self.level, assessment.reasons)
            )
            self.level = assessment.level

    def note_recalled(self, facts: Sequence[Fact]) -> None:
        """Procedural facts long-term memory showed the model (their use is tracked)."""
        if self.memory is None:
            return
        relations = self.memory.config.relations
        for fact in facts:
            relation = relations.get(fact.relation)
            if relation is not None and relation.procedural and len(fact.object) >= 3:
                self._procedural[fact.id] = fact

    def _note_used_facts(self, call: ToolCall) -> None:
        """A procedural fact is used when a call names its object (``uses_tool ruff`` and the
        agent runs ``ruff check``)."""
        if not self._procedural:
            return
        text = json.dumps(call.arguments, ensure_ascii=False).lower()
        for fact in self._procedural.values():
            if fact.object.lower() in text:
                self._used_facts[fact.id] = None

    def _credit(self, attempt: Attempt, *, exclude: str) -> None:
        """A check that passed or failed: the items the agent used since the previous check
        get the credit or the blame (cognitive weight), and so do the procedural facts from
        long-term memory whose tool or source the agent used."""
        if attempt.outcome not in ("pass", "fail"):
            return
        earlier = self.attempts.attempts()[:-1]
        failed = {a.target for a in earlier if a.outcome in ("fail", "partial")}
        if not is_check(attempt, failed):
            return
        ok = attempt.outcome == "pass"
        used = [
            i.id
            for i in self.engine.items("live")
            if i.kind != "turn" and i.last_access_tick > self._checked_tick and i.id != exclude
        ]
        self.engine.record_outcome(ok, used)
        self._checked_tick = self.engine.tick
        if self.memory is not None:
            for fact_id in list(self._used_facts):
                self.memory.record_outcome(fact_id, user_id=self.scope, ok=ok)
        self._used_facts.clear()


def _arguments(call: ToolCall) -> dict[str, JSONValue]:
    return cast(dict[str, JSONValue], call.arguments)
