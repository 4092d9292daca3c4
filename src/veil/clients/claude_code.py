"""Claude Code's (and Codex's) hooks: Veil's attempt record and long-term memory inside their
sessions.

The handlers answer in the documented hook output format (code.claude.com/docs/en/hooks): a
JSON object, or nothing. They run in two ways over the same project stores: in the warm
``veil mcp`` process the agent already runs (its ``hook`` tool, :mod:`veil.clients.hook_service`
— the tool-call and prompt hooks, a few milliseconds each), or as ``veil hook claude-code
EVENT``, one process per invocation (SessionStart and PreCompact, where Claude Code allows no
MCP hook). What each event does:

- **SessionStart** (``resume``, ``compact``): what was already tried on the session's task,
  and after a compaction that the summarised transcript is on the tape.
- **UserPromptSubmit**: what long-term memory holds (on a session's first prompt the project
  briefing too, then what is relevant to the prompt); the session's first prompt becomes its
  goal (as in ``veil``), and a prompt that repeats a task with a record in this project
  switches to that goal and adds "already tried: …, failed with …"; a prompt after a level-3
  stop lowers the task to level 2.
- **PreToolUse** (Bash, PowerShell, the edit tools, Read): at level 3 every call is denied
  and the run ends (``continue: false``; Claude Code 2.1.332 obeys it beside the deny, 2.1.197
  does not — PostToolBatch stops it there); at level 2 an identical re-run of an edit that did
  not work is denied (``permissionDecision: "deny"`` with the reason, which the model reads).
- **PostToolUse** / **PostToolUseFailure**: the call is recorded — an edit, test or command as
  an attempt (target, outcome from the exit status and the output, error fingerprint), a read
  as a step for the stuck patterns. When the level rises to 1 or 2 the note goes back to the
  model as ``additionalContext`` (at level 2: every fingerprint seen and "take a different
  approach"), and again after each failed attempt at level 2. At level 3 the answer is
  ``{"continue": false, "stopReason": …}`` (Claude Code obeys it from PostToolUse, not from
  PostToolUseFailure, where level 3 is usually reached: PostToolBatch stops the run then).
- **PostToolBatch** (once every call of a batch has its result, before the next model
  request): at level 3, ``{"continue": false, "stopReason": …}`` — the stop every supported
  Claude Code obeys, whichever event raised the level and whether or not the calls were
  denied.
- **PreCompact**: the transcript entries about to be summarised are appended to the tape.

The texts are written as statements of what Veil recorded, as the hooks documentation asks.
Everything is local: the project's ``.veil/context.db`` (shared with ``veil`` and ``veil mcp
--project``) and ``.veil/memory.db``; no network, no model call.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Generator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from veil.agent.project import project_root, project_scope, veil_dir
from veil.clients.claude_code_input import (
    HookInput,
    needs_store,
    outcome_of,
    tool_call,
)
from veil.clients.claude_code_state import HookState, SessionGoal
from veil.clock import Clock, SystemClock
from veil.convergence import monitor
from veil.convergence.attempt import Attempt, call_digest, text_digest
from veil.convergence.feedback import STEERED, feedback
from veil.convergence.goals import goal_id
from veil.convergence.record import AttemptLog
from veil.tape import JSONValue, Store, open_store

if TYPE_CHECKING:
    from veil.memory import Memory

MAX_CONTEXT_CHARS = 9_000
"""``additionalContext`` is cut below Claude Code's 10,000-character limit (past it the text
is moved to a file and Claude gets a preview)."""
BRIEFING_TOKENS = 600

Answer = dict[str, JSONValue]
MemoryAccess = Callable[["Project"], AbstractContextManager["Memory | None"]]
"""How the handlers reach a project's long-term memory: ``None`` when it has none."""


@dataclass(frozen=True)
class Project:
    """Where the hooks of one invocation read and write."""

    root: Path
    scope: str

    @property
    def context_db(self) -> Path:
        return self.root / ".veil" / "context.db"

    @property
    def memory_db(self) -> Path:
        return self.root / ".veil" / "memory.db"


def locate(hook: HookInput, env: Mapping[str, str] = os.environ) -> Project:
    """The project: ``$CLAUDE_PROJECT_DIR`` (Claude Code sets it for hooks), else the hook's
    ``cwd``, else the current directory — then the git repository around it, whose identity is
    the scope (the same store and scope as ``veil`` run in that repository)."""
    start = env.get("CLAUDE_PROJECT_DIR") or hook.cwd or str(Path.cwd())
    path = Path(start)
    root = project_root(path if path.is_dir() else Path.cwd())
    return Project(root, project_scope(root))


def _open_store(project: Project) -> Store:
    veil_dir(project.root)
    return open_store(f"sqlite:///{project.context_db}?synchronous=normal")


@contextmanager
def open_memory(project: Project) -> Generator[Memory | None]:
    """The project's long-term memory, opened for one use (``None`` when it has none). The
    embedder's weights load only if something is embedded (a briefing embeds nothing)."""
    if not project.memory_db.exists():
        yield None
        return
    from veil.embed import default_embedder
    from veil.memory import Memory

    with Memory(project.memory_db, embedder=default_embedder()) as memory:
        yield memory


def handle(
    hook: HookInput,
    env: Mapping[str, str] = os.environ,
    *,
    clock: Clock | None = None,
    config: monitor.MonitorConfig | None = None,
) -> Answer | None:
    """Run the handler of ``hook.event``; the JSON to print, or ``None`` to print nothing."""
    if not needs_store(hook):
        return None
    project = locate(hook, env)
    store = _open_store(project)
    try:
        return Hooks(project, store, clock=clock, config=config).run(hook)
    finally:
        store.close()


class Hooks:
    """The handlers, over one open store of the project."""

    def __init__(
        self,
        project: Project,
        store: Store,
        *,
        clock: Clock | None = None,
        config: monitor.MonitorConfig | None = None,
        memory: MemoryAccess = open_memory,
        noted: set[str] | None = None,
    ) -> None:
        """``noted``: the compactions whose note was already given (kept by a warm process
        across its hooks; ``None``, one process per hook: the note is SessionStart's)."""
        self.project = project
        self.memory = memory
        self.noted = noted
        self.clock = clock or SystemClock()
        self.config = config or monitor.MonitorConfig()
        self.state = HookState(store, project.scope, self.clock)
        self.store = store

    def run(self, hook: HookInput) -> Answer | None:
        if hook.event == "SessionStart":
            return self.session_start(hook)
        if hook.event == "UserPromptSubmit":
            return self.user_prompt_submit(hook)
        if hook.event == "PreToolUse":
            return self.pre_tool_use(hook)
        if hook.event == "PreCompact":
            return self.pre_compact(hook)
        if hook.event == "PostToolBatch":
            return self.post_tool_batch(hook)
        return self.post_tool_use(hook)

    def _log(self, session_id: str) -> AttemptLog:
        log = AttemptLog(
            self.store,
            self.project.scope,
            session_id,
            self.clock,
            config=self.config,
            actor="claude-code-hook",
            cached=True,
        )
        log.steps = self.state.steps(session_id)
        return log

    # ---- SessionStart, UserPromptSubmit ----------------------------------------------

    def session_start(self, hook: HookInput) -> Answer | None:
        """On ``resume`` and after ``compact``: the session's record (and that the compacted
        transcript is kept). A new session's briefing comes with its first prompt."""
        parts: list[str] = []
        goal = self.state.session_goal(hook.session_id)
        if goal is not None and hook.source in ("resume", "compact"):
            parts.append(self._log(hook.session_id).note(goal.goal_id, recap=True))
        if hook.source == "compact":
            parts.append(self._compaction_note(hook.session_id))
        return _context("SessionStart", parts)

    def user_prompt_submit(self, hook: HookInput) -> Answer | None:
        prompt = hook.prompt.strip()
        if not prompt:
            return None
        log = self._log(hook.session_id)
        asked = goal_id(prompt, self.project.scope)
        current = self.state.session_goal(hook.session_id)
        earlier = log.attempts(asked)
        parts = [self._briefing(prompt, first=current is None)]
        if current is None or (current.goal_id != asked and earlier):
            reason = "first prompt" if current is None else "a task with an earlier record"
            log.begin(prompt)
            log.steer()  # a task stopped at level 3, asked for again: level 2
            self.state.set_goal(hook.session_id, asked, prompt, reason)
            parts.append(log.note(asked, recap=True))  # the record of earlier sessions
        elif log.steer(current.goal_id):  # the person writes after a stop: level 2 again
            parts.append(STEERED)
        parts.append(self._after_compaction(hook, log))
        return _context("UserPromptSubmit", parts)

    def _after_compaction(self, hook: HookInput, log: AttemptLog) -> str:
        """Once per compaction of the session (recorded by PreCompact), in the next hook's
        answer: what was tried so far, and that the summarised transcript is kept — what a
        ``compact`` SessionStart says, without a process per session start."""
        if self.noted is None:
            return ""
        fresh = [
            str(r["compaction_id"])
            for r in self.state.compactions(hook.session_id)
            if str(r["compaction_id"]) not in self.noted
        ]
        if not fresh:
            return ""
        self.noted.update(fresh)
        parts: list[str] = []
        goal = self.state.session_goal(hook.session_id)
        if goal is not None:
            parts.append(log.note(goal.goal_id, recap=True))
        parts.append(self._compaction_note(hook.session_id))
        return "\n\n".join(p for p in parts if p)

    def _briefing(self, prompt: str, *, first: bool) -> str:
        """What long-term memory holds about ``prompt``; on a session's first prompt the
        project's briefing first (what matters most, whatever was asked)."""
        with self.memory(self.project) as memory:
            if memory is None:
                return ""
            from veil.memory.briefing import brief, memory_block, without_empty_sections

            if first:
                text = brief(
                    memory, prompt, user_id=self.project.scope, token_budget=BRIEFING_TOKENS
                ).text
            else:
                found = memory.recall(
                    prompt, user_id=self.project.scope, token_budget=BRIEFING_TOKENS
                )
                has = found.facts or found.episodes or found.claims or found.contested
                lines = found.text.strip().splitlines() if has else []
                text = "\n".join(without_empty_sections(lines))
        return memory_block(text)

    def _compaction_note(self, session_id: str) -> str:
        parts = self.state.compactions(session_id)
        if not parts:
            return ""
        entries = sum(int(str(p.get("entries") or 0)) for p in parts)
        return (
            f"Veil recorded the {entries} transcript entries that were summarised on this "
            "project's tape (claude_code.compaction events in .veil/context.db), so nothing "
            "that was compacted is lost."
        )

    def _goal(self, hook: HookInput, log: AttemptLog) -> SessionGoal:
        """The session's goal; a session whose prompt Veil never saw (hooks installed
        mid-session) gets one of its own."""
        goal = self.state.session_goal(hook.session_id)
        if goal is None:
            intent = f"Claude Code session {hook.session_id or 'without an id'}"
            log.begin(intent)
            return self.state.set_goal(
                hook.session_id, goal_id(intent, self.project.scope), intent, "no prompt seen"
            )
        log.begin(goal.intent)
        return goal

    # ---- PreToolUse -------------------------------------------------------------------

    def pre_tool_use(self, hook: HookInput) -> Answer | None:
        """At level 3 every tracked call is refused and the run ends (``continue: false``:
        Claude Code obeys it here, not from PostToolUseFailure, where level 3 is usually
        reached); at level 2 an identical re-run of a failed edit is refused."""
        call = tool_call(hook.tool_name, hook.tool_input, self.project.root)
        goal = self.state.session_goal(hook.session_id)
        if call is None or goal is None:
            return None
        log = self._log(hook.session_id)
        if log.assess(goal.goal_id).level >= 3:
            return self._stop(hook, goal, log, deny=True)
        if call.kind != "edit":
            return None
        reason = log.should_block(call.tool_name, call.arguments, goal.goal_id)
        if reason is None:
            return None
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }

    # ---- PostToolUse, PostToolUseFailure ----------------------------------------------

    def post_tool_use(self, hook: HookInput) -> Answer | None:
        call = tool_call(hook.tool_name, hook.tool_input, self.project.root)
        if call is None or hook.is_interrupt:
            return None  # not a tool Veil tracks, or the user interrupted it
        log = self._log(hook.session_id)
        goal = self._goal(hook, log)
        before = log.assess(goal.goal_id).level
        result = outcome_of(hook, call)
        attempt: Attempt | None = None
        if call.action is None:
            action = call_digest(call.tool_name, call.arguments)
            observation = text_digest(result.output)
            self.state.add_step(hook.session_id, action, observation, result.is_error)
            log.observe(
                action=action,
                observation=observation,
                is_error=result.is_error,
                goal_id=goal.goal_id,
            )
        else:
            attempt = log.record_call(
                action=call.action,
                target=call.target,
                tool_name=call.tool_name,
                arguments=call.arguments,
                output=result.output,
                exit_code=result.exit_code,
                is_error=result.is_error,
                tool_call_id=hook.tool_use_id or None,
                files=list(call.files),
                goal_id=goal.goal_id,
            )
        return self._feedback(hook, goal, log, before, attempt)

    def _feedback(
        self,
        hook: HookInput,
        goal: SessionGoal,
        log: AttemptLog,
        before: int,
        attempt: Attempt | None,
    ) -> Answer | None:
        """What Claude (and the user) are told after the call, by the goal's level: the
        feedback text every surface gives (:mod:`veil.convergence.feedback`)."""
        level = log.assess(goal.goal_id).level
        if level >= 3:
            answer = self._stop(hook, goal, log, deny=False)
            extra = cast(dict[str, JSONValue], answer["hookSpecificOutput"])
            extra["additionalContext"] = answer["stopReason"]
            return answer
        rose = level > before and level in (1, 2)
        circling = level >= 2 and attempt is not None and attempt.outcome == "fail"
        text = log.note(goal.goal_id) if rose or circling else ""
        compacted = self._after_compaction(hook, log)
        if not text and not compacted:
            return None
        answer: Answer = {
            "hookSpecificOutput": {
                "hookEventName": hook.event,
                "additionalContext": _cut("\n\n".join(t for t in (text, compacted) if t)),
            }
        }
        if rose and level == 2:
            answer["systemMessage"] = (
                "Veil: the recent attempts at this task made no progress; Claude was shown "
                "every failure seen so far and asked for a different approach."
            )
        return answer

    # ---- PostToolBatch ----------------------------------------------------------------

    def post_tool_batch(self, hook: HookInput) -> Answer | None:
        """At level 3 the run ends here, before the model is asked again. Claude Code 2.1.197
        ignores ``continue: false`` beside a PreToolUse deny and from PostToolUseFailure (so
        a run whose calls all fail was denied call after call, never stopped); every
        supported version obeys it from PostToolBatch. The person was told at the call that
        raised the level (its ``systemMessage``); the summary is the stop's reason, which an
        interactive session shows ("PostToolBatch hook stopped continuation: …")."""
        goal = self.state.session_goal(hook.session_id)
        if goal is None:
            return None
        log = self._log(hook.session_id)
        if log.assess(goal.goal_id).level < 3:
            return None
        answer = self._stop(hook, goal, log, deny=False)
        return {k: v for k, v in answer.items() if k in ("continue", "stopReason")}

    def _stop(self, hook: HookInput, goal: SessionGoal, log: AttemptLog, *, deny: bool) -> Answer:
        """The level-3 answer: end the run (``continue: false``) with the summary as the
        reason the person reads; from PreToolUse the call is denied too."""
        reason = feedback(goal.intent, 3, log.attempts(goal.goal_id))
        specific: dict[str, JSONValue] = {"hookEventName": hook.event}
        if deny:
            specific["permissionDecision"] = "deny"
            specific["permissionDecisionReason"] = _cut(reason)
        return {
            "continue": False,
            "stopReason": _cut(reason),
            "systemMessage": "Veil: no progress on this task; stopped so you can steer (a new "
            "prompt continues at level 2).",
            "hookSpecificOutput": specific,
        }

    # ---- PreCompact -------------------------------------------------------------------

    def pre_compact(self, hook: HookInput) -> Answer | None:
        start = self.state.recorded_lines(hook.session_id)
        entries, problem = _transcript_entries(hook.transcript_path, start)
        self.state.record_compaction(
            hook.session_id,
            trigger=hook.trigger,
            custom_instructions=hook.custom_instructions,
            transcript_path=hook.transcript_path,
            first_line=start,
            entries=entries,
            problem=problem,
        )
        return None


def _transcript_entries(path: str, start: int) -> tuple[list[JSONValue], str | None]:
    """The transcript's JSON Lines from line ``start`` on (a line that is not JSON is kept as
    ``{"unparsed": line}``), and what went wrong reading it, if anything."""
    if not path:
        return [], "the hook input named no transcript_path"
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError as exc:
        return [], f"transcript not readable: {exc.strerror or exc}: {path}"
    out: list[JSONValue] = []
    for line in lines[start:]:
        if not line.strip():
            out.append({"unparsed": line})
            continue
        try:
            value: Any = json.loads(line)
        except json.JSONDecodeError:
            value = {"unparsed": line}
        out.append(value)
    return out, None


def _cut(text: str) -> str:
    if len(text) <= MAX_CONTEXT_CHARS:
        return text
    return text[: MAX_CONTEXT_CHARS - 60].rstrip() + "\n[… cut by Veil to fit the hook limit]"


def _context(event: str, parts: list[str]) -> Answer | None:
    text = "\n\n".join(p for p in parts if p)
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": _cut(text)}}
