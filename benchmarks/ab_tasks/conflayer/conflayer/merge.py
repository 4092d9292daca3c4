"""Deep merge of nested dictionaries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``override`` on top: nested dictionaries are merged key by key, anything
    else (lists included) in ``override`` replaces what ``base`` has. A key whose override is
    ``None`` is removed. Neither argument is changed."""
    result = dict(base)
    for key, value in override.items():
        if value is None:
            result.pop(key, None)
            continue
        current = result.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            current.update(deep_merge(current, value))
        else:
            result[key] = value
    return result


def flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"db": {"host": "x"}}`` → ``{"db.host": "x"}``."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, name))
        else:
            out[name] = value
    return out


def unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`flatten`."""
    out: dict[str, Any] = {}
    for name, value in flat.items():
        node = out
        *parents, leaf = name.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out
