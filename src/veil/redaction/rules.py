"""The built-in rules: which secrets are found, where each one starts and ends, and how cheaply.

Two sources. The token shapes that detect-secrets (Yelp) maintains — AWS key ids, GitHub and
GitLab tokens, OpenAI's legacy keys, Slack tokens and webhooks, Stripe live keys, JWTs, private
key headers, passwords in URLs, Azure storage keys, PyPI, SendGrid and Square tokens — are its
plugins' own ``denylist`` patterns, read from the installed package when a rule first needs
them (``detect-secrets:<Plugin>`` in a finding). Veil's own rules (``veil:<name>``) cover what
those patterns do not: the formats detect-secrets lacks (``sk-proj-``/``sk-ant-`` keys,
Google API keys and OAuth tokens, ``github_pat_``, Stripe test keys, npm and Hugging Face
tokens, ``ENCRYPTED`` and base64-wrapped PEM keys, Redis-style ``://:password@`` URLs,
``Authorization`` headers, ``--password`` flags, ``.netrc`` passwords, secret-named
assignments) and the extent of a match where a plugin's pattern only marks a secret's start
(a PEM block's body, a JWT's signature, a Stripe key's tail).

Why not import detect-secrets up front: importing any of its plugins imports its whole core
and ``requests`` (0.3–0.5 s on the reference machine), far too much for a hook process.
So every rule has a cheap trigger — a small regex of Veil's own that starts with a literal
(``A(?:KIA|SIA|…)``, ``gh[pousr]_``, ``hf_``), so the regex engine scans for it at
substring-search speed — and detect-secrets is imported only when the trigger of one of its
rules hits, i.e. when a text very likely holds such a token. A text no trigger hits (nearly
every tool output) costs one scan per rule and nothing else.

A rule yields ``(start, end)`` spans of the secret part only (the variable name, the URL's
user and host, the header name stay). Every candidate then passes a plausibility check of
:mod:`veil.redaction.shapes` so documentation stand-ins and code are left alone.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .assignments import assignments
from .extents import base64_pem, jwt_finder, pem_finder
from .findings import BuiltinKind
from .plugins import from_detect_secrets
from .scan import ALNUM, TOKEN, WORD, Finder, free_value, own, regex_finder
from .shapes import looks_secret

PRIORITY_USER, PRIORITY_TOKEN, PRIORITY_CONTEXT, PRIORITY_ASSIGNMENT = -1, 0, 1, 2
"""Overlapping candidates: the lower priority wins (a user's rule, then a vendor token's
specific kind, then a URL password or header, then a generic secret-named assignment)."""


@dataclass(frozen=True)
class Rule:
    """One way of finding secrets.

    ``trigger``: cheap searches (each starting with a literal) one of which must hit, in the
    lower-cased text when ``fold``, before ``find`` runs — every match of the rule contains a
    match of one of them; ``()`` means always run. ``gate``: a second search, in the text
    as it is, that must also hit. ``last4``: whether the placeholder shows the secret's last
    four characters.
    """

    kind: str
    name: str
    priority: int
    find: Finder
    trigger: tuple[re.Pattern[str], ...] = ()
    fold: bool = False
    gate: re.Pattern[str] | None = None
    last4: bool = True


# ---- the table ---------------------------------------------------------------------------------


def _not_hex(secret: str, whole: str) -> bool:
    return not re.fullmatch(r"[0-9a-fA-F]+", secret) and looks_secret(secret)


def _url_password(secret: str, whole: str) -> bool:
    """A URL's password unless it is a stand-in or the user name again (``postgres:postgres``)."""
    user = whole[3 : whole.find(":", 3)] if whole.startswith("://") else ""
    return secret != user and looks_secret(secret)


def _tail(chars: str) -> re.Pattern[str]:
    return re.compile(f"[{chars}]*")


def _rule(
    kind: BuiltinKind,
    name: str,
    find: Finder,
    trigger: str | tuple[str, ...] | None,
    *,
    priority: int = PRIORITY_TOKEN,
    fold: bool = False,
    gate: str | None = None,
    last4: bool = True,
) -> Rule:
    return Rule(
        kind=kind,
        name=name,
        priority=priority,
        find=find,
        trigger=tuple(
            re.compile(t) for t in ((trigger,) if isinstance(trigger, str) else trigger or ())
        ),
        fold=fold,
        gate=re.compile(gate) if gate else None,
        last4=last4,
    )


@functools.cache
def builtin_rules() -> tuple[Rule, ...]:
    """Every built-in rule, compiled on the first call (``import veil.redaction`` compiles
    nothing). detect-secrets' patterns are still only loaded when a trigger hits."""
    ds = from_detect_secrets
    token = _tail("A-Za-z0-9_")
    return (
        # private keys: detect-secrets' header markers; Veil's extent (the whole block)
        _rule(
            "private-key",
            "detect-secrets:PrivateKeyDetector",
            pem_finder(ds("private_key", "PrivateKeyDetector")),
            ("PRIVATE KEY", "PuTTY-User-Key-File-2"),
            last4=False,
        ),
        _rule(
            "private-key",
            "veil:pem-block",
            pem_finder(own(r"BEGIN ENCRYPTED PRIVATE KEY|PuTTY-User-Key-File-3")),
            ("ENCRYPTED PRIVATE KEY", "PuTTY-User-Key-File-3"),
            last4=False,
        ),
        _rule("private-key", "veil:base64-pem", base64_pem, "LS0tLS1CRUdJTi", last4=False),
        # AWS
        _rule(
            "aws-access-key",
            "detect-secrets:AWSKeyDetector",
            regex_finder(ds("aws", "AWSKeyDetector", 0), not_after=ALNUM, not_before=ALNUM),
            "A(?:KIA|SIA|BIA|CCA|3T)",
        ),
        _rule(
            "aws-secret-key",
            "detect-secrets:AWSKeyDetector",
            regex_finder(ds("aws", "AWSKeyDetector", 1), group=1, check=_not_hex),
            "aws",
            fold=True,
            gate=r"[\"'][0-9a-zA-Z/+]{40}[\"']",
        ),
        _rule(
            "aws-secret-key",
            "veil:aws-secret-key",
            regex_finder(
                own(
                    r"(?:aws_?secret_?key|secret_?access_?key)[\"']?[ \t]*"
                    r"(?:=>|[:=])[ \t]*[\"']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
                    re.IGNORECASE,
                ),
                group="secret",
                check=_not_hex,
            ),
            ("secret_access_key", "secretaccesskey", "aws_secret_key", "awssecretkey"),
            fold=True,
        ),
        # GitHub, GitLab
        _rule(
            "github-token",
            "detect-secrets:GitHubTokenDetector",
            regex_finder(ds("github_token", "GitHubTokenDetector"), not_after=ALNUM, tail=token),
            "gh[pousr]_",
        ),
        _rule(
            "github-token",
            "veil:github-pat",
            regex_finder(own(r"github_pat_[A-Za-z0-9_]{40,}"), not_after=ALNUM),
            "github_pat_",
        ),
        _rule(
            "gitlab-token",
            "detect-secrets:GitLabTokenDetector",
            regex_finder(ds("gitlab_token", "GitLabTokenDetector"), not_after=ALNUM),
            (r"gl(?:pat|dt|ft|soat|rt|cbt|imt|ptt|agent|oas)-", "GR1348941"),
        ),
        # model vendors
        _rule(
            "anthropic-key",
            "veil:anthropic",
            regex_finder(own(r"sk-ant-[A-Za-z0-9_-]{20,}"), not_after=TOKEN),
            "sk-ant-",
        ),
        _rule(
            "openai-key",
            "detect-secrets:OpenAIDetector",
            regex_finder(
                ds("openai", "OpenAIDetector"), not_after=TOKEN, tail=_tail("A-Za-z0-9_-")
            ),
            "T3BlbkFJ",
        ),
        _rule(
            "openai-key",
            "veil:openai",
            regex_finder(
                own(r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{32,})"),
                not_after=TOKEN,
                not_before=TOKEN,
            ),
            "sk-",
        ),
        _rule(
            "google-api-key",
            "veil:google-api-key",
            regex_finder(own(r"AIza[0-9A-Za-z_-]{35}"), not_after=TOKEN, not_before=TOKEN),
            "AIza",
        ),
        _rule(
            "google-oauth-token",
            "veil:google-oauth",
            regex_finder(own(r"ya29\.[0-9A-Za-z_-]{20,}"), not_after=TOKEN, not_before=TOKEN),
            r"ya29\.",
        ),
        _rule(
            "huggingface-token",
            "veil:huggingface",
            regex_finder(own(r"hf_[A-Za-z]{34}"), not_after=TOKEN, not_before=TOKEN),
            "hf_",
        ),
        # Slack
        _rule(
            "slack-token",
            "detect-secrets:SlackDetector",
            regex_finder(
                ds("slack", "SlackDetector", 0), not_after=ALNUM, tail=_tail("A-Za-z0-9-")
            ),
            "xox[aposbr]-",
            fold=True,
        ),
        _rule(
            "slack-token",
            "veil:slack-app",
            regex_finder(
                own(r"(?:xapp|xoxe(?:\.xox[a-z])?)-\d-[A-Za-z0-9-]{20,}"), not_after=ALNUM
            ),
            ("xapp-", "xoxe"),
        ),
        _rule(
            "slack-webhook",
            "detect-secrets:SlackDetector",
            regex_finder(ds("slack", "SlackDetector", 1), keep_after="/services/", tail=token),
            r"hooks\.slack\.com/services/",
            fold=True,
        ),
        # payments, mail, package registries, clouds
        _rule(
            "stripe-key",
            "detect-secrets:StripeDetector",
            regex_finder(ds("stripe", "StripeDetector"), not_after=ALNUM, tail=_tail("0-9a-zA-Z")),
            "k_live_",
        ),
        _rule(
            "stripe-key",
            "veil:stripe",
            regex_finder(
                own(r"(?:[rs]k_test_[0-9a-zA-Z]{24,}|whsec_[A-Za-z0-9]{32,})"),
                not_after=ALNUM,
                not_before=WORD,
            ),
            ("k_test_", "whsec_"),
        ),
        _rule(
            "azure-storage-key",
            "detect-secrets:AzureStorageKeyDetector",
            regex_finder(ds("azure_storage_key", "AzureStorageKeyDetector"), keep_after="="),
            "AccountKey=",
        ),
        _rule(
            "pypi-token",
            "detect-secrets:PypiTokenDetector",
            regex_finder(ds("pypi_token", "PypiTokenDetector"), not_after=ALNUM),
            "pypi-AgE",
        ),
        _rule(
            "npm-token",
            "veil:npm",
            regex_finder(own(r"npm_[A-Za-z0-9]{36}"), not_after=TOKEN, not_before=TOKEN),
            "npm_",
        ),
        _rule(
            "sendgrid-key",
            "detect-secrets:SendGridDetector",
            regex_finder(ds("sendgrid", "SendGridDetector"), not_after=ALNUM, not_before=TOKEN),
            r"SG\.[\w-]{22}\.",
        ),
        _rule(
            "square-token",
            "detect-secrets:SquareOAuthDetector",
            regex_finder(ds("square_oauth", "SquareOAuthDetector"), not_after=ALNUM),
            "sq0csp-",
        ),
        _rule(
            "jwt",
            "detect-secrets:JwtTokenDetector",
            jwt_finder,
            r"eyJ[A-Za-z0-9_-]{8,}=*\.[A-Za-z0-9_-]{8,}",
        ),
        # context: URLs, headers, flags
        _rule(
            "url-password",
            "detect-secrets:BasicAuthDetector",
            regex_finder(ds("basic_auth", "BasicAuthDetector"), group=1, check=_url_password),
            r"://[^\s/@:]*:[^\s/@]+@",
            priority=PRIORITY_CONTEXT,
        ),
        _rule(
            "url-password",
            "veil:url-empty-user",
            regex_finder(own(r"://:(?P<secret>[^\s/@:]+)@"), group="secret", check=free_value),
            "://:",
            priority=PRIORITY_CONTEXT,
        ),
        _rule(
            "bearer-token",
            "veil:authorization",
            regex_finder(
                own(
                    r"(?:authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
                    r"(?:(?:bearer|token|basic|digest|apikey)[ \t]+)?|\bbearer[ \t]+)"
                    r"(?P<secret>[A-Za-z0-9._~+/-]{12,}=*)",
                    re.IGNORECASE,
                ),
                group="secret",
                not_before=frozenset("$[{<%"),
                check=free_value,
            ),
            ("authorization", "bearer"),
            priority=PRIORITY_CONTEXT,
            fold=True,
        ),
        _rule(
            "cli-secret",
            "veil:cli-flag",
            regex_finder(
                own(
                    r"(?:(?<![\w-])--(?:password|passwd|token|api-key|apikey|secret|"
                    r"client-secret|access-token|auth-token)(?:=|[ \t]+)|"
                    r"\bdocker[ \t]+login\b[^\n]*?[ \t]-p[ \t]*)"
                    r"[\"']?(?P<secret>[^\s\"']+)"
                ),
                group="secret",
                check=free_value,
            ),
            (
                r"--(?:pass|token|api|secret|client-secret|access-token|auth-token)",
                r"docker[ \t]+login",
            ),
            priority=PRIORITY_CONTEXT,
        ),
        _rule(
            "env-assignment",
            "veil:netrc",
            regex_finder(
                own(
                    r"\bmachine[ \t]+\S+(?:[ \t\n]+login[ \t]+\S+)?[ \t\n]+password[ \t]+"
                    r"(?P<secret>[^\s\"']+)"
                ),
                group="secret",
                check=free_value,
            ),
            "machine",
            priority=PRIORITY_CONTEXT,
        ),
        _rule(
            "env-assignment",
            "veil:assignment",
            assignments,
            None,
            priority=PRIORITY_ASSIGNMENT,
            fold=True,
        ),
    )


def user_rule(n: int, kind: str, pattern: re.Pattern[str]) -> Rule:
    """The n-th extra pattern of a configuration: every non-empty match, or its ``secret``
    group, is a secret of ``kind``; no plausibility check (the user asked for exactly this)."""
    group: int | str = "secret" if "secret" in pattern.groupindex else 0
    return Rule(
        kind=kind,
        name=f"user:{n}",
        priority=PRIORITY_USER,
        find=regex_finder(lambda: (pattern,), group=group, check=lambda _s, _w: True),
    )
