"""Gemini CLI's hooks, mapped onto Veil's hook handlers (:mod:`veil.clients.claude_code`). Pure.

What Gemini CLI 0.61 does with hooks (its bundle: ``packages/core/src/hooks/*``, and
geminicli.com/docs/hooks/reference):

- **Where.** ``hooks`` in its settings: event → groups ``{matcher, sequential, hooks: [...]}``,
  as Claude Code's; a tool event's ``matcher`` is a regular expression over the tool's name, a
  lifecycle event's (SessionStart's ``source``) an exact string. On by default
  (``hooksConfig.enabled``); a hook named in ``hooksConfig.disabled`` is skipped. Hooks from
  the settings run only in a trusted folder; those of the project's own
  ``.gemini/settings.json`` are announced once (a warning), the user's never.
- **Kinds.** Only ``"type": "command"`` from settings (``runtime`` hooks are registered by code):
  no MCP-tool hook, so each hook is a process — ``veil hook gemini EVENT``.
- **Run.** The command through the shell, in the session's directory, with
  ``GEMINI_PROJECT_DIR``, ``GEMINI_SESSION_ID`` and ``CLAUDE_PROJECT_DIR`` (= its ``cwd``) set;
  the input JSON on stdin; ``timeout`` in **milliseconds** (60,000 by default), then SIGTERM.
  Exit 0: stdout is its JSON answer — but when stdout is empty, stderr is read instead, and
  text that is not JSON becomes ``{"decision": "allow", "systemMessage": TEXT}``, shown to the
  person: so :func:`run_hook <veil.cli.hook.run_hook>` always prints ``{}`` when it has no
  opinion. Exit 2 blocks with stderr as the reason; any other status, or a timeout, is a
  warning on the person's screen ("Hook(s) [...] failed").
- **Input.** ``session_id``, ``transcript_path`` (its chat file), ``cwd``, ``hook_event_name``,
  ``timestamp``; ``prompt`` (BeforeAgent); ``source`` (SessionStart: ``startup``, ``resume``,
  ``clear``); ``tool_name``, ``tool_input`` (BeforeTool, AfterTool) and ``tool_response``
  (AfterTool: ``{llmContent, returnDisplay, error}`` — what the model will read, and the
  tool's error ``{message, type}`` or none). ``run_shell_command``'s ``llmContent`` is
  ``<untrusted_context>\\nOutput: …\\n[Error: …]\\n[Exit Code: N]\\n[Process Group PGID: N]
  \\n</untrusted_context>``: the exit status is read from it, and the process group (new on
  every run) left out of the output Veil fingerprints.
- **Answers.** ``decision: "deny"``/``"block"`` with ``reason`` refuses a tool call (the model
  reads ``Tool execution blocked: REASON`` as its result); ``continue: false`` with
  ``stopReason`` ends the agent's run — from BeforeTool or AfterTool the call's result becomes
  ``Agent execution stopped by hook: REASON`` and the turn ends (headless: the run exits);
  ``hookSpecificOutput.additionalContext`` is added, as ``<hook_context>…</hook_context>`` with
  ``<`` and ``>`` escaped, to the prompt (BeforeAgent, SessionStart) or the tool's result
  (AfterTool); ``systemMessage`` is shown to the person. BeforeAgent fires once per prompt,
  before its first model request.

Veil's events, as Gemini CLI's: BeforeAgent is UserPromptSubmit (the briefing, the goal),
BeforeTool is PreToolUse (the deny, the level-3 stop), AfterTool is PostToolUse — or
PostToolUseFailure when the tool reports an error (a shell command that exits non-zero is not
an error to Gemini CLI: its exit status comes with the output) — and SessionStart on ``resume``
gives the session's record. Gemini CLI has no PostToolBatch: the level-3 stop is
``continue: false`` from BeforeTool and AfterTool, which it obeys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from veil.clients.claude_code_input import (
    HookInput,
    HookInputError,
    parse_payload,
    stdin_object,
)

EVENTS: dict[str, str] = {
    "SessionStart": "SessionStart",
    "BeforeAgent": "UserPromptSubmit",
    "BeforeTool": "PreToolUse",
    "AfterTool": "PostToolUse",
}
"""Gemini CLI's hook events Veil handles → the handler's event."""
ACTING_TOOLS = ("run_shell_command", "replace", "write_file")
"""The Gemini CLI tools whose calls may be refused (BeforeTool)."""
TRACKED_TOOLS = (*ACTING_TOOLS, "read_file", "read_many_files")
"""The Gemini CLI tools whose calls Veil records (AfterTool; :func:`veil.hosts.gemini_cli.describe`
says what each addresses). A read is refused only at level 3, when the run has stopped anyway:
no BeforeTool process per read."""
ACTING_MATCHER = f"^({'|'.join(ACTING_TOOLS)})$"
TOOL_MATCHER = f"^({'|'.join(TRACKED_TOOLS)})$"
HOOK_NAME = "veil"
"""The name of Veil's hooks in Gemini CLI's settings (what ``hooksConfig.disabled`` names)."""
TOOL_TIMEOUT_MS = 5_000
"""A tool hook's timeout: a Python start on a busy machine, then at most
:data:`veil.cli.hook.DEADLINE_S` for the answer."""
PROMPT_TIMEOUT_MS = 10_000
"""BeforeAgent's and SessionStart's: the briefing may open the long-term memory."""


def hooks(veil: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """The ``hooks`` table of a Gemini CLI settings file: Veil's hooks, each running
    ``VEIL hook gemini EVENT``."""
    import shlex

    def group(event: str, matcher: str | None, timeout: int) -> list[dict[str, Any]]:
        command = shlex.join([*veil, "hook", "gemini", event])
        entry = {"name": HOOK_NAME, "type": "command", "command": command, "timeout": timeout}
        return [{**({"matcher": matcher} if matcher else {}), "hooks": [entry]}]

    return {
        "SessionStart": group("SessionStart", "resume", PROMPT_TIMEOUT_MS),
        "BeforeAgent": group("BeforeAgent", None, PROMPT_TIMEOUT_MS),
        "BeforeTool": group("BeforeTool", ACTING_MATCHER, TOOL_TIMEOUT_MS),
        "AfterTool": group("AfterTool", TOOL_MATCHER, TOOL_TIMEOUT_MS),
    }


_VEIL_HOOK = re.compile(r"(^|[\s/\\\"'])veil(\.exe)?[\"']?\s+hook\s+gemini\b")


def with_hooks(user: Mapping[str, Any], veil: Sequence[str]) -> dict[str, Any]:
    """The settings ``user`` with Veil's hooks after the user's own for each event (a
    ``hooks`` that is not an object, or one that already runs ``veil hook gemini``, is left as
    it is)."""
    out = dict(user)
    given: object = out.get("hooks") or {}
    if not isinstance(given, dict) or _runs_veil(cast(dict[str, Any], given)):
        return out
    table = dict(cast(dict[str, Any], given))
    for event, groups in hooks(veil).items():
        theirs: object = table.get(event)
        table[event] = [*(cast(list[Any], theirs) if isinstance(theirs, list) else []), *groups]
    out["hooks"] = table
    return out


def _runs_veil(table: Mapping[str, Any]) -> bool:
    """Whether a ``hooks`` table already runs ``veil hook gemini``."""
    for groups in table.values():
        for group in cast(list[Any], groups) if isinstance(groups, list) else []:
            handlers: object = (
                cast(dict[str, Any], group).get("hooks") if isinstance(group, dict) else None
            )
            for handler in cast(list[Any], handlers) if isinstance(handlers, list) else []:
                command: object = (
                    cast(dict[str, Any], handler).get("command")
                    if isinstance(handler, dict)
                    else None
                )
                if isinstance(command, str) and _VEIL_HOOK.search(command):
                    return True
    return False


# ---- input ---------------------------------------------------------------------------------

_WRAPPED = re.compile(r"\A\s*<untrusted_context>\n?(.*?)\n?</untrusted_context>\s*\Z", re.DOTALL)
_TRAILER = re.compile(r"^(Exit Code|Signal|Background PIDs|Process Group PGID): (.*)$")
_EDIT_FIELDS: dict[str, tuple[str, ...]] = {
    "replace": ("file_path", "old_string", "new_string"),
    "write_file": ("file_path", "content"),
}


def parse_input(raw: str, event: str) -> HookInput:
    """The handler's input for Gemini CLI's ``event`` and its stdin ``raw``. Raises
    :class:`HookInputError` for an event Veil does not handle or stdin that is not an object."""
    return parse_payload_of(stdin_object(raw), event)


def parse_payload_of(d: Mapping[str, Any], event: str) -> HookInput:
    """:func:`parse_input` of a parsed payload."""
    mine = EVENTS.get(event)
    if mine is None:
        raise HookInputError(f"unknown event {event!r} (Veil handles: {', '.join(EVENTS)})")
    named = d.get("hook_event_name") or None
    if named is not None and named != event:
        raise HookInputError(f"the payload is a {named!r} event, but the hook was run for {event}")
    payload: dict[str, Any] = {
        k: d.get(k) for k in ("session_id", "cwd", "transcript_path", "prompt", "source")
    }
    tool = str(d.get("tool_name") or "")
    if tool:
        payload["tool_name"] = tool
        payload["tool_input"] = _tool_input(tool, d.get("tool_input"))
    if event == "AfterTool":
        response = d.get("tool_response")
        failure = _error(response)
        if failure and tool != "run_shell_command":
            mine = "PostToolUseFailure"
            payload["error"] = failure
        elif tool == "run_shell_command":
            payload["tool_response"] = shell_response(_content(response))
        else:
            payload["tool_response"] = _content(response)
    return parse_payload(payload, mine)


def _tool_input(tool: str, given: object) -> dict[str, Any]:
    """The call's arguments as Veil takes its digest: an edit's own fields only (what Gemini
    CLI adds beside them — ``instruction``, a correction's — does not make it another call)."""
    args = cast(dict[str, Any], given) if isinstance(given, dict) else {}
    fields = _EDIT_FIELDS.get(tool)
    if fields is None:
        return dict(args)
    out = {k: args.get(k) for k in fields}
    if tool == "replace":
        out["allow_multiple"] = args.get("allow_multiple") is True
    return out


def _error(response: object) -> str:
    if not isinstance(response, dict):
        return ""
    error: object = cast(dict[str, Any], response).get("error")
    if isinstance(error, dict):
        message: object = cast(dict[str, Any], error).get("message")
        return str(message or "tool error")
    return ""


def _content(response: object) -> str:
    """What the model reads of a tool's result (``llmContent``), as text."""
    content: object = (
        cast(dict[str, Any], response).get("llmContent") if isinstance(response, dict) else response
    )
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [cast(dict[str, Any], p) for p in cast(list[Any], content) if isinstance(p, dict)]
        texts: list[object] = [p.get("text") for p in parts]
        if texts and all(isinstance(t, str) for t in texts):
            return "\n".join(str(t) for t in texts)
    return "" if content is None else json.dumps(content, default=str, sort_keys=True)


def shell_response(content: str) -> dict[str, Any]:
    """``run_shell_command``'s result as the handlers take a shell's (``stdout``,
    ``exit_code``): the output without the wrapper and without the lines Gemini CLI appends
    (its exit status is the code; a process group is new on every run)."""
    found = _WRAPPED.match(content)
    text = found.group(1) if found else content
    lines = text.split("\n")
    code = 0
    interrupted = False
    while lines:
        trailer = _TRAILER.match(lines[-1])
        if trailer is None:
            break
        lines.pop()
        if trailer.group(1) == "Exit Code":
            try:
                code = int(trailer.group(2))
            except ValueError:
                code = 1
        elif trailer.group(1) == "Signal":
            interrupted = True
    body = "\n".join(lines)
    if body.startswith("Output: "):
        body = body[len("Output: ") :]
    if body == "(empty)" or body.startswith("(empty)\n"):
        body = body[len("(empty)") :].lstrip("\n")
    out: dict[str, Any] = {"stdout": body, "exit_code": code}
    if interrupted:
        out["interrupted"] = True
    return out


# ---- output --------------------------------------------------------------------------------


def answer(event: str, given: Mapping[str, Any] | None) -> dict[str, Any]:
    """The handler's answer (Claude Code's hook output) as Gemini CLI reads it for ``event``;
    ``{}`` for none."""
    if not given:
        return {}
    specific: object = given.get("hookSpecificOutput")
    extra = cast(dict[str, Any], specific) if isinstance(specific, dict) else {}
    out: dict[str, Any] = {}
    if given.get("continue") is False:
        out["continue"] = False
        out["stopReason"] = str(given.get("stopReason") or "")
    if extra.get("permissionDecision") == "deny":
        out["decision"] = "deny"
        out["reason"] = str(extra.get("permissionDecisionReason") or "")
    context = extra.get("additionalContext")
    if isinstance(context, str) and context and "continue" not in out:
        out["hookSpecificOutput"] = {"hookEventName": event, "additionalContext": context}
    message = given.get("systemMessage")
    if isinstance(message, str) and message:
        out["systemMessage"] = message.replace("Claude was shown", "the model was shown")
    return out
