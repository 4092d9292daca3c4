"""A project's settings file: ``.veil/config.toml`` (or the file ``$VEIL_CONFIG`` names).

Each layer reads its own section and validates it (``[redaction]`` in the tape,
``[retention]`` in the agent's sessions); this module only finds and parses the file. A file
that is not valid TOML fails with one line naming the file and the problem, never a traceback
or a silent default: settings that protect secrets must not be ignored by accident.

::

    [redaction]
    enabled = true                      # the off switch (also: VEIL_REDACT=off)
    patterns = [{kind = "acme-token", regex = "acme_(?P<secret>[a-z0-9]{32})"}]
    allow = ["^AKIA.*EXAMPLE$"]

    [retention]
    max_age_days = 30
    max_megabytes = 256
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

FILE_NAME = "config.toml"


class ConfigError(ValueError):
    """The settings file cannot be read or says something invalid (the message names it)."""


def config_path(veil_dir: Path | None) -> Path | None:
    """The settings file in effect: ``$VEIL_CONFIG`` when set, else ``config.toml`` in the
    project's ``.veil`` directory (None when there is neither)."""
    named = os.environ.get("VEIL_CONFIG")
    if named:
        return Path(named)
    if veil_dir is None:
        return None
    path = veil_dir / FILE_NAME
    return path if path.exists() else None


def section(veil_dir: Path | None, name: str) -> Mapping[str, Any]:
    """The ``[name]`` table of the settings file (empty when the file or the table is not
    there). Raises :class:`ConfigError` for a file that cannot be read or parsed."""
    path = config_path(veil_dir)
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    table = data.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [{name}] must be a table")
    return cast(dict[str, Any], table)


def veil_dir_of(store_path: str | Path) -> Path | None:
    """The ``.veil`` directory a store file lives in (None for a store elsewhere: its
    settings come from ``$VEIL_CONFIG`` only)."""
    parent = Path(store_path).resolve().parent if str(store_path) != ":memory:" else None
    return parent if parent is not None and parent.name == ".veil" else None
