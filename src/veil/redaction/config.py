"""How redaction is configured: on or off, extra patterns, an allowlist, kinds turned off.

A configuration is validated when it is made — every regex compiled, every kind checked — so
a bad one fails at start-up with a message naming the bad entry, never at the first secret.
:meth:`RedactionConfig.from_mapping` reads the TOML-like table a settings file holds::

    [redaction]
    enabled = true
    patterns = [{kind = "acme-token", regex = "acme_(?P<secret>[a-z0-9]{32})"}]
    allow = ["^AKIA.*TESTKEY$"]
    disable = ["env-assignment"]
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from .findings import BUILTIN_KINDS, KIND_SHAPE

_KEYS = ("enabled", "patterns", "allow", "disable")
_MAX_KIND_LENGTH = 40


@dataclass(frozen=True)
class RedactionConfig:
    """Redaction settings.

    ``enabled``: the off switch (off: every text is returned unchanged, nothing is scanned).
    ``extra_patterns``: ``(kind, regex)`` rules of the user's own, run before the built-in
    ones; a group named ``secret`` marks the part to replace, else the whole match is.
    ``allowlist``: regexes; a finding whose secret matches one (``re.search``) is left alone.
    ``disabled_kinds``: built-in kinds not to look for (a user pattern is never disabled).
    Raises ``ValueError`` naming the bad entry.
    """

    enabled: bool = True
    extra_patterns: tuple[tuple[str, str], ...] = ()
    allowlist: tuple[str, ...] = ()
    disabled_kinds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for n, (kind, regex) in enumerate(self.extra_patterns):
            where = f"extra_patterns[{n}]"
            _check_kind(kind, where)
            _compile(regex, f"{where} (kind {kind!r})")
        for n, regex in enumerate(self.allowlist):
            _compile(regex, f"allowlist[{n}]")
        for n, kind in enumerate(self.disabled_kinds):
            if kind not in BUILTIN_KINDS:
                raise ValueError(
                    f"disabled_kinds[{n}]: {kind!r} is not a built-in kind "
                    f"(one of {', '.join(BUILTIN_KINDS)})"
                )

    @classmethod
    def from_mapping(cls, table: Mapping[str, object]) -> RedactionConfig:
        """A configuration from a settings table: ``enabled`` (bool), ``patterns`` (a list of
        ``{kind, regex}`` tables), ``allow`` (a list of regexes), ``disable`` (a list of
        built-in kinds). Missing keys keep their defaults; an unknown key, a wrong type or a
        bad regex raises ``ValueError`` naming it."""
        unknown = sorted(set(table) - set(_KEYS))
        if unknown:
            raise ValueError(
                f"redaction: unknown key {unknown[0]!r} (expected one of {', '.join(_KEYS)})"
            )
        enabled = table.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ValueError(f"redaction.enabled: expected true or false, got {enabled!r}")
        patterns: list[tuple[str, str]] = []
        for n, entry in enumerate(_list(table, "patterns")):
            where = f"redaction.patterns[{n}]"
            if not isinstance(entry, Mapping):
                raise ValueError(f"{where}: expected a table with kind and regex, got {entry!r}")
            fields = {str(k): v for k, v in cast(Mapping[object, object], entry).items()}
            extra = sorted(set(fields) - {"kind", "regex"})
            if extra:
                raise ValueError(f"{where}: unknown key {extra[0]!r} (expected kind, regex)")
            kind, regex = fields.get("kind"), fields.get("regex")
            if not isinstance(kind, str):
                raise ValueError(f"{where}.kind: expected a string, got {kind!r}")
            if not isinstance(regex, str):
                raise ValueError(f"{where}.regex (kind {kind!r}): expected a string, got {regex!r}")
            _check_kind(kind, where)
            _compile(regex, f"{where} (kind {kind!r})")
            patterns.append((kind, regex))
        allow = _strings(table, "allow")
        for n, regex in enumerate(allow):
            _compile(regex, f"redaction.allow[{n}]")
        disable = _strings(table, "disable")
        for n, kind in enumerate(disable):
            if kind not in BUILTIN_KINDS:
                raise ValueError(
                    f"redaction.disable[{n}]: {kind!r} is not a built-in kind "
                    f"(one of {', '.join(BUILTIN_KINDS)})"
                )
        return cls(
            enabled=enabled,
            extra_patterns=tuple(patterns),
            allowlist=allow,
            disabled_kinds=disable,
        )


def _list(table: Mapping[str, object], key: str) -> list[object]:
    value = table.get(key, [])
    if not isinstance(value, list | tuple):
        raise ValueError(f"redaction.{key}: expected a list, got {value!r}")
    return list(value)  # pyright: ignore[reportUnknownArgumentType]


def _strings(table: Mapping[str, object], key: str) -> tuple[str, ...]:
    out: list[str] = []
    for n, item in enumerate(_list(table, key)):
        if not isinstance(item, str):
            raise ValueError(f"redaction.{key}[{n}]: expected a string, got {item!r}")
        out.append(item)
    return tuple(out)


def _check_kind(kind: str, where: str) -> None:
    if not re.fullmatch(KIND_SHAPE, kind) or len(kind) > _MAX_KIND_LENGTH:
        raise ValueError(
            f"{where}: kind {kind!r} must be short kebab-case (a-z, 0-9, single hyphens, "
            f"at most {_MAX_KIND_LENGTH} characters)"
        )


def _compile(regex: str, where: str) -> re.Pattern[str]:
    try:
        return re.compile(regex)
    except re.error as exc:
        raise ValueError(f"{where}: bad regex {regex!r}: {exc}") from None
