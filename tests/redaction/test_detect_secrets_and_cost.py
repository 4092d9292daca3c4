"""How the redactor uses detect-secrets, and what importing and first use cost.

- ``import veil.redaction`` imports no other part of Veil, not detect-secrets, and compiles no
  rule (checked in a fresh interpreter).
- detect-secrets is imported only when one of its rules' triggers hits, and then its
  plugins' own ``denylist`` patterns are what runs.
- A trigger never hides a finding: on the whole canary corpus, every span a rule finds without
  its trigger is found with it (so the cheap gates lose nothing).
- Nothing talks to the network (detect-secrets' live verification is never called).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from benchmarks.redaction_corpus import corpus

from veil.redaction import Redactor
from veil.redaction.plugins import detect_secrets_patterns
from veil.redaction.rules import builtin_rules

REPO = Path(__file__).resolve().parents[2]


def fresh(code: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    return json.loads(done.stdout)


def test_importing_the_package_loads_nothing_heavy_and_nothing_else_of_veil() -> None:
    seen = fresh(
        "import sys, json, veil.redaction; "
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.startswith(('veil', 'detect_secrets', 'requests')))))"
    )
    assert seen == [
        "veil",
        "veil.redaction",
        "veil.redaction.config",
        "veil.redaction.findings",
        "veil.redaction.redactor",
    ]


def test_detect_secrets_is_imported_only_when_one_of_its_triggers_hits() -> None:
    code = (
        "import sys, json; from veil.redaction import Redactor; r = Redactor(); "
        "r.redact(sys.argv[1]); print(json.dumps('detect_secrets' in sys.modules))"
    )
    plain = "collected 12 items\ntests/test_a.py ....F [100%]\npassword = request.POST['p']\n"
    for text, expected in ((plain * 50, False), ("id AKIAQ7RZ2XK9VBTM4WPN", True)):
        done = subprocess.run(
            [sys.executable, "-c", code, text], capture_output=True, text=True, check=True
        )
        assert json.loads(done.stdout) is expected, text[:40]


def test_the_detect_secrets_rules_run_the_plugins_own_patterns() -> None:
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector

    aws: Sequence[re.Pattern[str]] = getattr(AWSKeyDetector, "denylist")  # noqa: B009
    github: Sequence[re.Pattern[str]] = getattr(GitHubTokenDetector, "denylist")  # noqa: B009
    assert detect_secrets_patterns("aws", "AWSKeyDetector") == tuple(aws)
    assert detect_secrets_patterns("github_token", "GitHubTokenDetector")[0] is github[0]
    names = {r.name for r in builtin_rules() if r.name.startswith("detect-secrets:")}
    assert len(names) >= 12


@pytest.mark.parametrize("rule", builtin_rules(), ids=lambda r: f"{r.name}/{r.kind}")
def test_a_trigger_never_hides_a_finding(rule: object) -> None:
    from veil.redaction.rules import Rule

    assert isinstance(rule, Rule)
    for sample in corpus(seed=11, rounds=4):
        text = sample.text
        if not list(rule.find(text)):
            continue
        hay = text.lower() if rule.fold else text
        assert not rule.trigger or any(t.search(hay) for t in rule.trigger), sample.scenario
        assert rule.gate is None or rule.gate.search(text), sample.scenario


def test_no_network_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    import requests

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("redaction must not use the network")

    monkeypatch.setattr(requests.Session, "request", refuse)
    redactor = Redactor()
    for sample in corpus(seed=5, rounds=1):
        assert redactor.redact(sample.text).changed
