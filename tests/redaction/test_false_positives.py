"""What must never be redacted: the shapes tool outputs are full of that only look like secrets.

Hashes and commit ids, UUIDs, base64 of ordinary content, paths, colours, versions, code that
names a secret without holding one, templates, masks, documentation stand-ins and test-fixture
words. Each case is a realistic line; the property tests embed generated hashes, UUIDs,
versions and base64 of text in sentences and assignments.
"""

from __future__ import annotations

import base64
import hashlib
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veil.redaction import Redactor

R = Redactor()

BENIGN = [
    # hashes, ids
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nAuthor: Jane <jane@example.com>",
    "9fceb02 (HEAD -> main, origin/main) fix: handle empty input",
    "index 83db48f..bf269f4 100644\n--- a/src/app.py\n+++ b/src/app.py",
    "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
    "Successfully built 3f2a9b1c4d5e",
    "request_id=123e4567-e89b-12d3-a456-426614174000 status=200",
    'ETag: "33a64df551425fcc55e4d42a148795d9f25f89d4"',
    "GITHUB_SHA=e83c5163316f89bfbd7d9ab23ca2e25604af2901",
    "integrity sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUR",
    # base64 of ordinary content, session cookies, data URLs
    "payload: VGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVyIHRoZSBsYXp5IGRvZw==",
    "Set-Cookie: session=eyJ0ZXN0aW5nIjo0Mn0.aR0RxQ.4kHl_pEqM6QGbhK0Ah1Dr7mAR1E; Path=/",
    'src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"',
    # paths, colours, versions
    "SSL_KEY_FILE=/etc/ssl/private/server.key",
    "GOOGLE_APPLICATION_CREDENTIALS=/home/me/.config/gcloud/app_default_credentials.json",
    "private_key_path: ./certs/id_rsa_2048.pem",
    "SSL_CERT_KEY=/etc/ssl/certs/ca-2023-10-01.pem",
    "token_file = C:\\keys\\token_v2.json",
    "auth: user%40name:pass%40word",
    "color: #1a2b3c; background: #FFF",
    "Successfully installed requests-2.31.0 urllib3-2.0.7 certifi-2023.7.22",
    "TOKENIZERS_VERSION=0.15.2-rc1",
    "Python 3.11.7 (main, Dec  8 2023, 18:56:58) [GCC 11.4.0] on linux",
    # code that names a secret without holding one
    "password = request.POST.get('password')",
    "token = self._token",
    "SECRET_KEY = settings.SECRET_KEY",
    "api_key = os.environ['OPENAI_API_KEY']",
    'headers["Authorization"] = f"Bearer {token}"',
    "r.headers['Authorization'] = _basic_auth_str(self.username, self.password)",
    "def authenticate(self, request, username=None, password=None, **kwargs):",
    "    password = forms.CharField(label=_('Password'), strip=False)",
    "        csrf_token = context.get('csrf_token')",
    "pad_token = '<pad>'\neos_token: </s>\nmax_tokens = 4096",
    "cache_key = 'user:42:profile:v2'",
    "primary_key=True, sort_key = 'created_at'",
    "key = 'abc123def456'",
    "password_hash = make_password(raw_password)",
    "        hosted_key: HostedMCPApprovalKey = (",
    "    def sign(self, private_key: PKCS7PrivateKeyTypes, hash_algorithm: Hash) -> bytes:",
    "        private_key: Ed25519PrivateKey | Ed448PrivateKey",
    "MLKEM768X25519PrivateKey = rust_openssl.hpke.MLKEM768X25519PrivateKey",
    "                credentials=s3_credentials or None,",
    "        self._trusted_s3_mount_credentials = trusted_s3_mount_credentials",
    "exports.SOCKS5_NO_ACCEPTABLE_AUTH = exports.SOCKS5_CUSTOM_AUTH_END = 0xff;",
    "        'price_key': 'cache_write_5m_mtok',",
    'CURVE_TYPE_LIB_KEY = "com.github.googlei18n.cu2qu.curve_type"',
    'processorArchitecture="*" publicKeyToken="1fc8b3b9a1e18e3b"',
    "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag.",
    "Headers: {'Proxy-Authorization': 'Basic dXNlcjpwYXNz'}",
    "  auth: 'aXNhYWNzOm5vdCBteSByZWFsIHBhc3N3b3Jk',",
    "//somewhere-else.com/myorg/:_authToken=MYTOKEN1",
    "    model = Model(password='IAmSensitive', password_bytes=b'IAmSensitive')",
    # templates, masks, stand-ins, fixture words
    "DB_PASSWORD=changeme",
    "API_KEY=xxx",
    "API_KEY=xxxxxxxxxxxxxxxxxxxxxxxx",
    "OPENAI_API_KEY=sk-...",
    "password: ${DB_PASSWORD}",
    "token: {{ secrets.GITHUB_TOKEN }}",
    "SECRET_KEY=<your-secret-key>",
    "password = '%(password)s'",
    "AWS_SECRET_ACCESS_KEY=********",
    "API_TOKEN=",
    "PASSWORD=hunter2",
    "password='secret'",
    "PASSWORD = 'password123'",
    "SECRET_KEY = 'django_tests_secret_key'",
    "SECRET_KEY = 'a-very-secret-key'",
    "SECRET_KEY='fake-key-for-testing'",
    "secret_key = 'your_secret_key_here'",
    "user.set_password('testpassword1')",
    "login(username='admin', password='admin123')",
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "export OPENAI_API_KEY=sk-proj-REDACTED",
    "token: ghp_1234567890abcdefghijklmnopqrstuvwxyzAB",
    # URLs without a real password
    "http://user:pass@example.com/path",
    "postgres://postgres:postgres@localhost:5432/test",
    "DATABASE_URL=postgres://app:${DB_PASSWORD}@db/app",
    "https://github.com/pydata/xarray/pull/4629#issuecomment-123",
    "git@github.com:org/repo.git",
    "mailto:someone@example.com",
    # plain prose and tables
    "The secret to fast tests: keep fixtures small. Pass --token to the CLI.",
    "| key | value |\n| token | 3 |\n| password | (hidden) |",
    "Authorization: Bearer $API_TOKEN",
    "Authorization: Bearer <token>",
]


@pytest.mark.parametrize("text", BENIGN)
def test_benign_shapes_are_left_alone(text: str) -> None:
    out = R.redact(text)
    assert out.text == text, out.findings


words = st.sampled_from(["the", "build", "commit", "id", "version", "at", "hash", "ok", "->"])
hex_ids = st.binary(min_size=8, max_size=32).map(lambda b: hashlib.sha1(b).hexdigest())
sha256s = st.binary(min_size=1, max_size=32).map(lambda b: hashlib.sha256(b).hexdigest())
uuids = st.integers(0, 2**128 - 1).map(lambda n: str(uuid.UUID(int=n)))
versions = st.lists(st.integers(0, 300), min_size=2, max_size=4).map(
    lambda xs: ".".join(map(str, xs))
)
prose_b64 = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ,.", min_size=8, max_size=60).map(
    lambda s: base64.b64encode(s.encode()).decode()
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(words, hex_ids, sha256s, uuids, versions, prose_b64), max_size=12))
def test_hashes_uuids_versions_and_base64_of_text_in_prose_are_left_alone(parts: list[str]) -> None:
    text = " ".join(parts)
    assert R.redact(text).text == text


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["commit", "sha", "revision", "build_id", "request_id", "version", "etag"]),
    st.one_of(hex_ids, uuids, versions),
)
def test_ids_under_names_that_are_not_secret_names_are_left_alone(name: str, value: str) -> None:
    for text in (f"{name}={value}", f"{name}: {value}", f'"{name}": "{value}"'):
        assert R.redact(text).text == text
