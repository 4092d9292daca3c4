"""Environment variables as an override: ``APP__DATABASE__HOST=db1`` → ``database.host``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PREFIX = "APP__"


def from_environ(environ: Mapping[str, str], prefix: str = PREFIX) -> dict[str, Any]:
    """The variables starting with ``prefix`` as a nested dictionary of strings (keys lower-cased;
    ``__`` separates levels; an empty value removes the key)."""
    out: dict[str, Any] = {}
    for name, value in sorted(environ.items()):
        if not name.startswith(prefix):
            continue
        parts = [p.lower() for p in name[len(prefix) :].split("__") if p]
        if not parts:
            continue
        node = out
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = value if value != "" else None
    return out
