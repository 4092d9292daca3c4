"""What Veil knows of a host agent, as one value (each host module builds its own)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from veil.context.budget import reply_reserve
from veil.llm.catalog import Catalog

Env = Mapping[str, str]


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
        info = catalog.lookup(model)
        known = info.context_window if info is not None else 200_000
        window = self.window(model, known, env)
        limit = self.compaction(model, window, env) or window
        budget = limit - reply_reserve(window)
        if info is not None and info.long_context_above is not None:
            budget = min(budget, info.long_context_above)
        return max(1, budget)
