"""Adversarial inputs stay linear: many headers, keywords, URLs or candidates in one text.

Each input is 100-300 KB; the bound (5 s) is two orders of magnitude above what they take, so
the test catches quadratic behaviour, not a slow machine.
"""

from __future__ import annotations

import random
import time

import pytest
from benchmarks.redaction_corpus import HEX, Secrets

from veil.redaction import Redactor

S = Secrets(random.Random(99))


INPUTS = {
    "many key headers without END": "-----BEGIN RSA PRIVATE KEY-----" * 8000,
    "headers then one far END": "-----BEGIN RSA PRIVATE KEY-----\nxx\n" * 4000
    + "-----END RSA PRIVATE KEY-----",
    "a run of secret words": "key" * 60000 + "=abc",
    "secret words with signs": "token=" * 40000,
    "URLs without @": "https://" + "a:" * 60000,
    "many JWT starts": "eyJhbGciOiJIUzI1NiJ9." * 8000,
}


@pytest.mark.parametrize("name", sorted(INPUTS))
def test_pathological_inputs_stay_fast(name: str) -> None:
    redactor = Redactor()
    text = INPUTS[name]
    started = time.perf_counter()
    out = redactor.redact(text)
    assert time.perf_counter() - started < 5.0
    assert redactor.redact(out.text).text == out.text


def test_three_thousand_secrets_are_all_found() -> None:
    text = "\n".join(f"APP_{i}_TOKEN={S.chars(HEX, 32)}" for i in range(3000))
    out = Redactor().redact(text)
    assert len(out.findings) == 3000
