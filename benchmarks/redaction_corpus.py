"""A canary corpus for the secret redactor: fake secrets of many formats inside realistic tool
outputs, plus decoys that must survive.

Every secret here is generated from a seeded ``random.Random`` (never a real key): the same
seed gives the same corpus byte for byte. A :class:`Sample` is one tool output — an ``env``
dump, a ``.env``/YAML/JSON/TOML config, a Python or Node stack trace printing a connection
string, a ``curl`` command with an ``Authorization`` header, a CI log, ``git remote -v`` with a
token URL, ``docker login``, ``cat ~/.aws/credentials``, a kubeconfig, an ``.npmrc``, an HTTP
request dump — with the :class:`Canary` secrets it holds and the decoys (commit hashes, UUIDs,
base64 of ordinary text, paths, colours, versions, placeholders) it also holds.

A canary is caught when its secret no longer occurs in the redacted text and the placeholder
of its expected kind does (``[secret:KIND …LAST4]``, or ``[secret:private-key]``). A decoy is
kept when it still occurs verbatim.

    python -m benchmarks.redaction_corpus          # print the corpus' size per format
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"
HEX = "0123456789abcdef"


@dataclass(frozen=True)
class Canary:
    """One fake secret: its format (what recall is reported by), the kind its placeholder must
    name, and the secret itself (the exact text that must disappear)."""

    format: str
    kind: str
    secret: str


@dataclass(frozen=True)
class Sample:
    """One realistic tool output holding canaries and decoys."""

    scenario: str
    text: str
    canaries: tuple[Canary, ...]
    decoys: tuple[str, ...] = ()


class Secrets:
    """Generators of fake secrets in each format, all drawn from one seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def chars(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def aws_access_key(self) -> Canary:
        prefix = self.rng.choice(["AKIA", "ASIA"])
        return Canary("aws-access-key", "aws-access-key", prefix + self.chars(UPPER_DIGITS, 16))

    def aws_secret_key(self) -> Canary:
        return Canary("aws-secret-key", "aws-secret-key", self.chars(B64, 40))

    def github_token(self) -> Canary:
        prefix = self.rng.choice(["ghp", "gho", "ghu", "ghs", "ghr"])
        return Canary("github-token", "github-token", f"{prefix}_{self.chars(ALNUM, 36)}")

    def github_pat(self) -> Canary:
        body = f"{self.chars(ALNUM, 22)}_{self.chars(ALNUM, 59)}"
        return Canary("github-fine-grained-pat", "github-token", f"github_pat_{body}")

    def gitlab_token(self) -> Canary:
        return Canary("gitlab-token", "gitlab-token", "glpat-" + self.chars(URLSAFE, 20))

    def openai_key(self) -> Canary:
        body = self.chars(URLSAFE, 74) + "T3BlbkFJ" + self.chars(URLSAFE, 74)
        return Canary("openai-project-key", "openai-key", "sk-proj-" + body)

    def openai_legacy(self) -> Canary:
        body = self.chars(ALNUM, 20) + "T3BlbkFJ" + self.chars(ALNUM, 20)
        return Canary("openai-legacy-key", "openai-key", "sk-" + body)

    def anthropic_key(self) -> Canary:
        body = self.chars(URLSAFE, 93) + "AA"
        return Canary("anthropic-key", "anthropic-key", "sk-ant-api03-" + body)

    def google_api_key(self) -> Canary:
        return Canary("google-api-key", "google-api-key", "AIza" + self.chars(URLSAFE, 35))

    def slack_token(self) -> Canary:
        prefix = self.rng.choice(["xoxb", "xoxp", "xoxa", "xoxr", "xoxs"])
        parts = [str(self.rng.randrange(10**10, 10**12)), str(self.rng.randrange(10**12, 10**13))]
        token = f"{prefix}-{parts[0]}-{parts[1]}-{self.chars(ALNUM, 24)}"
        return Canary("slack-token", "slack-token", token)

    def slack_webhook_path(self) -> Canary:
        path = f"T{self.chars(UPPER_DIGITS, 9)}/B{self.chars(UPPER_DIGITS, 9)}/"
        return Canary("slack-webhook", "slack-webhook", path + self.chars(ALNUM, 24))

    def stripe_key(self) -> Canary:
        prefix = self.rng.choice(["sk_live_", "rk_live_", "sk_test_"])
        return Canary("stripe-key", "stripe-key", prefix + self.chars(ALNUM, 99))

    def jwt(self) -> Canary:
        header = {"alg": self.rng.choice(["HS256", "RS256"]), "typ": "JWT"}
        payload = {
            "sub": str(uuid.UUID(int=self.rng.getrandbits(128))),
            "iat": self.rng.randrange(1_600_000_000, 1_800_000_000),
            "scope": self.rng.choice(["read", "read write", "admin"]),
        }

        def enc(obj: object) -> str:
            raw = json.dumps(obj, separators=(",", ":")).encode()
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")

        token = f"{enc(header)}.{enc(payload)}.{self.chars(URLSAFE, 43)}"
        return Canary("jwt", "jwt", token)

    def pem_key(self, label: str = "RSA PRIVATE KEY") -> Canary:
        lines = [self.chars(B64, 64) for _ in range(self.rng.randrange(8, 26))]
        lines.append(self.chars(B64, self.rng.randrange(8, 60)) + "==")
        block = f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"
        fmt = {"RSA PRIVATE KEY": "pem-private-key", "EC PRIVATE KEY": "pem-private-key"}
        return Canary(fmt.get(label, "pem-private-key"), "private-key", block)

    def openssh_key(self) -> Canary:
        lines = ["b3BlbnNzaC1rZXktdjEAAAAA" + self.chars(B64, 46)]
        lines += [self.chars(B64, 70) for _ in range(self.rng.randrange(4, 12))]
        lines.append(self.chars(B64, 30) + "=")
        label = "OPENSSH PRIVATE KEY"
        block = f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"
        return Canary("openssh-private-key", "private-key", block)

    def base64_pem(self) -> Canary:
        block = self.pem_key().secret + "\n"
        encoded = base64.b64encode(block.encode()).decode()
        return Canary("base64-pem-private-key", "private-key", encoded)

    def password(self) -> str:
        return self.chars(ALNUM, self.rng.randrange(14, 32))

    def url_password(self) -> Canary:
        return Canary("url-password", "url-password", self.password())

    def env_secret(self) -> Canary:
        alphabet = self.rng.choice([ALNUM, HEX, ALNUM + "-_", B64])
        return Canary("env-assignment", "env-assignment", self.chars(alphabet, 32))

    def bearer(self) -> Canary:
        return Canary("bearer-token", "bearer-token", self.chars(URLSAFE + ".", 40))

    def npm_token(self) -> Canary:
        return Canary("npm-token", "npm-token", "npm_" + self.chars(ALNUM, 36))

    def huggingface_token(self) -> Canary:
        return Canary("huggingface-token", "huggingface-token", "hf_" + self.chars(ALNUM[:52], 34))

    def pypi_token(self) -> Canary:
        return Canary("pypi-token", "pypi-token", "pypi-AgEIcHlwaS5vcmc" + self.chars(URLSAFE, 120))

    def sendgrid_key(self) -> Canary:
        key = f"SG.{self.chars(URLSAFE, 22)}.{self.chars(URLSAFE, 43)}"
        return Canary("sendgrid-key", "sendgrid-key", key)

    def azure_storage_key(self) -> Canary:
        return Canary("azure-storage-key", "azure-storage-key", self.chars(B64, 86) + "==")

    def google_oauth_token(self) -> Canary:
        token = "ya29." + self.chars(URLSAFE, self.rng.randrange(120, 200))
        return Canary("google-oauth-token", "google-oauth-token", token)

    def django_secret_key(self) -> Canary:
        alphabet = "abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)"
        key = "django-insecure-" + self.chars(alphabet, 50)
        return Canary("django-secret-key", "env-assignment", key)

    # decoys -----------------------------------------------------------------------------------

    def sha1(self) -> str:
        return self.chars(HEX, 40)

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128)))


Scenario = Callable[[Secrets], Sample]


def env_dump(s: Secrets) -> Sample:
    aws, aws_secret, gh, oa = (
        s.aws_access_key(),
        s.aws_secret_key(),
        s.github_token(),
        s.openai_key(),
    )
    sha = s.sha1()
    text = "\n".join(
        [
            "$ env | sort",
            f"AWS_ACCESS_KEY_ID={aws.secret}",
            "AWS_DEFAULT_REGION=eu-west-1",
            f"AWS_SECRET_ACCESS_KEY={aws_secret.secret}",
            f"GITHUB_SHA={sha}",
            f"GITHUB_TOKEN={gh.secret}",
            "HOME=/home/runner",
            "LANG=C.UTF-8",
            f"OPENAI_API_KEY={oa.secret}",
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "PYTHON_VERSION=3.11.7",
            "TERM=xterm-256color",
        ]
    )
    return Sample("env dump", text, (aws, aws_secret, gh, oa), (sha, "3.11.7", "/home/runner"))


def dotenv(s: Secrets) -> Sample:
    db, stripe, secret, sendgrid = (
        s.url_password(),
        s.stripe_key(),
        s.env_secret(),
        s.sendgrid_key(),
    )
    text = f"""$ cat .env
# local development settings
DEBUG=true
DATABASE_URL=postgres://app:{db.secret}@localhost:5432/app_dev
STRIPE_SECRET_KEY={stripe.secret}
export SESSION_SECRET="{secret.secret}"
SENDGRID_API_KEY='{sendgrid.secret}'
SMTP_PASSWORD=changeme
SENTRY_DSN=${{SENTRY_DSN}}
API_KEY=<your-api-key>
THEME_COLOR=#1a2b3c
"""
    decoys = ("SMTP_PASSWORD=changeme", "${SENTRY_DSN}", "<your-api-key>", "#1a2b3c")
    return Sample(".env file", text, (db, stripe, secret, sendgrid), decoys)


def yaml_config(s: Secrets) -> Sample:
    password, token, google = s.env_secret(), s.slack_token(), s.google_api_key()
    build = s.uuid()
    text = f"""$ cat config/settings.yaml
app:
  name: billing-service
  version: 2.4.1
  build_id: {build}
database:
  host: db.internal
  user: billing
  password: {password.secret}
notifications:
  slack_token: "{token.secret}"
maps:
  api_key: {google.secret}
  client_secret: "***"
"""
    return Sample("YAML config", text, (password, token, google), (build, "2.4.1", '"***"'))


def json_config(s: Secrets) -> Sample:
    access, anthropic, hf = s.env_secret(), s.anthropic_key(), s.huggingface_token()
    commit = s.sha1()
    config = {
        "service": "summarizer",
        "commit": commit,
        "auth": {"client_id": "summarizer-prod", "access_token": access.secret},
        "llm": {"provider": "anthropic", "api_key": anthropic.secret, "model": "claude-3"},
        "hub": {"hf_token": hf.secret, "cache_dir": "/var/cache/hf"},
        "password": "",
    }
    text = "$ cat config.json\n" + json.dumps(config, indent=2)
    return Sample("JSON config", text, (access, anthropic, hf), (commit, "/var/cache/hf"))


def python_traceback(s: Secrets) -> Sample:
    pw = s.url_password()
    text = f"""Traceback (most recent call last):
  File "/app/worker.py", line 42, in <module>
    engine = create_engine(settings.DATABASE_URL)
  File "/usr/lib/python3.11/site-packages/sqlalchemy/engine/create.py", line 552, in create_engine
    raise exc.ArgumentError(
sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) could not connect to server
(Background on this error at: https://sqlalche.me/e/20/e3q8)
[SQL: connect postgresql+psycopg2://worker:{pw.secret}@db-primary.internal:5432/jobs]
"""
    return Sample("Python stack trace", text, (pw,), ("https://sqlalche.me/e/20/e3q8",))


def node_trace(s: Secrets) -> Sample:
    mongo, redis = s.url_password(), s.url_password()
    text = f"""node:internal/process/promises:288
            triggerUncaughtException(err, true /* fromPromise */);
            ^

MongoServerSelectionError: connection <monitor> to 10.0.3.7:27017 closed
    at Timeout._onTimeout (/srv/api/node_modules/mongodb/lib/sdam/topology.js:278:38)
  uri: 'mongodb+srv://api-user:{mongo.secret}@cluster0.ab12c.mongodb.net/prod?retryWrites=true',
  cache: 'redis://:{redis.secret}@cache.internal:6379/0'

Node.js v20.11.0
"""
    return Sample("Node stack trace", text, (mongo, redis), ("v20.11.0",))


def curl_command(s: Secrets) -> Sample:
    bearer, jwt = s.bearer(), s.jwt()
    text = f"""$ curl -sS -H 'Authorization: Bearer {bearer.secret}' https://api.example.com/v1/items
{{"items": [], "next": null}}
$ curl -H "Authorization: Bearer {jwt.secret}" -H 'Accept: application/json' https://auth.example.com/me
{{"user": "dev", "roles": ["reader"]}}
$ curl -H "Authorization: Bearer $API_TOKEN" https://api.example.com/v1/ping
pong
"""
    return Sample("curl with Authorization", text, (bearer, jwt), ("Bearer $API_TOKEN",))


def ci_log(s: Secrets) -> Sample:
    npm, pypi, glab = s.npm_token(), s.pypi_token(), s.gitlab_token()
    sha = s.sha1()
    text = f"""Running with gitlab-runner 16.8.0 (c72a09b6)
$ git checkout -f -q {sha}
$ echo "//registry.npmjs.org/:_authToken={npm.secret}" > ~/.npmrc
$ twine upload --username __token__ --password {pypi.secret} dist/*
Uploading distributions to https://upload.pypi.org/legacy/
Uploading veil-0.1.0-py3-none-any.whl
100% ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 52.1/52.1 kB • 00:00
$ git push https://oauth2:{glab.secret}@gitlab.com/acme/infra.git HEAD:main
Job succeeded
"""
    return Sample("CI log", text, (npm, pypi, glab), (sha, "16.8.0", "veil-0.1.0-py3-none-any.whl"))


def git_remote(s: Secrets) -> Sample:
    gh, pat = s.github_token(), s.github_pat()
    text = f"""$ git remote -v
origin\thttps://x-access-token:{gh.secret}@github.com/acme/api.git (fetch)
origin\thttps://x-access-token:{gh.secret}@github.com/acme/api.git (push)
upstream\thttps://{pat.secret}@github.com/upstream/api.git (fetch)
upstream\thttps://{pat.secret}@github.com/upstream/api.git (push)
mirror\tgit@github.com:acme/api-mirror.git (fetch)
"""
    return Sample("git remote -v", text, (gh, pat), ("git@github.com:acme/api-mirror.git",))


def docker_login(s: Secrets) -> Sample:
    pw, cfg = s.env_secret(), s.env_secret()
    auth = base64.b64encode(f"deploy:{cfg.secret}".encode()).decode()
    cfg_canary = Canary("docker-config-auth", "env-assignment", auth)
    pw_canary = Canary("docker-login-password", "cli-secret", pw.secret)
    text = f"""$ docker login -u deploy -p {pw.secret} registry.example.com
WARNING! Using --password via the CLI is insecure. Use --password-stdin.
WARNING! Your password will be stored unencrypted in /root/.docker/config.json.
Configure a credential helper to remove this warning. See
https://docs.docker.com/engine/reference/commandline/login/#credentials-store

Login Succeeded
$ cat /root/.docker/config.json
{{
\t"auths": {{
\t\t"registry.example.com": {{
\t\t\t"auth": "{auth}"
\t\t}}
\t}}
}}
"""
    return Sample("docker login", text, (pw_canary, cfg_canary), ("/root/.docker/config.json",))


def aws_credentials(s: Secrets) -> Sample:
    k1, s1, k2, s2 = s.aws_access_key(), s.aws_secret_key(), s.aws_access_key(), s.aws_secret_key()
    session = Canary("aws-session-token", "env-assignment", "IQoJb3JpZ2luX2Vj" + s.chars(B64, 300))
    text = f"""$ cat ~/.aws/credentials
[default]
aws_access_key_id = {k1.secret}
aws_secret_access_key = {s1.secret}

[staging]
aws_access_key_id={k2.secret}
aws_secret_access_key={s2.secret}
aws_session_token={session.secret}

[docs-example]
aws_access_key_id = AKIAIOSFODNN7EXAMPLE
aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY
"""
    decoys = ("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    return Sample("~/.aws/credentials", text, (k1, s1, k2, s2, session), decoys)


def kubeconfig(s: Secrets) -> Sample:
    token, key = s.jwt(), s.base64_pem()
    cert = base64.b64encode(
        b"-----BEGIN CERTIFICATE-----\n"
        b"MIIC/zCCAeegAwIBAgIBADANBgkqhkiG9w0BAQsFADAVMRMwEQYDVQQDEwprdWJl\n"
        b"-----END CERTIFICATE-----\n"
    ).decode()
    text = f"""$ kubectl config view --raw
apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: {cert}
    server: https://10.0.0.1:6443
  name: prod
contexts:
- context:
    cluster: prod
    user: deployer
  name: prod
current-context: prod
kind: Config
users:
- name: deployer
  user:
    client-key-data: {key.secret}
    token: {token.secret}
"""
    return Sample("kubeconfig", text, (token, key), (cert,))


def private_keys(s: Secrets) -> Sample:
    rsa, ssh = s.pem_key(), s.openssh_key()
    text = f"""$ cat deploy/id_rsa
{rsa.secret}
$ cat ~/.ssh/id_ed25519
{ssh.secret}
$ cat ~/.ssh/id_ed25519.pub
ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGJ0b2tlbnNhcmVub3RrZXlz deploy@ci
"""
    return Sample("private key files", text, (rsa, ssh), ("deploy@ci",))


def truncated_key(s: Secrets) -> Sample:
    ec = s.pem_key("EC PRIVATE KEY")
    lines = ec.secret.splitlines()
    cut = "\n".join(lines[: max(3, len(lines) // 2)])
    canary = Canary("pem-private-key", "private-key", cut)
    text = f"""<returncode>0</returncode>
<output>
{cut}
</output>
"""
    return Sample("truncated key output", text, (canary,))


def python_repl(s: Secrets) -> Sample:
    legacy, azure, webhook = s.openai_legacy(), s.azure_storage_key(), s.slack_webhook_path()
    text = f""">>> import os
>>> os.environ["OPENAI_API_KEY"]
'{legacy.secret}'
>>> conn = "DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={azure.secret};"
... "EndpointSuffix=core.windows.net"
>>> requests.post("https://hooks.slack.com/services/{webhook.secret}", json={{"text": "deployed"}})
<Response [200]>
>>> hashlib.sha256(b"hello").hexdigest()
'2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824'
"""
    decoys = ("2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",)
    return Sample("Python REPL", text, (legacy, azure, webhook), decoys)


def toml_and_code(s: Secrets) -> Sample:
    stripe, pw = s.stripe_key(), s.env_secret()
    text = f"""$ cat pyproject.toml settings.py
[tool.poetry]
version = "1.4.0"
[tool.deploy]
stripe_key = "{stripe.secret}"

# settings.py
SECRET_KEY = os.environ["SECRET_KEY"]
DB_PASSWORD = "{pw.secret}"
password = request.POST.get("password")
api_key = settings.API_KEY
token = self._token
"""
    decoys = ('os.environ["SECRET_KEY"]', 'request.POST.get("password")', "settings.API_KEY")
    return Sample("TOML and settings.py", text, (stripe, pw), decoys)


def http_dump(s: Secrets) -> Sample:
    google, bearer = s.google_api_key(), s.bearer()
    b64 = base64.b64encode(b"The quick brown fox jumps over the lazy dog").decode()
    text = f"""> GET /maps/api/geocode/json?address=Berlin&key={google.secret} HTTP/1.1
> Host: maps.googleapis.com
> authorization: Bearer {bearer.secret}
> X-Request-Id: {s.uuid()}
< HTTP/1.1 200 OK
< Content-Type: application/json; charset=UTF-8
< ETag: "{s.sha1()}"
{{"payload": "{b64}"}}
"""
    return Sample("HTTP request dump", text, (google, bearer), (b64,))


def netrc_and_gcloud(s: Secrets) -> Sample:
    pw = Canary("netrc-password", "env-assignment", s.password())
    gh, oauth = s.github_token(), s.google_oauth_token()
    text = f"""$ cat ~/.netrc
machine api.heroku.com
  login deploy@example.com
  password {pw.secret}
machine github.com login octocat password {gh.secret}
$ gcloud auth print-access-token
{oauth.secret}
$ gcloud config list
[core]
account = deploy@example.com
project = acme-prod-{s.rng.randrange(100000, 999999)}
"""
    return Sample(".netrc and gcloud", text, (pw, gh, oauth), ("deploy@example.com",))


def presigned_url(s: Secrets) -> Sample:
    key = s.aws_access_key()
    signature = Canary("presigned-url-signature", "env-assignment", s.chars(HEX, 64))
    date = f"2024{s.rng.randrange(1, 13):02d}{s.rng.randrange(1, 29):02d}"
    text = f"""$ aws s3 presign s3://acme-reports/q3.csv --expires-in 3600
https://acme-reports.s3.eu-west-1.amazonaws.com/q3.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256\
&X-Amz-Credential={key.secret}%2F{date}%2Feu-west-1%2Fs3%2Faws4_request&X-Amz-Date={date}T101500Z\
&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={signature.secret}
"""
    return Sample("S3 presigned URL", text, (key, signature), ("X-Amz-Expires=3600",))


def django_settings(s: Secrets) -> Sample:
    key = s.django_secret_key()
    text = f"""$ sed -n 1,12p mysite/settings.py
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

# SECURITY WARNING: keep the secret key used in production secret!
SECRET_KEY = '{key.secret}'

# SECURITY WARNING: don't run with debug turned on in production!
DEBUG = True

ALLOWED_HOSTS = []
"""
    return Sample("Django settings", text, (key,), ("BASE_DIR = Path(__file__)",))


SCENARIOS: tuple[Scenario, ...] = (
    env_dump,
    dotenv,
    yaml_config,
    json_config,
    python_traceback,
    node_trace,
    curl_command,
    ci_log,
    git_remote,
    docker_login,
    aws_credentials,
    kubeconfig,
    private_keys,
    truncated_key,
    python_repl,
    toml_and_code,
    http_dump,
    netrc_and_gcloud,
    presigned_url,
    django_settings,
)


def corpus(seed: int = 0, rounds: int = 3) -> list[Sample]:
    """``rounds`` samples of every scenario, deterministic for a seed."""
    secrets = Secrets(random.Random(seed))
    return [scenario(secrets) for _ in range(rounds) for scenario in SCENARIOS]


def print_sizes() -> None:
    samples = corpus()
    formats = Counter(c.format for s in samples for c in s.canaries)
    print(f"{len(samples)} samples, {sum(formats.values())} secrets, {len(formats)} formats")
    for fmt, n in sorted(formats.items()):
        print(f"  {fmt}: {n}")


if __name__ == "__main__":
    print_sizes()
