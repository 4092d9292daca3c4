"""Veil: a memory for LLM agents that never forgets silently.

The public surface grows issue by issue; see SPEC.md-derived docs in ``docs/``.
"""

from __future__ import annotations

__version__ = "0.1.0"

from veil.memory import Memory, MemoryConfig

__all__ = ["Memory", "MemoryConfig", "__version__"]
