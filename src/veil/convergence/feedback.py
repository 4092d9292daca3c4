"""What the agent is told about its goal: one text for every surface. Pure.

``veil``'s harness puts it at the end of every request (with the manifest), Claude Code's and
Codex's hooks hand it to their model (``additionalContext``; at level 3 the ``stopReason`` the
person reads too). All of them call :func:`feedback` — usually through
:meth:`veil.convergence.record.AttemptLog.note` — so the same record at the same level reads
the same wherever the agent runs:

- level 0: nothing, unless ``recap`` (an agent that has not seen the record yet: a resumed or
  compacted session, a task asked for again): then the record as at level 1;
- level 1: which level the task is at, and what was tried (:func:`already_tried_note`);
- level 2: that, and the demand for a different approach with every failure of the goal
  (:func:`different_approach_note`);
- level 3: the stop, with what was tried (:func:`summary`).

The refusal of an identical re-run of a failed edit is :func:`should_block`'s reason, given as
it is everywhere; :data:`STEERED` is what an agent is told when the person steps in after a stop.
"""

from __future__ import annotations

from collections.abc import Sequence

from veil.convergence.attempt import Attempt
from veil.convergence.monitor import already_tried_note, different_approach_note, summary, tried

STOPPED = "Veil stopped the session (convergence level 3):"
"""How the level-3 text begins (the summary follows on the same line)."""

STEERED = (
    "Veil: the person stepped in after the stop; the task is back at convergence level 2 of 3. "
    "Circling again stops the session again."
)

INTENT_CHARS = 200
"""The task is quoted up to this many characters."""


def feedback(intent: str, level: int, attempts: Sequence[Attempt], *, recap: bool = False) -> str:
    """The text for a goal (``intent``, the task) at ``level`` with its ``attempts`` in order:
    see the module docstring. ``""`` when there is nothing to say."""
    if level >= 3:
        return f"{STOPPED} {summary(attempts)}"
    if level <= 0 and not (recap and tried(attempts)):
        return ""
    header = (
        f"Veil records every attempt at the current task ({intent[:INTENT_CHARS]!r}); "
        f"it is at convergence level {max(level, 0)} of 3."
    )
    body = [already_tried_note(attempts)]
    if level >= 2:
        body.append(different_approach_note(attempts))
    text = "\n\n".join(b for b in body if b)
    return f"{header}\n{text}" if text else header
