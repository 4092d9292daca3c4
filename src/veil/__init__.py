"""Veil: a memory for LLM agents that never forgets silently.

The public surface grows issue by issue; see SPEC.md-derived docs in ``docs/``.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
