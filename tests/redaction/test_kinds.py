"""Every kind is found, with the exact placeholder, and only the secret part is replaced.

Secrets are canaries from the seeded generator of the benchmark corpus (never real keys).
Each case is ``(text with {s} where the secret goes, secret, expected kind)``; the expected
output is the text with ``{s}`` replaced by the placeholder, so the test also proves that the
variable name, the URL's user and host, the header name — everything around — stay as they are.
"""

from __future__ import annotations

import base64
import random

import pytest
from benchmarks.redaction_corpus import ALNUM, B64, HEX, UPPER_DIGITS, URLSAFE, Secrets

from veil.redaction import Redactor, placeholder

S = Secrets(random.Random(20240611))
R = Redactor()


def chars(alphabet: str, n: int) -> str:
    return S.chars(alphabet, n)


def jwt() -> str:
    return S.jwt().secret


def pem(label: str) -> str:
    return S.pem_key(label).secret


CASES: list[tuple[str, str, str]] = [
    # AWS
    ("AWS_ACCESS_KEY_ID={s}", "AKIA" + chars(UPPER_DIGITS, 16), "aws-access-key"),
    ("aws_access_key_id = {s}\n", "ASIA" + chars(UPPER_DIGITS, 16), "aws-access-key"),
    ("AWS_SECRET_ACCESS_KEY={s}", chars(B64, 40), "aws-secret-key"),
    ('"SecretAccessKey": "{s}",', chars(B64, 40), "aws-secret-key"),
    ("s3 = connect(aws_pw='{s}')", chars(ALNUM, 40), "aws-secret-key"),
    # GitHub, GitLab
    ("export GITHUB_TOKEN={s}", "ghp_" + chars(ALNUM, 36), "github-token"),
    ("token {s} expires", "gho_" + chars(ALNUM, 36), "github-token"),
    ("{s}", "ghu_" + chars(ALNUM, 36), "github-token"),
    ("GH_TOKEN: {s}", "ghs_" + chars(ALNUM, 36), "github-token"),
    ("refresh={s};", "ghr_" + chars(ALNUM, 36), "github-token"),
    (
        "Authorization: token {s}",
        f"github_pat_{chars(ALNUM, 22)}_{chars(ALNUM, 59)}",
        "github-token",
    ),
    (
        "git push https://oauth2:{s}@gitlab.com/a/b.git",
        "glpat-" + chars(URLSAFE, 20),
        "gitlab-token",
    ),
    # model vendors
    ("OPENAI_API_KEY={s}", "sk-proj-" + chars(URLSAFE, 156), "openai-key"),
    ("key: {s}", "sk-" + chars(ALNUM, 20) + "T3BlbkFJ" + chars(ALNUM, 20), "openai-key"),
    ("{s}", "sk-svcacct-" + chars(URLSAFE, 80), "openai-key"),
    ("ANTHROPIC_API_KEY='{s}'", "sk-ant-api03-" + chars(URLSAFE, 93) + "AA", "anthropic-key"),
    ("?key={s}&q=1", "AIza" + chars(URLSAFE, 35), "google-api-key"),
    ("HF_TOKEN={s}", "hf_" + chars(ALNUM[:52], 34), "huggingface-token"),
    # Slack
    (
        "SLACK_BOT_TOKEN={s}",
        f"xoxb-{S.rng.randrange(10**11)}-{S.rng.randrange(10**12)}-" + chars(ALNUM, 24),
        "slack-token",
    ),
    ("app token {s}", "xapp-1-A" + chars(UPPER_DIGITS, 10) + "-" + chars(HEX, 64), "slack-token"),
    (
        "POST https://hooks.slack.com/services/{s} 200",
        f"T{chars(UPPER_DIGITS, 9)}/B{chars(UPPER_DIGITS, 9)}/{chars(ALNUM, 24)}",
        "slack-webhook",
    ),
    # payments, mail, registries, clouds
    ("stripe.api_key = '{s}'", "sk_live_" + chars(ALNUM, 99), "stripe-key"),
    ("{s}", "rk_live_" + chars(ALNUM, 24), "stripe-key"),
    ("STRIPE_KEY={s}", "sk_test_" + chars(ALNUM, 24), "stripe-key"),
    ("webhook secret {s}", "whsec_" + chars(ALNUM, 32), "stripe-key"),
    (
        "DefaultEndpointsProtocol=https;AccountName=x;AccountKey={s};EndpointSuffix=core",
        chars(B64, 86) + "==",
        "azure-storage-key",
    ),
    ("password = {s}", "pypi-AgEIcHlwaS5vcmc" + chars(URLSAFE, 100), "pypi-token"),
    ("//registry.npmjs.org/:_authToken={s}", "npm_" + chars(ALNUM, 36), "npm-token"),
    ("SG key {s}", f"SG.{chars(URLSAFE, 22)}.{chars(URLSAFE, 43)}", "sendgrid-key"),
    ("square {s}", "sq0csp-" + chars(URLSAFE, 43), "square-token"),
    # JWT
    ("token={s}", jwt(), "jwt"),
    ('{{"id_token": "{s}"}}', jwt(), "jwt"),
    # URLs
    ("https://user:{s}@example.com/", chars(ALNUM, 18), "url-password"),
    ("postgresql+psycopg2://app:{s}@db:5432/app", chars(ALNUM, 24), "url-password"),
    ("redis://:{s}@cache:6379/0", chars(ALNUM, 20), "url-password"),
    # headers and flags
    ("curl -H 'Authorization: Bearer {s}' https://x", chars(URLSAFE, 40), "bearer-token"),
    (
        '"authorization": "Basic {s}"',
        base64.b64encode(b"me:" + chars(ALNUM, 20).encode()).decode(),
        "bearer-token",
    ),
    ("twine upload --password {s} dist/*", chars(ALNUM, 24), "cli-secret"),
    ("docker login -u ci -p {s} registry.io", chars(ALNUM, 24), "cli-secret"),
    # secret-named assignments
    ("export DB_PASSWORD={s}", chars(ALNUM, 20), "env-assignment"),
    ("PASSWORD={s}", chars(ALNUM, 16), "env-assignment"),
    ("SESSION_SECRET='{s}'", chars(HEX, 64), "env-assignment"),
    ("  password: {s}\n", chars(ALNUM, 20), "env-assignment"),
    ('{{"x_token": "{s}"}}', chars(ALNUM, 30), "env-assignment"),
    ("app.secret_key = '{s}'", chars(ALNUM + "-_", 32), "env-assignment"),
    ("client_secret => '{s}'", chars(ALNUM, 32), "env-assignment"),
    ('apiKey: "{s}"', chars(ALNUM, 32), "env-assignment"),
    (
        '"auth": "{s}"',
        base64.b64encode(b"deploy:" + chars(ALNUM, 20).encode()).decode(),
        "env-assignment",
    ),
    ("aws_session_token={s}", "IQoJb3JpZ2luX2Vj" + chars(B64, 200), "env-assignment"),
    ("AWS_SECRET_ACCESS_KEY={s}", "/" + chars(B64, 39), "aws-secret-key"),
    ("GET /v1/me?access_token={s}&page=2", chars(ALNUM, 32), "env-assignment"),
    ("&X-Amz-SignedHeaders=host&X-Amz-Signature={s}", chars(HEX, 64), "env-assignment"),
    (
        "SECRET_KEY = '{s}'",
        "django-insecure-" + chars(ALNUM.lower(), 20) + "(w)=1a(=3&%jf*$8+m@" + chars(HEX, 10),
        "env-assignment",
    ),
    (
        "machine api.heroku.com\n  login me@x.io\n  password {s}\n",
        chars(ALNUM, 20),
        "env-assignment",
    ),
    ('{{"content": "API_TOKEN={s}\\nDEBUG=1\\n"}}', S.chars(ALNUM, 24), "env-assignment"),
    ('{{"cmd": "export GH_PASSWORD=\\"{s}\\""}}', S.chars(ALNUM, 24), "env-assignment"),
    ("machine github.com login octocat password {s}", chars(ALNUM, 20), "env-assignment"),
    (
        "$ gcloud auth print-access-token\n{s}\n",
        "ya29." + chars(URLSAFE, 150),
        "google-oauth-token",
    ),
]


@pytest.mark.parametrize(("template", "secret", "kind"), CASES)
def test_each_kind_is_replaced_by_its_exact_placeholder(
    template: str, secret: str, kind: str
) -> None:
    text = template.format(s=secret)
    out = R.redact(text)
    assert out.text == template.format(s=placeholder(kind, secret))
    assert [f.kind for f in out.findings] == [kind]
    f = out.findings[0]
    assert text[f.start : f.end] == secret


def test_placeholder_shows_the_last_four_characters() -> None:
    key = "AKIA" + chars(UPPER_DIGITS, 16)
    assert R.redact(key).text == f"[secret:aws-access-key …{key[-4:]}]"


@pytest.mark.parametrize(
    "label",
    [
        "RSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "DSA PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
    ],
)
def test_a_private_key_block_is_replaced_whole_without_last4(label: str) -> None:
    block = pem(label)
    text = f"$ cat key.pem\n{block}\n$ echo done\n"
    out = R.redact(text)
    assert out.text == "$ cat key.pem\n[secret:private-key]\n$ echo done\n"


def test_a_truncated_private_key_is_replaced_up_to_where_the_output_stops() -> None:
    lines = pem("RSA PRIVATE KEY").splitlines()[:6]
    text = "\n".join(lines) + "\n... (output truncated)\n"
    assert R.redact(text).text == "[secret:private-key]\n... (output truncated)\n"


def test_a_key_cut_mid_line_by_a_truncation_marker_leaves_no_fragment() -> None:
    lines = pem("PRIVATE KEY").splitlines()[:5]
    cut = "\n".join(lines)[:-20]
    text = f"<output_head>\n{cut}</output_head>\n<elided_chars>\n"
    assert (
        R.redact(text).text == "<output_head>\n[secret:private-key]</output_head>\n<elided_chars>\n"
    )
    escaped = cut.replace("\n", "\\n")
    assert R.redact(f'{{"key": "{escaped}"}}').text == '{"key": "[secret:private-key]"}'


def test_a_private_key_inside_a_json_string_is_replaced() -> None:
    block = pem("PRIVATE KEY").replace("\n", "\\n")
    text = '{"type": "service_account", "private_key": "' + block + '\\n", "x": 1}'
    out = R.redact(text)
    assert (
        out.text == '{"type": "service_account", "private_key": "[secret:private-key]\\n", "x": 1}'
    )


def test_a_header_mentioned_before_a_real_key_does_not_swallow_the_text_between() -> None:
    block = pem("RSA PRIVATE KEY")
    code = 'if line.startswith("-----BEGIN RSA PRIVATE KEY-----"):\n    kind = "rsa"\n'
    assert R.redact(f"{code}{block}\n").text == f"{code}[secret:private-key]\n"


def test_a_putty_key_file_is_replaced() -> None:
    body = "\n".join(chars(B64, 64) for _ in range(6))
    putty = (
        "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: deploy\n"
        f"Public-Lines: 6\n{body}\nPrivate-Lines: 6\n{body}\nPrivate-MAC: {chars(HEX, 40)}"
    )
    assert R.redact(f"{putty}\nok").text == "[secret:private-key]\nok"


def test_a_base64_wrapped_private_key_is_replaced() -> None:
    encoded = base64.b64encode((pem("RSA PRIVATE KEY") + "\n").encode()).decode()
    text = f"    client-key-data: {encoded}\n    token: x\n"
    assert R.redact(text).text == "    client-key-data: [secret:private-key]\n    token: x\n"


def test_a_header_without_key_material_is_not_a_key() -> None:
    text = 'if line.startswith("-----BEGIN RSA PRIVATE KEY-----"):\n    return True\n'
    assert not R.redact(text).changed


def test_a_url_keeps_its_scheme_user_host_and_path() -> None:
    pw = chars(ALNUM, 20)
    out = R.redact(f"https://deploy:{pw}@git.example.com:8443/org/repo.git?x=1")
    assert out.text == (
        f"https://deploy:[secret:url-password …{pw[-4:]}]@git.example.com:8443/org/repo.git?x=1"
    )


def test_a_vendor_token_in_an_assignment_is_named_by_its_vendor() -> None:
    token = "ghp_" + chars(ALNUM, 36)
    out = R.redact(f"GITHUB_TOKEN={token}")
    assert [(f.kind, f.rule) for f in out.findings] == [
        ("github-token", "detect-secrets:GitHubTokenDetector")
    ]


def test_a_token_url_keeps_the_user_and_names_the_token() -> None:
    token = "ghs_" + chars(ALNUM, 36)
    out = R.redact(f"origin\thttps://x-access-token:{token}@github.com/acme/api.git (fetch)")
    assert out.text == (
        f"origin\thttps://x-access-token:[secret:github-token …{token[-4:]}]"
        "@github.com/acme/api.git (fetch)"
    )


def test_several_secrets_are_all_replaced_in_order() -> None:
    a, b = "AKIA" + chars(UPPER_DIGITS, 16), chars(B64, 40)
    text = f"[default]\naws_access_key_id = {a}\naws_secret_access_key = {b}\n"
    out = R.redact(text)
    assert out.text == (
        f"[default]\naws_access_key_id = {placeholder('aws-access-key', a)}\n"
        f"aws_secret_access_key = {placeholder('aws-secret-key', b)}\n"
    )
    assert [f.start for f in out.findings] == sorted(f.start for f in out.findings)


def test_a_longer_token_than_the_plugin_pattern_is_replaced_to_its_end() -> None:
    key = "sk_live_" + chars(ALNUM, 99)  # detect-secrets' pattern stops after 24
    assert R.redact(f"{key}.").text == f"{placeholder('stripe-key', key)}."


def test_a_key_id_inside_a_longer_token_is_not_a_key_id() -> None:
    blob = chars(B64, 30) + "AKIA" + chars(UPPER_DIGITS, 16) + chars(B64, 30)
    assert not R.redact(blob.replace("AKIA", "xAKIA")).changed


@pytest.mark.parametrize("alphabet", [ALNUM, B64, URLSAFE, HEX])
def test_generated_values_in_secret_named_assignments_are_nearly_all_caught(
    alphabet: str,
) -> None:
    """The shape filters (names, paths, stand-ins) cost little recall on generated values:
    of 1,000 seeded 24-character values, at most 5 pass unredacted (about 0.1% expected)."""
    rng = Secrets(random.Random(len(alphabet)))
    missed = 0
    for n in range(1000):
        value = rng.chars(alphabet, 24)
        text = f"APP_{n}_SECRET={value}" if n % 2 else f'{{"client_secret": "{value}"}}'
        missed += value in R.redact(text).text
    assert missed <= 5
