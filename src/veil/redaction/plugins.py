"""detect-secrets (Yelp), imported at first need: its plugins' patterns and its JWT check.

Nothing here runs at ``import veil.redaction``: a plugin module is imported (and with it
detect-secrets' core and ``requests``, 0.3–0.5 s on the reference machine) only when a rule
that uses it is about to run. Only the plugins' compiled ``denylist`` patterns and the JWT
plugin's ``is_formally_valid`` are used — never their ``verify`` (which calls vendors' APIs).
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable, Sequence
from typing import Any, cast


@functools.cache
def detect_secrets_plugin(module: str, cls: str) -> Any:
    """The plugin class ``detect_secrets.plugins.<module>.<cls>`` (imported on first call)."""
    return getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls)


def detect_secrets_patterns(module: str, cls: str) -> tuple[re.Pattern[str], ...]:
    """That plugin's compiled ``denylist`` patterns, exactly as detect-secrets ships them."""
    denylist = cast(Sequence[re.Pattern[str]], detect_secrets_plugin(module, cls).denylist)
    return tuple(denylist)


def jwt_is_valid(token: str) -> bool:
    """detect-secrets' own check that a JWT's header and payload decode to JSON."""
    return bool(detect_secrets_plugin("jwt", "JwtTokenDetector").is_formally_valid(token))


def from_detect_secrets(
    module: str, cls: str, index: int | None = None
) -> Callable[[], tuple[re.Pattern[str], ...]]:
    """A detect-secrets plugin's patterns (all, or the ``index``-th), loaded at first use."""

    def patterns() -> tuple[re.Pattern[str], ...]:
        found = detect_secrets_patterns(module, cls)
        return found if index is None else (found[index],)

    return patterns
