"""``veil`` without ``-p``: the interactive terminal UI (Textual; install the ``tui`` extra).

The TUI runs the same loop, hooks and session persistence as print mode
(:mod:`veil.cli.run`), and shows what the memory layer does: tool calls whose results were
evicted from the context are dimmed in the transcript (and brightened again when they come
back), and a status line shows the window fill, the eviction threshold T and the convergence
level. Importing this package does not import Textual; :mod:`veil.tui.app` does.
"""

from __future__ import annotations
