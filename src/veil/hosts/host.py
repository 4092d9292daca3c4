"""What Veil knows of a host agent, as one value (each host module builds its own), and what
one call of a host's tool addresses (:class:`Use`), the one description of it the proxy and
the hooks both take.

Light to import (the hooks import it for every tool call): the context and catalog layers are
imported only where a budget is computed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from veil.llm.catalog import Catalog

Env = Mapping[str, str]
Effect = Literal["read", "write", "run", "look"]
"""What a call does: ``read`` a file (or a range of it), ``write`` files, ``run`` a command,
``look`` something up (a search, a web page) without changing anything."""
COMMAND_CHARS = 500
"""A command line is described by at most its first 500 characters."""


@dataclass(frozen=True)
class Use:
    """What one tool call addresses and what it does, as its host's tool means it.

    ``target`` names what it addressed: a path, ``path#first+count`` for a range of a file
    (``path#first+`` when only the first line is given, ``path#1+count`` when only the count),
    a command line (stripped, at most :data:`COMMAND_CHARS`), ``grep pattern path``; for several
    files the paths, space-separated. Paths are relative to the project root when they lie
    inside it (``/``-separated), absolute otherwise (:func:`relative`). ``files``: the files it
    reads or writes. ``partial``: it reads only a range of its file."""

    effect: Effect
    target: str
    files: tuple[str, ...] = ()
    partial: bool = False


Describe = Callable[[str, Mapping[str, Any], "Path | None"], "Use | None"]
"""A host's vocabulary: ``describe(tool name, arguments, project root)`` → what the call
addresses, or None for a tool the host does not have (or a call missing what its tool needs)."""


def relative(path: str, root: Path | None) -> str:
    """``path`` relative to ``root`` when it lies inside it (``/``-separated), else as given.
    A relative path is taken as relative to the root already (the hosts' working directory),
    never to this process's."""
    given = PurePosixPath(path.replace("\\", "/"))
    if root is None or not given.is_absolute():
        return given.as_posix()
    try:
        return Path(given).resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        return given.as_posix()


def text(arguments: Mapping[str, Any], *keys: str) -> str:
    """The first of ``keys`` whose value is a non-empty string ("" when none is)."""
    for key in keys:
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def whole(value: object) -> int | None:
    """``value`` when it is an integer (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read(rel: str, first: int | None, count: int | None) -> Use:
    """A read of file ``rel`` (relative already): whole when neither the first line nor the
    count is given, else the range ``rel#first+count`` (:class:`Use`'s spelling)."""
    if first is None and count is None:
        return Use("read", rel, (rel,))
    return Use("read", f"{rel}#{first or 1}+{count or ''}", (rel,), partial=True)


def command(line: str) -> Use | None:
    """A command line run (None when it is blank)."""
    line = line.strip()
    return Use("run", line[:COMMAND_CHARS]) if line else None


@dataclass(frozen=True)
class Host:
    """A coding agent Veil serves through its proxy.

    ``compaction(model, window, env)`` is the conversation size (the provider's input tokens of
    the last request, as the host counts it) at which the host compacts on its own, or None when
    it never does (the user switched it off); ``window`` is the model's context window as the
    host sees it."""

    name: str
    """The command that starts it (``claude``)."""
    title: str
    """As people call it (``Claude Code``)."""
    expand_tool: str
    """Veil's MCP ``expand`` as the host's model sees it."""
    fixed_tokens: int
    """About what the host sends before any message (system prompt, tool schemas, its own
    notes), at most: a budget below it leaves no room for a conversation."""
    window: Callable[[str, int, Env], int]
    """The model's window as the host uses it, from the table's ``window`` for the model."""
    compaction: Callable[[str, int, Env], int | None]
    default_model: str = ""
    """The model the pinned host uses when none is chosen."""
    compaction_markers: tuple[str, ...] = ()
    """Texts in the last user message of the host's own compaction request."""
    model_variable: str = ""
    """The environment variable that chooses the host's model, if any."""
    describe: Describe = lambda _name, _arguments, _root: None
    """Its tool vocabulary (the host module's ``describe``)."""
    expand_calls: tuple[str, ...] = ()
    """The names a call of Veil's expand arrives under in the host's requests."""
    deferred_expand: tuple[str, ...] = ()
    """Texts in a request's first messages that show the host deferred Veil's expand behind
    its tool search under another name than its calls' (Codex names the ``mcp__veil``
    namespace): the model can still reach it. A deferred tool named as its calls are needs
    none."""
    package: str = ""
    """The npm package that installs it (``veil doctor``'s fix names it)."""
    resume: str = ""
    """The host's arguments that resume a session, ``{session}`` standing for its id (the exit
    summary's ``resume`` line; "": no id reaches Veil)."""
    tested: tuple[str, str] = ("", "")
    """The oldest and the newest version of the host Veil is tested with."""

    def model_of(self, args: Sequence[str], env: Env) -> str:
        """The model a run of the host with ``args`` will ask for: its ``--model``/``-m``
        option, else its model variable, else its default."""
        for i, arg in enumerate(args):
            if arg in ("--model", "-m") and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith("--model="):
                return arg.split("=", 1)[1]
        return (env.get(self.model_variable) if self.model_variable else None) or self.default_model

    def budget(self, model: str, env: Env, catalog: Catalog) -> int:
        """The request budget for ``model``: just below where the host would compact (less the
        reply's reserve: the host counts the reply too), and never into a dearer long-context
        price tier (the table's ``long_context_above``)."""
        from veil.context.budget import reply_reserve

        info = catalog.lookup(model)
        known = info.context_window if info is not None else 200_000
        window = self.window(model, known, env)
        limit = self.compaction(model, window, env) or window
        budget = limit - reply_reserve(window)
        if info is not None and info.long_context_above is not None:
            budget = min(budget, info.long_context_above)
        return max(1, budget)
