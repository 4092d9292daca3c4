"""``veil hook CLIENT EVENT``: a coding agent's hook, stdin to stdout (``veil.clients``).

``CLIENT`` is ``claude-code`` (its events and answers) or ``gemini`` (Gemini CLI's events —
BeforeAgent, BeforeTool, AfterTool, SessionStart — mapped onto the same handlers by
:mod:`veil.clients.gemini_hooks`; ``veil gemini`` installs them for its run). Gemini CLI reads
stderr as the answer when stdout is empty, so for it "no opinion" is ``{}`` on stdout.

A hook must never break the session it runs in. Claude Code reads exit status 2 as "block
this" and any other non-zero status as a hook error shown in the transcript, so this command
exits 0 whatever happens: a bad payload, an unknown event, a broken store or a bug end with
one line on stderr (Claude Code's debug log) and nothing on stdout, and the session goes on.
``--debug`` adds the traceback on stderr, still with status 0.

It also answers in time: a handler still busy after :data:`DEADLINE_S` (a locked store, a
slow disk) is abandoned — no answer, one line on stderr, status 0 — and the process exits
without waiting for it (PreCompact, which saves the transcript about to be summarised and
has a 60 s timeout, gets :data:`PRECOMPACT_DEADLINE_S`).

Imports are lazy: ``veil hook`` loads only the handler's modules (no model SDK, no embedder
unless a briefing is read), so it answers well within the hooks' time limits.
"""

from __future__ import annotations

import json
import sys
import threading
import traceback
from collections.abc import Mapping
from typing import TextIO

CLIENTS = ("claude-code", "gemini")
DEADLINE_S = 0.9
PRECOMPACT_DEADLINE_S = 30.0
PROMPT_DEADLINE_S = 4.0
"""Gemini CLI's BeforeAgent and SessionStart (a 10 s timeout): a briefing on a cold start."""


def run_hook(
    client: str | None,
    event: str | None,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    debug: bool = False,
    deadline_s: float | None = None,
) -> int:
    """Always 0; see the module docstring. ``deadline_s`` (default: by event) bounds the
    wait for the handler."""
    source: TextIO = stdin or sys.stdin
    sink: TextIO = stdout or sys.stdout
    notes: TextIO = stderr or sys.stderr
    found: list[Mapping[str, object] | None] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            found.append(_answer(client, event, source))
        except Exception as exc:
            failed.append(exc)

    worker = threading.Thread(target=work, name="veil-hook", daemon=True)
    worker.start()
    limit = deadline_s or _deadline(client, event)
    worker.join(limit)
    # Gemini CLI reads stderr as the answer when stdout is empty: "no opinion" is said
    nothing = "{}\n" if client == "gemini" else ""
    if worker.is_alive() or failed or not found or found[0] is None:
        sink.write(nothing)
        sink.flush()
    if worker.is_alive():
        print(
            f"veil hook: no answer within {limit:g} s (a locked store or a slow disk?); "
            "no opinion, the session goes on",
            file=notes,
        )
        return 0
    if failed:
        exc = failed[0]
        from veil.clients.claude_code_input import HookInputError

        if isinstance(exc, HookInputError):
            print(f"veil hook: {exc}; nothing recorded", file=notes)
        else:
            message = str(exc).strip().splitlines()
            detail = f"{type(exc).__name__}: {message[0]}" if message else type(exc).__name__
            print(
                f"veil hook: internal error, nothing recorded for this call: {detail}", file=notes
            )
        if debug:
            traceback.print_exception(exc, file=notes)
        return 0
    answer = found[0] if found else None
    if answer is not None:
        sink.write(json.dumps(answer, ensure_ascii=False) + "\n")
        sink.flush()
    return 0


def _deadline(client: str | None, event: str | None) -> float:
    if event == "PreCompact":
        return PRECOMPACT_DEADLINE_S
    if client == "gemini" and event in ("BeforeAgent", "SessionStart"):
        return PROMPT_DEADLINE_S
    return DEADLINE_S


def _answer(client: str | None, event: str | None, stdin: TextIO) -> Mapping[str, object] | None:
    from veil.clients.claude_code_input import HookInputError, needs_store, parse_input

    if client not in CLIENTS:
        raise HookInputError(
            f"unknown client {client!r} (Veil has hooks for: {', '.join(CLIENTS)})"
        )
    if not event:
        raise HookInputError(f"no event given: veil hook {client} EVENT")
    if _isatty(stdin):
        raise HookInputError(
            "the hook reads its agent's JSON from stdin; it is run by Claude Code "
            "(see `veil install claude-code`) or Gemini CLI (under `veil gemini`)"
        )
    if client == "gemini":
        from veil.clients import gemini_hooks

        hook = gemini_hooks.parse_input(stdin.read(), event)
    else:
        hook = parse_input(stdin.read(), event)
    if not needs_store(hook):
        return None
    from veil.clients.claude_code import handle

    answer = handle(hook)
    if client == "gemini":
        from veil.clients import gemini_hooks

        return gemini_hooks.answer(event, answer) or None
    return answer


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False
