"""Layered settings: defaults, a profile file, environment variables."""

from conflayer.loader import DEFAULTS, load
from conflayer.merge import deep_merge
from conflayer.schema import SchemaError

__all__ = ["DEFAULTS", "SchemaError", "deep_merge", "load"]
