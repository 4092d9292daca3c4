"""The published schema, a schemathesis run against it, and the per-key limits."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core import NotSet
from schemathesis.core.result import Ok
from schemathesis.generation import GenerationMode
from starlette.testclient import TestClient

from tests.conftest import REPO
from tests.server.conftest import EchoModel, LiveServer
from veil.memory import Memory
from veil.server.app import ServerSettings, create_app
from veil.server.keys import KeyRing
from veil.server.openapi import openapi_document, render
from veil.testing import HashEmbedder

HELD = "user:fuzz"


@pytest.fixture(scope="module")
def fuzz_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FastAPI, str]]:
    path = tmp_path_factory.mktemp("fuzz") / "memory.db"
    memory = Memory(path, complete=EchoModel(), embedder=HashEmbedder())
    keys = KeyRing(memory.store)
    token = keys.create([HELD], admin=True).token
    try:
        yield create_app(memory, keys, ServerSettings(rate_per_s=0)), token
    finally:
        memory.close()


def test_committed_openapi_matches_the_served_one(live: LiveServer) -> None:
    committed = (REPO / "docs" / "openapi.json").read_text()
    assert committed == render(openapi_document()), (
        "docs/openapi.json is stale: python -m veil.server.openapi > docs/openapi.json"
    )
    served = httpx.get(f"{live.url}/openapi.json").json()
    assert served == json.loads(committed)


SCHEMA = schemathesis.openapi.from_path(str(REPO / "docs" / "openapi.json"))
OPERATIONS = {r.ok().label: r.ok() for r in SCHEMA.get_all_operations() if isinstance(r, Ok)}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]


@pytest.mark.parametrize("label", sorted(OPERATIONS))
@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_schemathesis(label: str, data: st.DataObject, fuzz_app: tuple[FastAPI, str]) -> None:
    """Generated requests (schema-valid and not) against each operation of the committed
    schema: never a 500, and every response conforms to the schema. Most cases are aimed at
    the key's scope so they reach the memory instead of stopping at the 403."""
    app, token = fuzz_app
    operation = OPERATIONS[label]
    mode = data.draw(st.sampled_from([GenerationMode.POSITIVE, GenerationMode.NEGATIVE]))
    case = data.draw(operation.as_strategy(generation_mode=mode))
    if case.path_parameters and "scope" in case.path_parameters and data.draw(st.integers(0, 4)):
        case.path_parameters["scope"] = HELD
    body = case.body
    content: bytes | None = None
    if isinstance(body, bytes):
        content = body
    elif not isinstance(body, NotSet):
        content = json.dumps(body).encode()
    headers = {str(k): str(v) for k, v in (case.headers or {}).items()}
    if content is not None:
        headers.setdefault("content-type", case.media_type or "application/json")
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.request(
            case.method,
            case.formatted_path,
            headers={**headers, "Authorization": f"Bearer {token}"},
            params=case.query or None,
            content=content,
        )
    case.validate_response(response, checks=CHECKS)


def test_rate_limit_is_per_key_with_retry_after(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db", complete=EchoModel(), embedder=HashEmbedder()) as memory:
        keys = KeyRing(memory.store)
        first = keys.create(["user:a"]).token
        second = keys.create(["user:a"]).token
        app = create_app(memory, keys, ServerSettings(rate_per_s=0.5, burst=3))
        with TestClient(app) as client:
            auth = {"Authorization": f"Bearer {first}"}
            codes = [client.get("/v1/scopes/user:a/facts", headers=auth).status_code]
            codes += [client.get("/v1/scopes/user:a/facts", headers=auth).status_code]
            codes += [client.get("/v1/scopes/user:a/facts", headers=auth).status_code]
            limited = client.get("/v1/scopes/user:a/facts", headers=auth)
            other = client.get(
                "/v1/scopes/user:a/facts", headers={"Authorization": f"Bearer {second}"}
            )
        assert codes == [200, 200, 200]
        assert limited.status_code == 429
        assert limited.json()["error"] == "rate_limited"
        assert 1 <= int(limited.headers["retry-after"]) <= 2
        assert other.status_code == 200


def test_token_bucket_refills() -> None:
    from veil.server.limits import RateLimiter

    now = [0.0]
    limiter = RateLimiter(2.0, 2, now=lambda: now[0])
    assert limiter.take("k") is None and limiter.take("k") is None
    wait = limiter.take("k")
    assert wait == pytest.approx(0.5)
    now[0] += 0.5
    assert limiter.take("k") is None
    assert RateLimiter(0, 1).take("k") is None
