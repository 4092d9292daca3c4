"""Hooks answered by a warm process: the ``hook`` tool of ``veil mcp``.

Claude Code (2.1.118+) and Codex (0.171) can run a hook as a call of a tool of an MCP server
they already run (``"type": "mcp_tool"``). ``veil install`` points the tool-call and prompt
hooks at ``veil mcp``'s ``hook`` tool: no process starts, nothing is imported, the project's
store is already open — a hook costs a few milliseconds instead of a Python start-up
(docs/claude-code.md, "Latency"). The answer is the hook's JSON output, as text.

The contract is the command hook's (:mod:`veil.clients.claude_code`): the same handlers, the
same answers, over the same stores. What differs:

- the payload arrives as the tool's arguments, filled in by the agent (``${tool_input}``:
  Claude Code passes objects as JSON text, Codex as objects; both are accepted);
- the stores and the long-term memory (with the embedder's weights) stay open between calls;
  :meth:`HookService.warm` opens a project's ahead of its first hook;
- every answer comes within its deadline (:data:`DEADLINES_S`): a handler that has not
  answered by then (a locked or slow store) is left to finish on its own and the hook gets no
  opinion — the agent goes on; a broken store or a bug is no opinion too, with one line on
  stderr per kind of failure (the agent's MCP log), never an error result;
- Codex's PostToolUse of a shell command carries the output but not the exit status: it is
  read from the session's rollout file, where Codex has written it by then
  (:func:`codex_exit_code`);
- Codex takes a smaller answer (:func:`for_codex`): it discards a PreToolUse answer holding
  ``continue: false`` (the deny with it), and a PostToolUse ``continue: false`` replaces the
  tool's output; so at level 3 Codex gets a deny of every tracked call, with the summary.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from veil.clients.claude_code import Answer, Hooks, Project, locate
from veil.clients.claude_code_input import EVENTS, HookInput, HookInputError, parse_payload
from veil.tape import Store, open_store

if TYPE_CHECKING:
    from veil.memory import Memory

Client = Literal["claude-code", "codex"]
DEADLINE_S = 0.8
"""An answer within this, or none: the agents' own timeout for a tool-call hook is 1 s."""
DEADLINES_S: Mapping[str, float] = {"UserPromptSubmit": 4.0, "SessionStart": 4.0}
"""Events whose hooks may take longer (their timeout is 5 s): a briefing on a cold start."""
BUSY_TIMEOUT_S = 0.5
"""How long a hook waits for another writer of the project's store."""
ROLLOUT_TAIL_BYTES = 1 << 20
"""How much of the end of a Codex rollout file is searched for a command's exit status."""


class HookService:
    """Answers hook calls for any project; keeps each project's store open."""

    def __init__(self, *, env: Mapping[str, str] | None = None, deadline_s: float = DEADLINE_S):
        self.env = os.environ if env is None else env
        self.deadline_s = deadline_s
        self._stores: dict[Path, Store] = {}
        self._projects: dict[str, Project] = {}
        self._noted: dict[Path, set[str]] = {}
        self._memories: dict[Path, Memory | None] = {}
        self._lock = threading.Lock()
        self._memory_lock = threading.Lock()
        self._logged: set[str] = set()

    def warm(self, cwd: Path) -> None:
        """Open the stores and the memory of the project around ``cwd`` ahead of its first hook
        (in a background thread; a failure is logged and left to the first hook)."""

        def work() -> None:
            try:
                project = self._project(parse_payload({"cwd": str(cwd)}, "SessionStart"))
                self._store(project)
                with self._memory(project) as memory:
                    if memory is not None:
                        memory.recall("", user_id=project.scope, token_budget=100)
                        memory.embedder.embed(["warm"])
            except Exception as exc:
                self._log(exc)

        threading.Thread(target=work, name="veil-hook-warm", daemon=True).start()

    def answer(self, arguments: Mapping[str, Any]) -> str:
        """The hook's output for the tool's ``arguments`` (JSON text, ``""`` for none)."""
        event = str(arguments.get("event") or arguments.get("hook_event_name") or "")
        deadline = DEADLINES_S.get(event, self.deadline_s)
        found: list[Answer | None] = []
        done = threading.Event()

        def work() -> None:
            try:
                found.append(self._answer(arguments))
            except Exception as exc:
                self._log(exc)
            finally:
                done.set()

        threading.Thread(target=work, name="veil-hook", daemon=True).start()
        if not done.wait(deadline):
            self._log(TimeoutError(f"no answer within {deadline:g} s: no opinion"))
            return ""
        answer = found[0] if found else None
        return json.dumps(answer, ensure_ascii=False) if answer else ""

    def _answer(self, arguments: Mapping[str, Any]) -> Answer | None:
        client = cast(Client, arguments.get("client") or "claude-code")
        event = str(arguments.get("event") or arguments.get("hook_event_name") or "")
        if event not in EVENTS:
            raise HookInputError(f"unknown event {event!r}")
        payload = {k: _decoded(v) for k, v in arguments.items() if k not in ("client", "event")}
        if client == "codex":
            payload = _with_codex_exit_code(payload)
        hook = parse_payload(payload, event)
        project = self._project(hook)
        noted = self._noted.setdefault(project.root, set())
        answer = Hooks(project, self._store(project), memory=self._memory, noted=noted).run(hook)
        return for_codex(event, answer) if client == "codex" else answer

    def _project(self, hook: HookInput) -> Project:
        """The project of the hook's directory (found once: two git calls)."""
        key = self.env.get("CLAUDE_PROJECT_DIR") or hook.cwd
        with self._lock:
            project = self._projects.get(key)
        if project is None:
            project = locate(hook, self.env)
            with self._lock:
                self._projects[key] = project
        return project

    @contextmanager
    def _memory(self, project: Project) -> Generator[Memory | None]:
        """The project's memory, kept open; one user at a time."""
        with self._memory_lock:
            if project.root not in self._memories or self._memories[project.root] is None:
                self._memories[project.root] = self._open_memory(project)
            yield self._memories[project.root]

    @staticmethod
    def _open_memory(project: Project) -> Memory | None:
        if not project.memory_db.exists():
            return None
        from veil.embed import default_embedder
        from veil.memory import Memory

        return Memory(project.memory_db, embedder=default_embedder())

    def _store(self, project: Project) -> Store:
        with self._lock:
            store = self._stores.get(project.root)
            if store is None:
                project.context_db.parent.mkdir(parents=True, exist_ok=True)
                store = open_store(
                    f"sqlite:///{project.context_db}?synchronous=normal",
                    busy_timeout_s=BUSY_TIMEOUT_S,
                )
                self._stores[project.root] = store
            return store

    def _log(self, exc: BaseException) -> None:
        kind = type(exc).__name__
        if kind in self._logged:
            return
        self._logged.add(kind)
        print(f"veil hook: no opinion ({kind}: {exc}); the agent goes on", file=sys.stderr)

    def close(self) -> None:
        with self._lock:
            for store in self._stores.values():
                store.close()
            self._stores.clear()
        with self._memory_lock:
            for memory in self._memories.values():
                if memory is not None:
                    memory.close()
            self._memories.clear()


def for_codex(event: str, answer: Answer | None) -> Answer | None:
    """``answer`` as Codex takes it (see the module docstring)."""
    if answer is None or event not in ("PreToolUse", "PostToolUse"):
        return answer
    out = {k: v for k, v in answer.items() if k not in ("continue", "stopReason", "systemMessage")}
    return out or None


def _decoded(value: Any) -> Any:
    """A field as the agent filled it in: JSON text of an object or array is decoded."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _with_codex_exit_code(payload: dict[str, Any]) -> dict[str, Any]:
    """A Codex PostToolUse payload of a shell command with its exit status, when the rollout
    file records it (the payload's ``tool_response`` is the output alone)."""
    response = payload.get("tool_response")
    if payload.get("tool_name") != "Bash" or not isinstance(response, str):
        return payload
    code = codex_exit_code(
        str(payload.get("transcript_path") or ""), str(payload.get("tool_use_id") or "")
    )
    if code is None:
        return payload
    return {**payload, "tool_response": {"stdout": response, "exit_code": code}}


def codex_exit_code(rollout: str, call_id: str) -> int | None:
    """The exit status of command ``call_id`` as Codex recorded it in its rollout file (an
    ``item_completed`` event of a ``CommandExecution``), or ``None`` when it is not there."""
    if not rollout or not call_id:
        return None
    try:
        with open(rollout, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - ROLLOUT_TAIL_BYTES))
            tail = handle.read()
    except OSError:
        return None
    marker = json.dumps(call_id).encode()
    for line in reversed(tail.splitlines()):
        if marker not in line or b"CommandExecution" not in line:
            continue
        try:
            entry: Any = json.loads(line)
        except ValueError:
            continue
        payload: Any = (
            cast(dict[str, Any], entry).get("payload") if isinstance(entry, dict) else None
        )
        item: Any = cast(dict[str, Any], payload).get("item") if isinstance(payload, dict) else None
        if isinstance(item, dict) and cast(dict[str, Any], item).get("id") == call_id:
            code = cast(dict[str, Any], item).get("exit_code")
            if isinstance(code, int) and not isinstance(code, bool):
                return code
    return None
