"""A coding agent's tool call as the need detector reads it: ``(action, kind, paths)``. Pure.

The data sets' steps are shell commands (:mod:`veil.replay.needs` reads them as they are); an
agent's transcript holds tool calls. Each becomes an action of the same shape:

- Claude Code's ``Read`` is a view of its file: ``cat -n PATH`` (Claude Code prints the line
  numbers, ``N<tab>``, as ``cat -n`` does), or ``sed -n 'A,Bp' PATH`` for an ``offset`` /
  ``limit``; ``Edit`` / ``MultiEdit`` / ``Write`` / ``NotebookEdit`` are edits of their file
  carrying their old and new text; ``Grep`` / ``Glob`` / ``LS`` are searches;
- Codex's ``apply_patch`` is an edit of the files its patch names, carrying the patch;
- a shell command (``Bash``, Codex's ``exec_command`` / ``shell`` / ``local_shell``) is itself,
  its kind read from its first program: a view (``cat``, ``nl``, ``head``, ``tail``, ``sed -n``
  of files), a search (``grep``, ``rg``, ``find``, ``ls``…), a test run (``pytest``…), an edit
  (``sed -i``, ``tee``, a ``>`` redirection, ``git apply``) or a run;
- any other tool is ``NAME ARGUMENTS`` (kind ``other``).

Paths a tool names absolutely under the session's working directory are made relative to it,
so a ``Read`` of ``/repo/a.py`` and a later ``cat a.py`` name the same file.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from veil.hosts.codex import PATCHED

Described = tuple[str, str, tuple[str, ...]]
"""``(action, kind, paths)``."""

SHELL_TOOLS = frozenset({"Bash", "PowerShell", "exec_command", "shell", "local_shell"})
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
_VIEW = frozenset({"cat", "nl", "head", "tail", "less", "more", "bat", "batcat"})
_SEARCH = frozenset({"grep", "egrep", "rg", "ag", "ack", "find", "fd", "ls", "tree", "locate"})
_TEST = frozenset({"pytest", "tox", "nox", "jest", "vitest", "mocha", "rspec", "phpunit"})
_TEST_PHRASES = ("-m pytest", "-m unittest", "npm test", "npm run test", "yarn test",
                 "pnpm test", "cargo test", "go test", "make test", "make check")  # fmt: skip
_WRAPPERS = frozenset({"sudo", "env", "time", "timeout", "nice", "command", "exec"})
_SEPARATORS = re.compile(r"\s*(?:&&|\|\||;)\s*")


def relative(path: str, cwd: str | None) -> str:
    """``path`` relative to ``cwd`` when it lies under it (else as it is)."""
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def _text(args: Mapping[str, Any], *keys: str) -> str:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value:
            parts = [str(v) for v in value]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            # ["bash", "-lc", "the command"]: the command is what the model wrote
            if len(parts) == 3 and parts[1] in ("-c", "-lc"):
                return parts[2]
            return " ".join(parts)
    return ""


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def describe(name: str, args: Mapping[str, Any], cwd: str | None = None) -> Described:
    """What the call ``name(args)`` is for the need detector (see the module docstring)."""
    if name == "Read":
        path = relative(_text(args, "file_path", "path"), cwd)
        offset, limit = _int(args.get("offset")), _int(args.get("limit"))
        if offset is None and limit is None:
            return f"cat -n {path}", "view", (path,)
        first = max(1, offset or 1)
        last = first + limit - 1 if limit else None
        span = f"{first},{last}p" if last is not None else f"{first},$p"
        return f"sed -n '{span}' {path}", "view", (path,)
    if name in EDIT_TOOLS:
        path = relative(_text(args, "file_path", "notebook_path", "path"), cwd)
        texts: list[str] = []
        edits = args.get("edits")
        if isinstance(edits, list):
            for edit in edits:  # pyright: ignore[reportUnknownVariableType]
                if isinstance(edit, Mapping):
                    one: Mapping[str, Any] = edit  # pyright: ignore[reportUnknownVariableType]
                    texts += [_text(one, "old_string"), _text(one, "new_string")]
        texts += [_text(args, key) for key in ("old_string", "new_string", "content", "new_source")]
        body = "\n".join(t for t in texts if t)
        return f"{name.lower()} {path}\n{body}".rstrip(), "edit", (path,)
    if name == "apply_patch":
        patch = _text(args, "input", "patch", "command")
        files = tuple(dict.fromkeys(relative(f, cwd) for f in PATCHED.findall(patch)))
        return patch, "edit", files
    if name in SHELL_TOOLS:
        command = _text(args, "command", "cmd")
        kind, paths = shell_kind(command)
        return command, kind, paths
    if name == "Grep":
        where = relative(_text(args, "path"), cwd)
        return f"grep -rn {shlex.quote(_text(args, 'pattern'))} {where}".rstrip(), "search", ()
    if name in ("Glob", "LS"):
        where = relative(_text(args, "path"), cwd)
        return f"{name.lower()} {_text(args, 'pattern')} {where}".strip(), "search", ()
    arguments = json.dumps(dict(args), ensure_ascii=False, sort_keys=True)
    return f"{name} {arguments}", "other", ()


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command, posix=True)
    except ValueError:  # an unbalanced quote: near enough
        return command.split()


def _program(words: Sequence[str]) -> tuple[str, list[str]]:
    """The program a simple command runs (past ``sudo``, ``env``, ``A=B``) and its arguments."""
    rest = list(words)
    while rest and (rest[0] in _WRAPPERS or re.fullmatch(r"\w+=.*", rest[0])):
        rest.pop(0)
    if not rest:
        return "", []
    return rest[0].rsplit("/", 1)[-1], rest[1:]


def _files(arguments: Sequence[str], program: str) -> tuple[str, ...]:
    """The operands that are files: not options, not numbers, not a ``sed`` script."""
    out: list[str] = []
    skip_next = False
    script_seen = program != "sed"
    for arg in arguments:
        if skip_next:
            skip_next = False
            continue
        if arg in ("-n", "-c") and program in ("head", "tail"):
            skip_next = True
            continue
        if arg.startswith("-") or arg.isdigit():
            continue
        if not script_seen:  # sed's first operand is its script
            script_seen = True
            continue
        if arg in ("|", ">", "<", "2>&1"):
            break
        out.append(arg)
    return tuple(out)


def shell_kind(command: str) -> tuple[str, tuple[str, ...]]:
    """A shell command's kind and the files it views or edits (the last simple command of a
    ``cd X && …`` chain decides)."""
    text = command.strip()
    if not text:
        return "run", ()
    if any(phrase in text for phrase in _TEST_PHRASES):
        return "test", ()
    pieces = [p for p in _SEPARATORS.split(text) if p.strip()]
    last = pieces[-1] if pieces else text
    first_stage = last.split("|", 1)[0]
    program, arguments = _program(_words(first_stage))
    if program in _TEST:
        return "test", ()
    if program == "sed" and any(a.startswith("-i") for a in arguments):
        return "edit", _files([a for a in arguments if not a.startswith("-i")], "sed")
    if program in ("tee", "patch") or (program == "git" and arguments[:1] == ["apply"]):
        return "edit", ()
    if re.search(r"(?<![<>&|0-9])>>?\s*[\w./-]+", first_stage) and program not in _SEARCH:
        return "edit", ()
    if program in _VIEW or (program == "sed" and "-n" in arguments):
        return "view", _files(arguments, program)
    if program in _SEARCH or (program == "git" and arguments[:1] == ["grep"]):
        return "search", ()
    return "run", ()


__all__ = ["EDIT_TOOLS", "SHELL_TOOLS", "Described", "describe", "relative", "shell_kind"]
