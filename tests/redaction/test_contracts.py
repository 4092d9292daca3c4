"""The redactor's contracts: idempotent, deterministic, findings without secrets, the off
switch, the allowlist, extra patterns, disabled kinds, overlaps, and ``redact_json``."""

from __future__ import annotations

import random
import re

from benchmarks.redaction_corpus import ALNUM, B64, UPPER_DIGITS, Secrets, corpus
from hypothesis import given, settings
from hypothesis import strategies as st

from veil.redaction import (
    BUILTIN_KINDS,
    Finding,
    RedactionConfig,
    Redactor,
    placeholder,
    redact,
)
from veil.redaction.findings import PLACEHOLDER

S = Secrets(random.Random(7))
R = Redactor()
KEY_ID = "AKIA" + S.chars(UPPER_DIGITS, 16)
TOKEN = "ghp_" + S.chars(ALNUM, 36)
PASSWORD = S.chars(ALNUM, 20)
SAMPLES = corpus(seed=3, rounds=1)
SECRETS = [c.secret for s in SAMPLES for c in s.canaries]


# ---- idempotence and determinism ---------------------------------------------------------------


def test_redacting_a_redacted_corpus_changes_nothing() -> None:
    for sample in SAMPLES:
        once = R.redact(sample.text)
        twice = R.redact(once.text)
        assert twice.text == once.text
        assert not twice.changed


noise = st.text(alphabet=ALNUM + " =:\"'\n/@._-[]…+$%{}<>", max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(noise, st.sampled_from(SECRETS)), max_size=8))
def test_redaction_is_idempotent_on_any_mixture(parts: list[str]) -> None:
    text = "".join(parts)
    once = R.redact(text)
    assert R.redact(once.text).text == once.text


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(BUILTIN_KINDS), st.text(alphabet=ALNUM + "[] …", min_size=1, max_size=40))
def test_a_placeholder_is_never_redacted_again(kind: str, secret: str) -> None:
    text = f"API_KEY={placeholder(kind, secret)} token: {placeholder(kind, secret)}"
    assert re.fullmatch(PLACEHOLDER, placeholder(kind, secret))
    assert R.redact(text).text == text


def test_secrets_glued_together_are_all_found_with_offsets_into_the_original() -> None:
    pem = S.pem_key().secret
    jwt = S.jwt().secret
    text = f"a {KEY_ID} {pem}{jwt} {TOKEN}"
    out = R.redact(text)
    assert out.text == (
        f"a {placeholder('aws-access-key', KEY_ID)} [secret:private-key]"
        f"{placeholder('jwt', jwt)} {placeholder('github-token', TOKEN)}"
    )
    assert [text[f.start : f.end] for f in out.findings] == [KEY_ID, pem, jwt, TOKEN]
    assert R.redact(out.text).text == out.text


def test_redaction_is_deterministic_across_redactors() -> None:
    text = "\n".join(s.text for s in SAMPLES)
    first = R.redact(text)
    assert Redactor().redact(text) == first
    assert R.redact(text) == first


def test_a_text_found_clean_is_not_scanned_again_and_one_with_a_secret_always_is() -> None:
    """The engine redacts a result, the tape the event carrying it, and a store writes the
    same ids again and again: a text in which nothing was found is remembered (a bounded
    record) and returned as it is; a text with a secret, short or long, is never remembered,
    and gives the same redaction every time."""
    from veil.redaction import redactor as module

    redactor = Redactor()
    clean = redactor._clean  # pyright: ignore[reportPrivateUsage]
    for plain in ("ci_0123456789abcdef", "x" * 5000 + " nothing secret here\n"):
        assert not redactor.redact(plain).changed and plain in clean
        assert redactor.redact(plain) == Redactor().redact(plain)
    for raw in (f"id={KEY_ID}", "x" * 5000 + f" token {TOKEN} id={KEY_ID}\n"):
        once = redactor.redact(raw)
        assert once.changed and TOKEN not in once.text and KEY_ID not in once.text
        assert raw not in clean and once.text not in clean
        assert redactor.redact(raw) == once == Redactor().redact(raw)
    for n in range(module.CLEAN_TEXTS + 10):
        redactor.redact(f"k{n}")
    assert len(clean) == module.CLEAN_TEXTS and "ci_0123456789abcdef" not in clean
    big = "y" * (module.CLEAN_CHARS // 3)
    for n in range(4):
        redactor.redact(big + str(n))
    assert sum(map(len, clean)) <= module.CLEAN_CHARS and big + "0" not in clean


# ---- findings ----------------------------------------------------------------------------------


def test_findings_locate_the_secret_in_the_original_and_never_hold_it() -> None:
    text = f"id={KEY_ID}\nurl=https://u:{PASSWORD}@h/\ntoken {TOKEN}\n"
    out = R.redact(text)
    assert [text[f.start : f.end] for f in out.findings] == [KEY_ID, PASSWORD, TOKEN]
    for f in out.findings:
        assert set(vars(f)) == {"kind", "rule", "start", "end", "path"}
        assert all(secret not in repr(f) for secret in (KEY_ID, PASSWORD, TOKEN))
    assert out.changed


def test_an_unchanged_text_is_returned_as_is() -> None:
    text = "nothing to see here: 3 passed in 0.12s"
    out = R.redact(text)
    assert out.text is text
    assert out.findings == ()
    assert not out.changed
    assert R.redact("").text == ""


def test_a_short_secret_is_shown_without_its_last_four() -> None:
    short = S.chars(ALNUM, 9)
    assert R.redact(f"DB_PASSWORD={short}7x").text == "DB_PASSWORD=[secret:env-assignment]"
    assert placeholder("jwt", "a" * 11) == "[secret:jwt]"
    assert placeholder("jwt", "a" * 12) == "[secret:jwt …aaaa]"


def test_brackets_and_spaces_in_the_last_four_are_masked() -> None:
    assert placeholder("x", "abcdefghij] [") == "[secret:x …j???]"


def test_the_module_level_redact_uses_the_default_configuration() -> None:
    assert redact(f"k {KEY_ID}").text == f"k {placeholder('aws-access-key', KEY_ID)}"


# ---- configuration -------------------------------------------------------------------------


def test_the_off_switch_returns_every_text_unchanged() -> None:
    off = Redactor(RedactionConfig(enabled=False))
    text = f"AWS_ACCESS_KEY_ID={KEY_ID}"
    assert off.redact(text).text == text
    assert off.redact_json({"api_key": PASSWORD, "t": text}).value == {
        "api_key": PASSWORD,
        "t": text,
    }


def test_an_allowlisted_secret_is_left_alone_and_not_taken_by_another_rule() -> None:
    allowed = Redactor(RedactionConfig(allowlist=(re.escape(TOKEN[-8:]) + "$",)))
    text = f"GITHUB_TOKEN={TOKEN}\nid={KEY_ID}"
    out = allowed.redact(text)
    assert out.text == f"GITHUB_TOKEN={TOKEN}\nid={placeholder('aws-access-key', KEY_ID)}"


def test_extra_patterns_replace_their_secret_group_or_whole_match() -> None:
    acme = "acme_" + S.chars("abcdef0123456789", 32)
    ticket = "TICKET-" + S.chars("0123456789", 6)
    config = RedactionConfig(
        extra_patterns=(
            ("acme-token", r"acme_(?P<secret>[a-f0-9]{32})"),
            ("ticket", r"TICKET-\d{6}"),
        )
    )
    out = Redactor(config).redact(f"use {acme} for {ticket}")
    assert out.text == (
        f"use acme_{placeholder('acme-token', acme[5:])} for {placeholder('ticket', ticket)}"
    )
    assert [f.rule for f in out.findings] == ["user:0", "user:1"]
    assert Redactor(config).redact(out.text).text == out.text


def test_an_allowlist_pattern_is_anchored_to_the_secret() -> None:
    allowed = Redactor(RedactionConfig(allowlist=("^" + re.escape(KEY_ID) + "$",)))
    assert allowed.redact(f"id={KEY_ID}").text == f"id={KEY_ID}"


def test_an_extra_pattern_wins_over_a_built_in_rule_on_the_same_span() -> None:
    config = RedactionConfig(extra_patterns=(("our-aws", r"AKIA[A-Z0-9]{16}"),))
    out = Redactor(config).redact(KEY_ID)
    assert [(f.kind, f.rule) for f in out.findings] == [("our-aws", "user:0")]


def test_a_disabled_kind_is_not_looked_for() -> None:
    config = RedactionConfig(disabled_kinds=("env-assignment", "aws-access-key"))
    text = f"DB_PASSWORD={PASSWORD}\nid={KEY_ID}\ntoken {TOKEN}"
    out = Redactor(config).redact(text)
    assert (
        out.text
        == f"DB_PASSWORD={PASSWORD}\nid={KEY_ID}\ntoken {placeholder('github-token', TOKEN)}"
    )


# ---- JSON --------------------------------------------------------------------------------------


def test_redact_json_redacts_every_string_value_and_keeps_keys_and_numbers() -> None:
    secret_key = S.chars(B64, 40)
    value = {
        "user": "dev",
        "retries": 3,
        "ratio": 0.5,
        "ok": True,
        "none": None,
        "env": [f"AWS_ACCESS_KEY_ID={KEY_ID}", "HOME=/root"],
        "nested": {"cmd": f"git clone https://x:{TOKEN}@github.com/a/b", "n": [1, 2]},
        "aws_secret_access_key": secret_key,
        "api_token": PASSWORD,
        "password": "changeme",
        KEY_ID: "keys are kept",
    }
    out = R.redact_json(value)
    assert out.value == {
        "user": "dev",
        "retries": 3,
        "ratio": 0.5,
        "ok": True,
        "none": None,
        "env": [f"AWS_ACCESS_KEY_ID={placeholder('aws-access-key', KEY_ID)}", "HOME=/root"],
        "nested": {
            "cmd": f"git clone https://x:{placeholder('github-token', TOKEN)}@github.com/a/b",
            "n": [1, 2],
        },
        "aws_secret_access_key": placeholder("env-assignment", secret_key),
        "api_token": placeholder("env-assignment", PASSWORD),
        "password": "changeme",
        KEY_ID: "keys are kept",
    }
    assert [(f.path, f.kind, f.rule) for f in out.findings] == [
        (("env", 0), "aws-access-key", "detect-secrets:AWSKeyDetector"),
        (("nested", "cmd"), "github-token", "detect-secrets:GitHubTokenDetector"),
        (("aws_secret_access_key",), "env-assignment", "veil:json-key"),
        (("api_token",), "env-assignment", "veil:json-key"),
    ]
    assert out.changed
    assert value["api_token"] == PASSWORD  # the input is not modified
    assert R.redact_json(out.value).findings == ()


def test_redact_json_offsets_point_into_the_string_at_the_path() -> None:
    value = {"log": [f"x {KEY_ID} y"]}
    (f,) = R.redact_json(value).findings
    assert f == Finding("aws-access-key", "detect-secrets:AWSKeyDetector", 2, 22, ("log", 0))
    assert value["log"][0][f.start : f.end] == KEY_ID


def test_redact_json_accepts_tuples_and_plain_values() -> None:
    assert R.redact_json((1, f"t {TOKEN}")).value == [1, f"t {placeholder('github-token', TOKEN)}"]
    assert R.redact_json(KEY_ID).value == placeholder("aws-access-key", KEY_ID)
    assert R.redact_json(None).value is None
