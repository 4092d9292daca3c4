"""``veil serve`` as a person runs it (issue 28, F): the real command on 127.0.0.1, requests
over HTTP, and what it says — an access-log line per request on stderr, and a 4xx naming what
was wrong with a body that is not a JSON object sent as JSON."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

VEIL = [sys.executable, "-m", "veil.cli.main"]
LINE = (
    r"veil serve: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (?P<method>[A-Z]+) (?P<path>\S+) "
    r"(?P<status>\d{3}|-) (?P<ms>\d+\.\d) ms key (?P<key>[0-9a-f]{12}|-)"
)


@dataclass
class Served:
    url: str
    token: str
    key_id: str
    process: subprocess.Popen[bytes]
    pending: bytes = b""

    def log_lines(self, count: int, timeout: float = 30.0) -> list[str]:
        """The next ``count`` lines on the server's stderr (each request's line is written
        once it is answered, so it may trail the response a little)."""
        assert self.process.stderr is not None
        fd = self.process.stderr.fileno()
        deadline = time.monotonic() + timeout
        while self.pending.count(b"\n") < count:
            left = deadline - time.monotonic()
            assert left > 0, f"only {self.pending!r}"
            if select.select([fd], [], [], left)[0]:
                chunk = os.read(fd, 65536)
                assert chunk, f"the server ended: {self.pending!r}"
                self.pending += chunk
        *lines, self.pending = self.pending.split(b"\n", count)
        return [line.decode() for line in lines]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    db = str(tmp_path / "m.db")
    env = {k: v for k, v in os.environ.items() if k != "VEIL_MODEL"}
    created = subprocess.run(
        [*VEIL, "keys", "create", "--db", db, "--scope", "user:a"],
        capture_output=True, text=True, check=True, env=env, timeout=60,
    )  # fmt: skip
    token = created.stdout.strip()
    process = subprocess.Popen(
        [*VEIL, "serve", "--db", db, "--port", "0", "--embedder", "hash"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    try:
        served = Served("", token, token.split("_")[1], process)
        (first,) = served.log_lines(1)  # "veil serve: http://127.0.0.1:PORT over sqlite …"
        assert first.startswith("veil serve: http://127.0.0.1:"), first
        served.url = first.split()[2]
        yield served
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()


def test_one_access_log_line_per_request_without_content_or_secret(served: Served) -> None:
    auth = {"Authorization": f"Bearer {served.token}"}
    with httpx.Client(base_url=served.url, timeout=30) as client:
        answers = [
            client.get("/v1/health"),
            client.post("/v1/scopes/user:a/recall", json={"query": "canary-query"}, headers=auth),
            client.get(
                "/v1/scopes/user:a/history",
                params={"subject": "user", "relation": "canary-param"},
                headers=auth,
            ),
            client.post("/v1/scopes/user:b/recall", json={"query": "x"}, headers=auth),
            client.post("/v1/scopes/user:a/recall", json={"query": "x"},
                        headers={"Authorization": "Bearer vk_000000000000_nope"}),
            client.get("/nope"),
        ]  # fmt: skip
    assert [a.status_code for a in answers] == [200, 200, 200, 403, 401, 404]
    lines = served.log_lines(len(answers))
    parsed = [re.fullmatch(LINE, line) for line in lines]
    assert all(parsed), lines
    seen = [(m["method"], m["path"], m["status"], m["key"]) for m in parsed if m is not None]
    assert seen == [
        ("GET", "/v1/health", "200", "-"),
        ("POST", "/v1/scopes/user:a/recall", "200", served.key_id),
        ("GET", "/v1/scopes/user:a/history", "200", served.key_id),
        ("POST", "/v1/scopes/user:b/recall", "403", served.key_id),
        ("POST", "/v1/scopes/user:a/recall", "401", "-"),
        ("GET", "/nope", "404", "-"),
    ]
    text = "\n".join(lines)
    secret = served.token.split("_")[2]
    for never in ("canary-query", "canary-param", secret, "vk_", "000000000000"):
        assert never not in text


def test_bodies_that_are_not_json_objects_get_a_4xx_naming_what_is_wrong(
    served: Served,
) -> None:
    auth = {"Authorization": f"Bearer {served.token}"}
    url = "/v1/scopes/user:a/recall"
    cases: list[tuple[dict[str, str], bytes, int, str, str]] = [
        ({}, b'{"query": "x"}', 415, "unsupported_media_type",
         "send the body as JSON with Content-Type: application/json (it was sent without a "
         "Content-Type)"),
        ({"Content-Type": "text/plain"}, b'{"query": "x"}', 415, "unsupported_media_type",
         "send the body as JSON with Content-Type: application/json (it was sent as text/plain)"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, b"query=x", 415,
         "unsupported_media_type", "(it was sent as application/x-www-form-urlencoded)"),
        ({"Content-Type": "application/json"}, b'{"query":', 422, "invalid_request",
         "the body is not valid JSON: Expecting value at character 9"),
        ({"Content-Type": "application/json"}, b"[1, 2]", 422, "invalid_request",
         "the body must be a JSON object, not an array"),
        ({"Content-Type": "application/json"}, b'"hello"', 422, "invalid_request",
         "the body must be a JSON object, not a string"),
        ({"Content-Type": "application/json"}, b"", 422, "invalid_request",
         "the body is empty: send a JSON object"),
        ({"Content-Type": "application/json; charset=utf-8"}, b'{"query": 3}', 422,
         "invalid_request", "body.query: Input should be a valid string"),
    ]  # fmt: skip
    with httpx.Client(base_url=served.url, timeout=30) as client:
        for headers, body, status, code, message in cases:
            r = client.post(url, content=body, headers={**auth, **headers})
            assert r.status_code == status, (headers, body, r.text)
            assert r.json()["error"] == code and message in r.json()["message"], r.text
        # the key and the scope come first, even when the body cannot be parsed
        bad_json = {"Content-Type": "application/json"}
        stranger = client.post(
            url, content=b"{", headers={**bad_json, "Authorization": "Bearer vk_0_x"}
        )
        assert stranger.status_code == 401
        elsewhere = client.post(
            "/v1/scopes/user:b/recall", content=b"{", headers={**auth, **bad_json}
        )
        assert elsewhere.status_code == 403
        ok = client.post(url, content=b'{"query": "x"}', headers={**auth, **bad_json})
        assert ok.status_code == 200, ok.text
