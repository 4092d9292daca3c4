"""Putting the layers together: defaults, then a profile, then the environment."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from conflayer.env import from_environ
from conflayer.merge import deep_merge, unflatten
from conflayer.schema import validate

PROFILES = Path(__file__).resolve().parent.parent / "profiles"

DEFAULTS: dict[str, Any] = {
    "app": {"name": "shop", "debug": False, "workers": 2, "allowed_hosts": ["localhost"]},
    "database": {
        "host": "localhost",
        "port": 5432,
        "name": "shop",
        "pool": {"size": 5, "timeout": 30.0},
    },
    "cache": {"backend": "memory", "ttl": 300},
    "logging": {"level": "info", "handlers": ["console"]},
    "features": {"new_checkout": False, "search_v2": False},
}


class ProfileNotFound(FileNotFoundError):
    pass


def read_profile(name: str, directory: Path = PROFILES) -> dict[str, Any]:
    path = directory / f"{name}.json"
    if not path.exists():
        raise ProfileNotFound(name)
    return json.loads(path.read_text(encoding="utf-8"))


def load(
    profile: str = "default",
    environ: Mapping[str, str] | None = None,
    directory: Path = PROFILES,
) -> dict[str, Any]:
    """The settings of ``profile`` as a nested dictionary of typed values."""
    tree = deep_merge(DEFAULTS, read_profile(profile, directory))
    tree = deep_merge(tree, from_environ(environ or {}))
    return unflatten(validate(tree))
