"""How ``veil <host>`` starts each host agent through Veil's proxy: one module per host (its
upstream, the command line and environment that point it at the proxy and give its model
Veil's ``expand``), beside the host's facts in :mod:`veil.hosts`. :data:`LAUNCHERS` lists them
by the command that starts them; ``veil claude``, ``veil codex``… are made from it.

Adding a host: ``veil/hosts/NAME.py`` (its facts and tool vocabulary, an entry in
:data:`veil.hosts.HOSTS`), ``veil/launch/NAME.py`` (its :class:`Launcher`, an entry here), and
its tests against the pinned binary (``tests/hosts``).
"""

from __future__ import annotations

from collections.abc import Mapping

from veil.launch import claude_code, codex, gemini_cli, opencode, pi
from veil.launch.launcher import Launch, Launcher, Started, binary

LAUNCHERS: Mapping[str, Launcher] = {
    "claude": claude_code.LAUNCHER,
    "codex": codex.LAUNCHER,
    "gemini": gemini_cli.LAUNCHER,
    "pi": pi.LAUNCHER,
    "opencode": opencode.LAUNCHER,
}

__all__ = ["LAUNCHERS", "Launch", "Launcher", "Started", "binary"]
