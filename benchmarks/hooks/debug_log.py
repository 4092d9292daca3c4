"""Hook runs as Claude Code's debug log (``--debug-file``) shows them, tied to their tool calls.

- a command hook's duration is the one Claude Code logs (``Hooks: PreToolUse:Bash [<command>]
  finished with status 0 (33ms)``);
- an ``mcp_tool`` hook's is the time from ``Hooks: mcp_tool calling veil/hook`` to the line
  reporting its outcome (``"Hook PreToolUse:Bash (PreToolUse) success:…``; or ``error``,
  ``cancelled``), at the log's millisecond resolution;
- a tool hook belongs to the call whose ``tool_dispatch_start``/``_end`` lines surround it
  (PreToolUse runs before its call's dispatch starts).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
_MCP_START = re.compile(r"Hooks: mcp_tool calling veil/hook with")
_COMMAND_DONE = re.compile(
    r"Hooks: (?P<event>\w+)(?::(?P<tool>\w+))? \[.*\] finished with status (?P<status>-?\d+) "
    r"\((?P<ms>\d+)ms\)"
)
_OUTCOME = re.compile(
    r"\"?Hook (?P<event>\w+)(?::(?P<tool>\w+))? \((?P=event)\) "
    r"(?P<status>success|error|cancelled):(?P<detail>.*)"
)
_DISPATCH = re.compile(
    r"tool_dispatch_(?P<edge>start|end) tool=(?P<tool>\S+) toolUseId=(?P<id>\S+)"
)


@dataclass
class HookRun:
    """One hook as the debug log shows it; ``ms`` is ``None`` when no duration is known."""

    event: str
    tool: str | None
    kind: str
    status: str
    ms: float | None
    tool_use_id: str | None = None
    detail: str = ""


def _timestamp(line: str) -> float:
    return datetime.fromisoformat(line.split(" ", 1)[0].replace("Z", "+00:00")).timestamp()


def parse_debug_log(text: str, kinds: dict[str, str]) -> list[HookRun]:
    """Every hook run in a Claude Code debug log, in order, tool hooks tied to their call.

    ``kinds`` (event → ``command`` or ``mcp_tool``) names the kind of a hook whose failure the
    log reports without a start (an MCP server not connected, a command cut by its timeout)."""
    runs: list[HookRun] = []
    started: float | None = None
    awaiting: list[HookRun] = []  # PreToolUse runs before their call's dispatch
    current: str | None = None
    last_command: HookRun | None = None
    for line in text.splitlines():
        if _MCP_START.search(line):
            started = _timestamp(line)
            continue
        if m := _DISPATCH.search(line):
            last_command = None
            if m["edge"] == "start":
                current = m["id"]
                for run in awaiting:
                    run.tool_use_id = current
                awaiting = []
            continue
        run: HookRun | None = None
        if m := _COMMAND_DONE.search(line):
            status = "success" if m["status"] == "0" else f"exit {m['status']}"
            run = HookRun(m["event"], m["tool"], "command", status, float(m["ms"]))
            last_command = run
        elif m := _OUTCOME.search(line):
            detail = m["detail"].replace("\\n", " ").strip()[:200]
            if started is not None:
                ms = round((_timestamp(line) - started) * 1e3, 1)
                run = HookRun(m["event"], m["tool"], "mcp_tool", m["status"], ms, detail=detail)
                started = None
            elif last_command is not None and last_command.event == m["event"]:
                last_command.detail = detail  # the command's own outcome line, already counted
                last_command = None
                continue
            else:
                kind = kinds.get(m["event"], "?")
                run = HookRun(m["event"], m["tool"], kind, m["status"], None, detail=detail)
        if run is None:
            continue
        if run.kind == "mcp_tool":
            last_command = None
        if run.event == "PreToolUse":
            awaiting.append(run)
        elif run.event in TOOL_EVENTS:
            run.tool_use_id = current
        runs.append(run)
    return runs


def tool_call_sums(runs: Sequence[HookRun]) -> dict[str, float]:
    """Tool use id → the summed duration of its hooks (calls whose every hook has one)."""
    sums: dict[str, float] = {}
    unknown: set[str] = set()
    for run in runs:
        if run.event not in TOOL_EVENTS or run.tool_use_id is None:
            continue
        if run.ms is None:
            unknown.add(run.tool_use_id)
        sums[run.tool_use_id] = sums.get(run.tool_use_id, 0.0) + (run.ms or 0.0)
    return {k: round(v, 1) for k, v in sums.items() if k not in unknown}


def tool_ids(runs: Sequence[HookRun]) -> dict[str, list[str]]:
    """Tool name → the ids of its calls, in order."""
    out: dict[str, list[str]] = {}
    for run in runs:
        if run.event == "PreToolUse" and run.tool and run.tool_use_id:
            out.setdefault(run.tool, []).append(run.tool_use_id)
    return out
