"""Veil inside coding agents it does not run itself: Claude Code's hooks and the installers
that register Veil with Claude Code and Codex.

- :mod:`~veil.clients.claude_code_input` — Claude Code's documented hook JSON → plain values.
- :mod:`~veil.clients.claude_code_state` — what the hooks keep on the tape (a projection).
- :mod:`~veil.clients.claude_code` — the hook handlers: payload in, documented answer out.
- :mod:`~veil.clients.settings` — merging Veil's entries into Claude Code's JSON settings.
- :mod:`~veil.clients.codex` — adding ``veil mcp`` to Codex's TOML configuration.

This package sits beside ``agent/``: it may use the agent layer's project identity and the
memory layers, and nothing below it imports it (``tests/test_architecture.py``).
"""
