"""``veil mcp``'s convergence tools: ``attempts`` (what was tried on a goal) and
``record_attempt``.

An MCP client without Veil's hooks (Codex, Cursor, Claude Code without ``veil install``) has
no other way to feed the attempt record, so the model records its own attempts and reads the
record back: the same :class:`~veil.convergence.record.AttemptLog` the harness and the Claude
Code hooks write, on the same store, so "that fix already failed" reaches every client of the
project. A goal is named by its text (the task in the user's words); its id is
:func:`~veil.convergence.goals.goal_id` of that text and the server's scope, so the same text
in a later session finds the same record.

The scope is the server's binding (``--scope``), never an argument: no tool reaches another
project's attempts.
"""

from __future__ import annotations

from typing import cast

from veil.convergence.attempt import ACTIONS, Action, Outcome, attempt_payload
from veil.convergence.goals import goal_id
from veil.convergence.projection import ATTEMPTS, GOALS
from veil.convergence.record import AttemptLog
from veil.server.mcp_protocol import JSONObject, Tool, ToolFailed, object_schema
from veil.tape import JSONValue

OUTCOMES: tuple[Outcome, ...] = ("pass", "partial", "fail", "unknown")
MAX_LISTED_GOALS = 20
MAX_ATTEMPTS_SHOWN = 30

GOAL = {
    "type": "string",
    "description": "The task the attempts are for, in the user's words (for example the request "
    "you are working on). Use the same text every time: attempts add up per goal, across "
    "sessions.",
}


def _goal_text(value: object) -> str:
    text = str(value).strip()
    if not text:
        raise ToolFailed("goal must not be empty: give the task in the user's words")
    return text


def _files(value: object) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(
        isinstance(f, str) for f in cast(list[object], value)
    ):
        raise ToolFailed("files must be a list of file paths (strings)")
    return [f for f in cast(list[str], value) if f.strip()]


def attempt_tools(log: AttemptLog) -> list[Tool]:
    """``attempts`` and ``record_attempt`` over ``log`` (its scope is the server's)."""
    scope = log.scope

    def attempts(a: JSONObject) -> JSONObject:
        if a.get("goal") is None:
            return {"goals": _goals(log)}
        gid = goal_id(_goal_text(a["goal"]), scope)
        record = log.history(gid)
        shown = cast(list[JSONValue], record["attempts"])
        record["attempts"] = shown[-MAX_ATTEMPTS_SHOWN:]
        record["attempts_total"] = len(shown)
        return cast(JSONObject, record)

    def record_attempt(a: JSONObject) -> JSONObject:
        intent = _goal_text(a["goal"])
        action = cast(Action, a["action"])
        target = str(a["target"]).strip()
        if not target:
            raise ToolFailed("target must not be empty: name the file, test or command")
        files = _files(a.get("files"))
        output = a.get("output")
        exit_code = a.get("exit_code")
        outcome = a.get("outcome")
        if output is None and exit_code is None and outcome is None:
            raise ToolFailed(
                "say how it came out: give outcome, or the output (and exit_code) to detect it"
            )
        goal = log.begin(intent)  # checked first: a refused call writes nothing
        if outcome is None:
            attempt = log.record_call(
                action=action,
                target=target[:500],
                tool_name=f"mcp:{action}",
                arguments={"target": target},
                output=str(output or ""),
                exit_code=cast("int | None", exit_code),
                files=files,
                goal_id=goal.id,
            )
        else:
            attempt = log.record(
                action=action,
                target=target[:500],
                outcome=cast(Outcome, outcome),
                evidence=str(output or "")[-300:],
                output=str(output or ""),
                error_text=str(output or "") if outcome in ("fail", "partial") else "",
                tool_name=f"mcp:{action}",
                arguments={"target": target},
                files=files,
                goal_id=goal.id,
            )
        assessment = log.assess(goal.id)
        return {
            "attempt": cast(JSONValue, attempt_payload(attempt)),
            "level": assessment.level,
            "reasons": list(assessment.reasons),
            "note": log.note(goal.id),
        }

    return [
        Tool(
            "attempts",
            "What was already tried on a goal in this project, in this and earlier sessions: "
            "each attempt (edit, test, command) with its outcome and error fingerprint, the "
            "failures seen, and the convergence level (0 fine, 1 circling, 2 take a different "
            "approach, 3 stop and ask the user). Call it before retrying a fix. Without a goal, "
            "lists the goals that have a record.",
            object_schema({"goal": GOAL}),
            attempts,
            read_only=True,
        ),
        Tool(
            "record_attempt",
            "Record one attempt at a goal after you made it: an edit, a test run or a command, "
            "and how it came out. Give the output (and exit code) of the command to let Veil "
            "detect the outcome and fingerprint the error, or give the outcome yourself. "
            "Returns the goal's convergence level and, when you are circling, a note of what "
            "was already tried.",
            object_schema(
                {
                    "goal": GOAL,
                    "action": {
                        "type": "string",
                        "enum": list(ACTIONS),
                        "description": "What you did: edit (changed a file), test (ran tests), "
                        "run (ran the program), command (another shell command) or tool.",
                    },
                    "target": {
                        "type": "string",
                        "description": "What it was aimed at: the file you edited, the test id "
                        "or the command line you ran.",
                    },
                    "outcome": {
                        "type": "string",
                        "enum": list(OUTCOMES),
                        "description": "How it came out, if you know: pass, partial (fewer "
                        "failures than before), fail or unknown. Leave it out to have it "
                        "detected from output and exit_code.",
                    },
                    "output": {
                        "type": "string",
                        "description": "The output of the command or the error message, as "
                        "printed (the end of it is enough). Used to detect the outcome and to "
                        "fingerprint the failure.",
                    },
                    "exit_code": {
                        "type": "integer",
                        "description": "The command's exit status, if it ran one.",
                    },
                    "files": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "The files the attempt changed or ran, as paths relative "
                        "to the project root.",
                    },
                },
                ["goal", "action", "target"],
            ),
            record_attempt,
        ),
    ]


def _goals(log: AttemptLog) -> list[JSONValue]:
    """The most recent goals of the scope with their attempt counts and levels."""
    rows = log.store.fetch(GOALS, scope=log.scope)
    rows.sort(key=lambda r: str(r.get("at") or ""), reverse=True)
    out: list[JSONValue] = []
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


__all__ = ["attempt_tools"]
