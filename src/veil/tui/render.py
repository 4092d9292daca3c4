"""Plain-text pieces of the TUI, kept free of Textual so they are trivial to test.

Every function here is pure: same inputs, same string. The widgets only decide styling.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

ARGS_MAX = 80
"""Longest argument summary on a tool-call line; a transcript line should stay one line."""


def short_args(arguments: dict[str, Any], limit: int = ARGS_MAX) -> str:
    """``arguments`` as compact JSON, cut to ``limit`` characters with ``...`` when longer.

    Newlines are escaped by JSON, so the result is always a single line.
    """
    text = json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= limit else text[: max(0, limit - 3)] + "..."


def tool_line(name: str, arguments: dict[str, Any], status: str) -> str:
    """One transcript line per tool call: ``· name {args} [status]`` (the print-mode format)."""
    return f"· {name} {short_args(arguments)} [{status}]"


def short_session(session_id: str | None) -> str:
    """A session id short enough for the status line: ``s_…`` and its last 8 characters.

    Ids are time-ordered, so their *end* is what tells two sessions apart; the full id is in
    ``veil sessions`` and ``--session`` takes it.
    """
    if not session_id:
        return "new"
    if len(session_id) <= 12:
        return session_id
    prefix = session_id.split("_", 1)[0] + "_" if "_" in session_id else ""
    return f"{prefix}…{session_id[-8:]}"


@dataclass(frozen=True)
class StatusInfo:
    """What the status line shows; ``None`` fields are not known yet (before the first run).
    ``sent_tokens`` is the last request as sent, in the provider's tokens (Veil's estimate,
    calibrated by what the provider reported); ``window`` the model's real window (or
    ``--window``); ``tokens_in``/``tokens_out`` what the provider reported for every request
    of this session since the TUI started; ``memory_on`` whether long-term memory extracts
    facts."""

    model: str
    sent_tokens: int | None = None
    window: int | None = None
    threshold: float | None = None
    level: int | None = None
    session_id: str | None = None
    running: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    memory_on: bool | None = None


def count(tokens: int) -> str:
    """A token count short enough for the status line: exact below 10,000 (``9,876``), then
    ``12.3k``, ``128k``, ``1.2M``."""
    if tokens < 10_000:
        return f"{tokens:,}"
    if tokens < 1_000_000:
        return f"{tokens / 1000:.1f}".removesuffix(".0") + "k"
    return f"{tokens / 1_000_000:.1f}".removesuffix(".0") + "M"


def window_words(info: StatusInfo) -> str:
    """The window figure, the one the TUI shows (the status line and ``/context``): the last
    request as sent against the model's window, ``window sent/window (pct%)``."""
    if info.sent_tokens is not None and info.window:
        pct = round(100 * info.sent_tokens / info.window)
        return f"window {count(info.sent_tokens)}/{count(info.window)} ({pct}%)"
    if info.window:
        return f"window —/{count(info.window)}"
    return "window —"


def status_line(info: StatusInfo) -> str:
    """``model │ window sent/window (pct%) │ N in / M out │ T 0.15 │ level 0 │ memory on │
    session s_…id [│ running (esc stops)]``."""
    window = window_words(info)
    tokens = f"{count(info.tokens_in)} in / {count(info.tokens_out)} out"
    threshold = f"T {info.threshold:.2f}" if info.threshold is not None else "T —"
    level = f"level {info.level}" if info.level is not None else "level —"
    memory = {None: "memory —", True: "memory on", False: "memory off"}[info.memory_on]
    parts = [
        info.model,
        window,
        tokens,
        threshold,
        level,
        memory,
        f"session {short_session(info.session_id)}",
    ]
    if info.running:
        parts.append("running (esc stops)")
    return " │ ".join(parts)


def welcome_line(project: str, model: str) -> str:
    """The first screen's line: where, with which model, and how to get help."""
    return (
        f"veil in {project} with {model}. Type a task and press enter (ctrl+j adds a line; "
        "up/down recall earlier messages); /help lists the commands; esc stops a run; "
        "ctrl+q quits."
    )


def goodbye_line(session_id: str) -> str:
    """What ``veil`` prints when the TUI closes on a session: how to come back to it."""
    return f"veil: session {session_id}. `veil -c` continues it (or `veil --session {session_id}`)."


HELP = """Commands:
  /context       the manifest: what is in the model's context now
  /pin ID        keep an item (id, pointer or tool-call id) in the context
  /memory [Q]    long-term memory on Q (no Q: the session-start briefing)
  /output [ID]   the full output of a tool call (default: the last one); or click its line
  /model         the model in use
  /clear         clear the transcript view (the session is kept)
  /quit          leave (ctrl+q), whatever runs
Keys:
  enter sends; ctrl+j (or shift+enter where the terminal tells it) adds a line; a paste keeps
  every line; up/down on the first/last line recall earlier messages (kept in .veil/history)
  esc or ctrl+c stops a run at once (a running command is killed)
  ctrl+o unfolds the last tool call's output (again: folds it); tab to a tool line and enter
  does the same for that call
Anything else is a message to the agent."""
