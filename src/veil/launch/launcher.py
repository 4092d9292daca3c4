"""How ``veil <host>`` starts a host agent through Veil's proxy, as one value per host
(:class:`Launcher`; each module of this package builds its own).

A launch is pure: it turns what the run knows (:class:`Launch`: the agent's binary, the
proxy's base URL, the project, the agent's own arguments, the environment, how the agent starts
Veil, a private directory for this run) into the command and environment to start
(:class:`Started`). Files a host can only read from disk go in ``scratch``, which the caller
removes after the run; nothing of the user's configuration is written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from veil.hosts.host import Host

Env = Mapping[str, str]


@dataclass(frozen=True)
class Launch:
    """What a launcher is given for one run."""

    binary: str
    """The host agent's executable."""
    base: str
    """The proxy's base URL as the host's client should use it (the upstream's path kept)."""
    root: Path
    """The project root (``.veil`` lives there)."""
    args: tuple[str, ...]
    """The arguments the user gave the agent (after ``--``)."""
    env: Env
    """The environment ``veil`` runs in."""
    veil: tuple[str, ...]
    """The command that starts Veil (for the host's MCP server and hooks)."""
    scratch: Path
    """A private directory for this run, removed after it."""


@dataclass(frozen=True)
class Started:
    """The command line and environment that start the agent."""

    command: list[str]
    env: dict[str, str]


def _settings(env: Env) -> dict[str, str]:
    return dict(env)


@dataclass(frozen=True)
class Launcher:
    """How Veil starts one host agent through its proxy."""

    host: Host
    binary_variable: str
    """The environment variable that names the agent's executable (else it is found on
    ``PATH`` by :attr:`Host.name`)."""
    upstream: Callable[[Env], str]
    """The model provider the agent would reach without Veil (the proxy's upstream)."""
    start: Callable[[Launch], Started]
    """The command and environment for one run."""
    settings: Callable[[Env], dict[str, str]] = field(default=_settings)
    """The environment with the host's own settings that move its window or compaction point
    folded in as variables (Codex: its ``config.toml`` limits), for :meth:`Host.budget`."""
    upstream_of_args: Callable[[Env, Sequence[str]], str] | None = None
    """The upstream when the agent's arguments choose it (pi's ``--provider``); None:
    :attr:`upstream`."""

    def upstream_for(self, env: Env, args: Sequence[str]) -> str:
        """The proxy's upstream for a run of the agent with ``args``."""
        if self.upstream_of_args is not None:
            return self.upstream_of_args(env, args)
        return self.upstream(env)


def binary(launcher: Launcher, env: Env) -> str:
    """The agent's executable: ``$VARIABLE`` when set (it must exist), else the first
    ``name`` on ``PATH``. Raises :class:`FileNotFoundError` with one line that names the fix."""
    import os
    import shutil

    name, variable = launcher.host.name, launcher.binary_variable
    configured = env.get(variable)
    if configured:
        if os.path.isfile(configured) and os.access(configured, os.X_OK):
            return configured
        raise FileNotFoundError(
            f"{variable}={configured}: no such executable (point {variable} at the `{name}` "
            f"binary, or unset it to use the one on PATH)"
        )
    found = shutil.which(name, path=env.get("PATH"))
    if not found:
        raise FileNotFoundError(
            f"`{name}` is not on PATH (install it, or set {variable} to its path)"
        )
    return found
