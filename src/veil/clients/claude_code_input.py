"""Claude Code's hook input, as documented (code.claude.com/docs/en/hooks), as plain values. Pure.

Every hook gets one JSON object on stdin with the common fields ``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name`` (and usually ``permission_mode``), plus its
event's own: ``prompt`` (UserPromptSubmit), ``source`` (SessionStart), ``tool_name``,
``tool_input`` and ``tool_use_id`` (tool events), ``tool_response`` (PostToolUse: the tool's
structured output), ``error`` and ``is_interrupt`` (PostToolUseFailure), ``tool_calls``
(PostToolBatch: every call of the batch; not read), ``trigger`` and ``custom_instructions``
(PreCompact). Fields Veil does not use are ignored, so a newer Claude Code that adds fields
keeps working.

What Veil reads from the tool events, per tool (the shapes are kept as fixtures under
``tests/data/claude_code/``):

- ``Bash`` / ``PowerShell``: ``tool_input.command``; the response ``{stdout, stderr,
  interrupted, isImage, …}``. PostToolUse fires only when the command succeeded (exit 0); a
  command that exits non-zero arrives as PostToolUseFailure with ``error`` = ``"Exit code N"``
  on the first line and the interleaved output after it.
- ``Edit`` (``file_path``, ``old_string``, ``new_string``, ``replace_all``), ``MultiEdit``
  (``file_path``, ``edits``), ``Write`` (``file_path``, ``content``), ``NotebookEdit``
  (``notebook_path``, …): the response carries ``filePath`` and a ``structuredPatch``.
- ``Read`` (``file_path``, ``offset``, ``limit``): the response ``{type, file: {filePath,
  content, numLines, startLine, totalLines}}``.

A call is normalised before its digest is taken (:func:`tool_call`), so the call PreToolUse
sees and the call PostToolUse recorded compare equal even when Claude Code fills in a default
(``replace_all: false``) in one and not the other.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

if TYPE_CHECKING:  # the hook's entry point imports only what its event needs
    from veil.convergence.attempt import Action
    from veil.tape import JSONValue

Event = Literal[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "PreCompact",
]
EVENTS: tuple[Event, ...] = get_args(Event)
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
SHELL_TOOLS = frozenset({"Bash", "PowerShell"})
READ_TOOLS = frozenset({"Read"})
TOOLS = EDIT_TOOLS | SHELL_TOOLS | READ_TOOLS
"""The tools whose calls Veil records (the matchers ``veil install claude-code`` writes)."""

_EXIT_LINE = re.compile(r"^\s*Exit code (-?\d+)\s*$")


class HookInputError(ValueError):
    """The hook's stdin is not what Claude Code sends; the message says what is wrong."""


@dataclass(frozen=True)
class HookInput:
    """One hook invocation. Strings are empty when Claude Code did not send the field."""

    event: Event
    session_id: str
    cwd: str
    transcript_path: str
    prompt: str = ""
    source: str = ""
    tool_name: str = ""
    tool_input: dict[str, Any] | None = None
    tool_use_id: str = ""
    tool_response: Any = None
    error: str = ""
    is_interrupt: bool = False
    trigger: str = ""
    custom_instructions: str = ""


def parse_input(raw: str, event: str) -> HookInput:
    """The hook input for ``event`` (the name ``veil hook claude-code EVENT`` was given).

    Raises :class:`HookInputError` for stdin that is not a JSON object, an event Veil has no
    handler for, or a payload whose ``hook_event_name`` names another event."""
    if event not in EVENTS:
        raise HookInputError(f"unknown event {event!r} (Veil handles: {', '.join(EVENTS)})")
    return parse_payload(stdin_object(raw), event)


def stdin_object(raw: str) -> dict[str, Any]:
    """A hook's stdin as the JSON object every host sends. Raises :class:`HookInputError`
    naming what it is instead."""
    try:
        data: object = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise HookInputError(f"stdin is not JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(data, dict):
        raise HookInputError(f"stdin is JSON {type(data).__name__}, not the hook's object")
    return cast(dict[str, Any], data)


def needs_store(hook: HookInput) -> bool:
    """Whether the handler has anything to do: a new session's SessionStart has not (its
    briefing comes with the first prompt), so that hook opens nothing and imports nothing."""
    return hook.event != "SessionStart" or hook.source in ("resume", "compact")


def parse_payload(d: dict[str, Any], event: str) -> HookInput:
    """The hook input from its parsed payload (stdin, or the ``hook`` tool's arguments)."""
    if event not in EVENTS:
        raise HookInputError(f"unknown event {event!r} (Veil handles: {', '.join(EVENTS)})")
    named = d.get("hook_event_name") or None
    if named is not None and named != event:
        raise HookInputError(f"the payload is a {named!r} event, but the hook was run for {event}")
    tool_input = d.get("tool_input")
    return HookInput(
        event=event,
        session_id=_text(d.get("session_id")),
        cwd=_text(d.get("cwd")),
        transcript_path=_text(d.get("transcript_path")),
        prompt=_text(d.get("prompt")),
        source=_text(d.get("source")),
        tool_name=_text(d.get("tool_name")),
        tool_input=cast(dict[str, Any], tool_input) if isinstance(tool_input, dict) else None,
        tool_use_id=_text(d.get("tool_use_id")),
        tool_response=d.get("tool_response"),
        error=_text(d.get("error")),
        is_interrupt=d.get("is_interrupt") in (True, "true"),
        trigger=_text(d.get("trigger")),
        custom_instructions=_text(d.get("custom_instructions")),
    )


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


CallKind = Literal["edit", "command", "read"]


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the memory layers take it: what kind, what it aimed at (its host's
    description, :class:`veil.hosts.host.Use`: a path relative to the project root when it lies
    inside it, ``path#first+count``, the command line), the files it touched, and its
    normalised arguments (what the call digest is taken of)."""

    kind: CallKind
    tool_name: str
    target: str
    files: tuple[str, ...]
    arguments: dict[str, JSONValue]

    @property
    def action(self) -> Action | None:
        """The attempt it is: ``edit``, ``test`` or ``command``; a read is none."""
        if self.kind == "edit":
            return "edit"
        if self.kind == "command":
            from veil.agent.capture import action_of
            from veil.agent.tool import Touches

            return action_of(Touches(command=self.target))
        return None


KINDS: dict[str, CallKind] = {"read": "read", "write": "edit", "run": "command"}
"""A tracked call's kind by its effect (a ``look`` — a search, a web page — is not tracked)."""


def tool_call(tool_name: str, tool_input: dict[str, Any] | None, root: Path) -> ToolCall | None:
    """The call of one of :data:`TOOLS` (or Codex's ``apply_patch`` and ``Bash``), or ``None``
    for another tool or an input that lacks the tool's required field. What it addresses is the
    host's own description (:func:`veil.hosts.describe`, the proxy's too)."""
    from veil.hosts import describe

    args = tool_input or {}
    use = describe(tool_name, args, root)
    kind = KINDS.get(use.effect) if use is not None else None
    if use is None or kind is None:
        return None
    return ToolCall(kind, tool_name, use.target, use.files, _normal(tool_name, kind, args))


def _normal(tool_name: str, kind: CallKind, args: dict[str, Any]) -> dict[str, JSONValue]:
    """The arguments a call's digest is taken of: what the tool does with them, with its
    defaults filled in (``replace_all: false``), so PreToolUse's and PostToolUse's agree."""
    if tool_name == "apply_patch":
        return _json({"patch": args.get("command") or args.get("input") or args.get("patch")})
    if kind == "command":
        return _json({"command": args.get("command") or args.get("cmd")})
    path = args.get("file_path")
    if tool_name == "Read":
        normal: dict[str, Any] = {
            "file_path": path,
            "offset": args.get("offset"),
            "limit": args.get("limit"),
        }
    elif tool_name == "Edit":
        normal = {
            "file_path": path,
            "old_string": args.get("old_string"),
            "new_string": args.get("new_string"),
            "replace_all": args.get("replace_all") is True,
        }
    elif tool_name == "MultiEdit":
        edits = args.get("edits")
        listed = cast(list[Any], edits if isinstance(edits, list) else [])
        normal = {
            "file_path": path,
            "edits": [_one_edit(cast(dict[str, Any], e)) for e in listed if isinstance(e, dict)],
        }
    elif tool_name == "Write":
        normal = {"file_path": path, "content": args.get("content")}
    else:
        normal = dict(args)
    return _json(normal)


def _one_edit(edit: dict[str, Any]) -> dict[str, JSONValue]:
    return {
        "old_string": edit.get("old_string"),
        "new_string": edit.get("new_string"),
        "replace_all": edit.get("replace_all") is True,
    }


def _json(value: dict[str, Any]) -> dict[str, JSONValue]:
    """``value`` as plain JSON (what cannot be serialised becomes its string)."""
    return cast("dict[str, JSONValue]", json.loads(json.dumps(value, default=str)))


@dataclass(frozen=True)
class ToolOutcome:
    """How a call came out, from PostToolUse's ``tool_response`` or PostToolUseFailure's
    ``error``: the text the model saw, the command's exit status and whether the tool failed."""

    output: str
    exit_code: int | None
    is_error: bool


def outcome_of(hook: HookInput, call: ToolCall) -> ToolOutcome:
    """The outcome of ``call`` (a PostToolUse or PostToolUseFailure input)."""
    if hook.event == "PostToolUseFailure":
        lines = hook.error.splitlines()
        found = _EXIT_LINE.match(lines[0]) if lines else None
        if found is not None and call.kind == "command":
            return ToolOutcome("\n".join(lines[1:]), int(found.group(1)), False)
        return ToolOutcome(hook.error, None, True)
    response = hook.tool_response
    if call.kind == "command":
        return _shell_outcome(response)
    if call.kind == "read":
        return ToolOutcome(_read_text(response), None, False)
    return ToolOutcome(_patch_text(response), None, False)


def _shell_outcome(response: object) -> ToolOutcome:
    if not isinstance(response, dict):  # Codex: the output alone, whatever the exit status
        return ToolOutcome(str(response or ""), None, False)
    r = cast(dict[str, Any], response)
    parts = [str(r.get(k) or "") for k in ("stdout", "stderr")]
    output = "\n".join(p for p in parts if p)
    code: int | None = 0  # PostToolUse fires only for a command that succeeded
    for key in ("exit_code", "exitCode", "returnCode", "code"):
        value = r.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            code = value
            break
    if r.get("interrupted") is True:
        return ToolOutcome(output + "\n[interrupted]", None, True)
    return ToolOutcome(output, code, False)


def _read_text(response: object) -> str:
    if isinstance(response, dict):
        file = cast(dict[str, Any], response).get("file")
        if isinstance(file, dict):
            content = cast(dict[str, Any], file).get("content")
            if isinstance(content, str):
                return content
    return response if isinstance(response, str) else json.dumps(response, default=str)


def _patch_text(response: object) -> str:
    """An applied edit, as text: the patch's lines when the response has a structured patch."""
    if not isinstance(response, dict):
        return str(response or "")
    r = cast(dict[str, Any], response)
    lines: list[str] = []
    patch = r.get("structuredPatch")
    for hunk in cast(list[Any], patch if isinstance(patch, list) else []):
        if isinstance(hunk, dict):
            lines.extend(
                str(x) for x in cast(list[Any], cast(dict[str, Any], hunk).get("lines") or [])
            )
    if lines:
        return "\n".join(lines)
    content = r.get("content")
    return content if isinstance(content, str) else json.dumps(r, default=str, sort_keys=True)
