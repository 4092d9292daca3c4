"""Configuration: defaults, ``from_mapping`` and the errors that name the bad entry."""

from __future__ import annotations

from typing import Any

import pytest

from veil.redaction import RedactionConfig


def test_defaults() -> None:
    config = RedactionConfig()
    assert config.enabled
    assert config.extra_patterns == config.allowlist == config.disabled_kinds == ()
    assert RedactionConfig.from_mapping({}) == config


def test_from_mapping_reads_every_key() -> None:
    config = RedactionConfig.from_mapping(
        {
            "enabled": False,
            "patterns": [{"kind": "acme-token", "regex": r"acme_(?P<secret>\w{32})"}],
            "allow": ["^AKIA.*TEST$"],
            "disable": ["env-assignment"],
        }
    )
    assert config == RedactionConfig(
        enabled=False,
        extra_patterns=(("acme-token", r"acme_(?P<secret>\w{32})"),),
        allowlist=("^AKIA.*TEST$",),
        disabled_kinds=("env-assignment",),
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"enable": True}, "unknown key 'enable'"),
        ({"enabled": "yes"}, "redaction.enabled: expected true or false, got 'yes'"),
        ({"patterns": {"kind": "x"}}, "redaction.patterns: expected a list"),
        ({"patterns": ["acme_.*"]}, "redaction.patterns[0]: expected a table"),
        ({"patterns": [{"kind": "x", "regex": "a", "flags": "i"}]}, "unknown key 'flags'"),
        ({"patterns": [{"regex": "a"}]}, "redaction.patterns[0].kind: expected a string"),
        ({"patterns": [{"kind": "x"}]}, "redaction.patterns[0].regex (kind 'x'): expected"),
        ({"patterns": [{"kind": "Acme Token", "regex": "a"}]}, "kind 'Acme Token' must be"),
        ({"patterns": [{"kind": "k" * 41, "regex": "a"}]}, "at most 40 characters"),
        (
            {"patterns": [{"kind": "ok", "regex": "a"}, {"kind": "acme", "regex": "acme_(["}]},
            "redaction.patterns[1] (kind 'acme'): bad regex 'acme_(['",
        ),
        ({"allow": "^x$"}, "redaction.allow: expected a list"),
        ({"allow": ["ok", 3]}, "redaction.allow[1]: expected a string, got 3"),
        ({"allow": ["(unclosed"]}, "redaction.allow[0]: bad regex '(unclosed'"),
        ({"disable": ["aws"]}, "redaction.disable[0]: 'aws' is not a built-in kind"),
    ],
)
def test_from_mapping_names_the_bad_key_or_value(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=None) as info:
        RedactionConfig.from_mapping(table)
    assert message in str(info.value)


def test_the_constructor_validates_too() -> None:
    with pytest.raises(ValueError, match=r"extra_patterns\[0\] \(kind 'x'\): bad regex"):
        RedactionConfig(extra_patterns=(("x", "("),))
    with pytest.raises(ValueError, match=r"allowlist\[0\]: bad regex"):
        RedactionConfig(allowlist=("[",))
    with pytest.raises(ValueError, match=r"disabled_kinds\[0\]: 'nope'"):
        RedactionConfig(disabled_kinds=("nope",))
