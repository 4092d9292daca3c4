"""The known settings, their types, and coercion of strings (from the environment)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from conflayer.merge import flatten

SCHEMA: dict[str, type] = {
    "app.name": str,
    "app.debug": bool,
    "app.workers": int,
    "app.allowed_hosts": list,
    "database.host": str,
    "database.port": int,
    "database.name": str,
    "database.pool.size": int,
    "database.pool.timeout": float,
    "cache.backend": str,
    "cache.ttl": int,
    "logging.level": str,
    "logging.handlers": list,
    "features.new_checkout": bool,
    "features.search_v2": bool,
}
LEVELS = ("debug", "info", "warning", "error")
TRUE, FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


class SchemaError(ValueError):
    """A setting that is unknown or of the wrong type."""


def coerce(name: str, value: Any) -> Any:
    """``value`` as the type ``name`` has; strings are converted (lists: comma-separated)."""
    kind = SCHEMA.get(name)
    if kind is None:
        raise SchemaError(f"unknown setting {name}")
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    if not isinstance(value, str):
        if kind is float and isinstance(value, int):
            return float(value)
        raise SchemaError(f"{name}: expected {kind.__name__}, got {type(value).__name__}")
    text = value.strip()
    try:
        if kind is bool:
            if text.lower() in TRUE:
                return True
            if text.lower() in FALSE:
                return False
            raise ValueError(text)
        if kind is list:
            return [item.strip() for item in text.split(",") if item.strip()]
        return kind(text)
    except ValueError:
        raise SchemaError(f"{name}: cannot read {value!r} as {kind.__name__}") from None


def validate(tree: Mapping[str, Any]) -> dict[str, Any]:
    """Every setting coerced to its type, as a flat dictionary; unknown names are errors."""
    flat = {name: coerce(name, value) for name, value in flatten(tree).items()}
    level = flat.get("logging.level")
    if level is not None and level not in LEVELS:
        raise SchemaError(f"logging.level: one of {', '.join(LEVELS)}, not {level!r}")
    return flat
