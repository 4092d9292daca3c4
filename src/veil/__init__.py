"""Veil: a memory for LLM agents that never forgets silently.

``from veil import Memory, MemoryConfig`` is the library's entry point (docs/memory.md). They
are imported on first use, so that ``import veil`` — and every ``veil`` command that only needs
the version or its argument parser — does not pay for numpy and the stores.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from veil.memory import Memory, MemoryConfig

__all__ = ["Memory", "MemoryConfig", "__version__"]


def __getattr__(name: str) -> Any:
    if name in ("Memory", "MemoryConfig"):
        import veil.memory

        return getattr(veil.memory, name)
    raise AttributeError(f"module 'veil' has no attribute {name!r}")
