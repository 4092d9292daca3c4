"""The HTTP API over real servers on 127.0.0.1, on SQLite and PostgreSQL (``live`` fixture)."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator

import httpx

from tests.server.conftest import LiveServer

Call = Callable[[httpx.Client, str], httpx.Response]

ENDPOINTS: dict[str, Call] = {
    "remember": lambda c, s: c.post(f"/v1/scopes/{s}/remember", json={"text": "I prefer vim"}),
    "recall": lambda c, s: c.post(f"/v1/scopes/{s}/recall", json={"query": "what do I work on"}),
    "facts": lambda c, s: c.get(f"/v1/scopes/{s}/facts"),
    "facts_history": lambda c, s: c.get(f"/v1/scopes/{s}/facts?include_history=true"),
    "history": lambda c, s: c.get(
        f"/v1/scopes/{s}/history", params={"subject": "user", "relation": "prefers"}
    ),
    "confirm": lambda c, s: c.post(f"/v1/scopes/{s}/facts/fa_x/confirm"),
    "dispute": lambda c, s: c.post(f"/v1/scopes/{s}/facts/fa_x/dispute", json={"reason": "no"}),
    "export": lambda c, s: c.get(f"/v1/scopes/{s}/export"),
    "forget": lambda c, s: c.delete(f"/v1/scopes/{s}"),
}


def uniq(prefix: str) -> str:
    return f"{prefix}:{uuid.uuid4().hex[:8]}"


def test_health_and_version_need_no_key(live: LiveServer) -> None:
    with live.client() as c:
        health = c.get("/v1/health")
        version = c.get("/v1/version")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert version.json()["api"] == "v1"


def test_round_trip_every_endpoint(live: LiveServer) -> None:
    scope = uniq("user")
    with live.client(live.key(scope, admin=True)) as c:
        r = c.post(f"/v1/scopes/{scope}/remember", json={"text": "I prefer vim for tokalpha"})
        assert r.status_code == 200, r.text
        report = r.json()
        assert len(report["facts"]) == 2 and report["llm_calls"] == 1 and report["error"] is None
        r = c.post(
            f"/v1/scopes/{scope}/remember",
            json={"text": "Now I prefer emacs", "at": "2030-01-01T00:00:00+00:00"},
        )
        assert r.json()["superseded"], r.text

        recall = c.post(f"/v1/scopes/{scope}/recall", json={"query": "emacs", "token_budget": 500})
        assert recall.status_code == 200 and "emacs" in recall.json()["text"]

        facts = c.get(f"/v1/scopes/{scope}/facts").json()["facts"]
        assert {f["object"] for f in facts} == {"emacs", "tokalpha"}
        history = c.get(
            f"/v1/scopes/{scope}/history", params={"subject": "user", "relation": "prefers"}
        ).json()["facts"]
        assert [f["object"] for f in history] == ["vim", "emacs"]
        assert history[0]["status"] == "superseded"

        emacs = next(f for f in facts if f["object"] == "emacs")
        confirmed = c.post(f"/v1/scopes/{scope}/facts/{emacs['id']}/confirm")
        assert confirmed.status_code == 200 and confirmed.json()["status"] == "current"
        disputed = c.post(
            f"/v1/scopes/{scope}/facts/{emacs['id']}/dispute", json={"reason": "typo"}
        )
        assert disputed.json()["status"] == "disputed"
        assert "typo" in disputed.json()["reason"]
        superseded = c.post(f"/v1/scopes/{scope}/facts/{history[0]['id']}/confirm")
        assert superseded.status_code == 409

        export = c.get(f"/v1/scopes/{scope}/export")
        assert export.status_code == 200
        assert export.headers["content-type"].startswith("application/x-ndjson")
        lines = [json.loads(line) for line in export.text.splitlines()]
        assert any("tokalpha" in json.dumps(line) for line in lines)

        erased = c.delete(f"/v1/scopes/{scope}")
        assert erased.status_code == 200 and erased.json()["events"] > 0
        assert c.get(f"/v1/scopes/{scope}/facts").json()["facts"] == []


def test_author_and_scope_come_from_the_key(live: LiveServer) -> None:
    scope = uniq("user")
    with live.client(live.key(scope, authority="assistant")) as c:
        r = c.post(f"/v1/scopes/{scope}/remember", json={"text": "the user prefers tea"})
        assert r.status_code == 200
        (tea,) = c.get(f"/v1/scopes/{scope}/facts").json()["facts"]
        assert tea["provenance"]["author_of_evidence"] == "assistant"
        for extra in ({"author": "user"}, {"user_id": "user:other"}, {"scope": "user:other"}):
            bad = c.post(f"/v1/scopes/{scope}/remember", json={"text": "x", **extra})
            assert bad.status_code == 422, bad.text
            assert "extra" in bad.json()["message"].lower()
    events = live.memory.store.read(scope, kinds=["memory.evidence"])
    assert [e.actor for e in events] == ["assistant"]


def test_isolation_every_endpoint_every_wrong_scope(live: LiveServer) -> None:
    """Many keys and scopes: each key × each endpoint × each scope it lacks (existing, never
    existing, reserved, malformed) → 403 with byte-identical bodies; and canaries written in
    one scope never appear in any response to another scope's key."""
    scopes = [uniq(f"tenant{i}") for i in range(5)]
    keys = {s: live.key(s, admin=True) for s in scopes}
    canaries = {s: f"tok{uuid.uuid4().hex[:12]}" for s in scopes}
    for s in scopes:
        with live.client(keys[s]) as c:
            r = c.post(f"/v1/scopes/{s}/remember", json={"text": f"secret {canaries[s]}"})
            assert r.status_code == 200 and len(r.json()["facts"]) == 1
    wrong_scopes = [*scopes, "user:never-existed", "veil:keys", "a%20b", "x" * 300]
    bodies: set[bytes] = set()
    for own in scopes:
        with live.client(keys[own]) as c:
            for name, call in ENDPOINTS.items():
                for other in wrong_scopes:
                    if other == own:
                        continue
                    r = call(c, other)
                    assert r.status_code == 403, (name, other, r.text)
                    bodies.add(r.content)
            # every read endpoint on its own scope: no other scope's canary anywhere
            for name in ("recall", "facts", "facts_history", "history", "export"):
                text = ENDPOINTS[name](c, own).text
                assert canaries[own] in text or name in ("history",), name
                leaked = [t for s, t in canaries.items() if s != own and t in text]
                assert not leaked, (name, own, leaked)
            r = c.post(f"/v1/scopes/{own}/recall", json={"query": " ".join(canaries.values())})
            assert [t for s, t in canaries.items() if s != own and t in r.text] == []
    assert len(bodies) == 1, bodies
    # a fact id from scope A addressed through scope B is simply unknown in B
    with live.client(keys[scopes[0]]) as c:
        (fact_a,) = c.get(f"/v1/scopes/{scopes[0]}/facts").json()["facts"]
    with live.client(keys[scopes[1]]) as c:
        r = c.post(f"/v1/scopes/{scopes[1]}/facts/{fact_a['id']}/confirm")
        assert r.status_code == 404
        r = c.post(f"/v1/scopes/{scopes[1]}/facts/{fact_a['id']}/dispute", json={"reason": "x"})
        assert r.status_code == 404
    with live.client(keys[scopes[0]]) as c:
        (still,) = c.get(f"/v1/scopes/{scopes[0]}/facts").json()["facts"]
        assert still["status"] == "current"


def test_multi_scope_key_and_admin_rules(live: LiveServer) -> None:
    a, b = uniq("team"), uniq("team")
    both = live.key(a, b)
    with live.client(both) as c:
        assert c.post(f"/v1/scopes/{a}/remember", json={"text": "tokone"}).status_code == 200
        assert c.post(f"/v1/scopes/{b}/remember", json={"text": "toktwo"}).status_code == 200
        assert "toktwo" not in c.get(f"/v1/scopes/{a}/facts").text
        refused = c.delete(f"/v1/scopes/{a}")
        assert refused.status_code == 403 and refused.json()["error"] == "admin_required"
    assert len(live.memory.facts(a)) == 1


def test_auth_errors(live: LiveServer) -> None:
    scope = uniq("user")
    token = live.key(scope)
    with live.client() as c:
        r = c.get(f"/v1/scopes/{scope}/facts")
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        for bad in ("nope", token[:-1] + ("0" if token[-1] != "0" else "1"), "vk_zz"):
            r = c.get(f"/v1/scopes/{scope}/facts", headers={"Authorization": f"Bearer {bad}"})
            assert r.status_code == 401
        r = c.get(f"/v1/scopes/{scope}/facts", headers={"Authorization": f"Basic {token}"})
        assert r.status_code == 401
    key_id = token.split("_")[1]
    with live.client(token) as c:
        assert c.get(f"/v1/scopes/{scope}/facts").status_code == 200
        assert live.keys.revoke(key_id)
        assert c.get(f"/v1/scopes/{scope}/facts").status_code == 401


def test_bad_requests_are_4xx_with_messages(live: LiveServer) -> None:
    scope = uniq("user")
    with live.client(live.key(scope)) as c:
        url = f"/v1/scopes/{scope}"
        r = c.post(
            f"{url}/remember", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert r.status_code == 422 and "json" in r.json()["message"].lower()
        r = c.post(f"{url}/recall", json={"query": 3, "token_budget": "many"})
        assert r.status_code == 422 and "token_budget" in r.json()["message"]
        r = c.post(f"{url}/recall", json={"query": "x", "as_of": "2024-01-01T00:00:00"})
        assert r.status_code == 422 and "timezone" in r.json()["message"].lower()
        r = c.post(f"{url}/recall", json={"query": "x", "token_budget": -1})
        assert r.status_code == 422
        r = c.post(f"{url}/remember", json={"text": "   "})
        assert r.status_code == 422 and "empty" in r.json()["message"]
        r = c.post(f"{url}/remember", json=["text"])
        assert r.status_code == 422
        r = c.post(f"{url}/facts/nope/dispute", json={"reason": ""})
        assert r.status_code == 422
        r = c.post(f"{url}/facts/nope/confirm")
        assert r.status_code == 404 and r.json()["error"] == "not_found"
        r = c.get(f"{url}/history")
        assert r.status_code == 422 and "subject" in r.json()["message"]
        big = {"text": "x" * 1_100_000}
        r = c.post(f"{url}/remember", json=big)
        assert r.status_code == 413 and "limit" in r.json()["message"]

        def chunks() -> Iterator[bytes]:
            for _ in range(20):
                yield b"x" * 100_000

        r = c.post(f"{url}/remember", content=chunks())  # chunked, no Content-Length
        assert r.status_code == 413
    assert live.memory.facts(scope) == []


def test_concurrent_writers_over_http(live: LiveServer) -> None:
    """Threads hammer remember/recall on one shared scope and on their own scopes: every
    write lands (no lost writes) and no scope holds another's rows."""
    shared = uniq("shared")
    own = [uniq("own") for _ in range(4)]
    shared_key = live.key(shared)
    per_thread = 6
    errors: list[str] = []
    written: dict[str, list[str]] = {s: [] for s in [shared, *own]}
    lock = threading.Lock()

    def worker(i: int) -> None:
        mine = own[i]
        try:
            with live.client(shared_key) as cs, live.client(live.key(mine)) as co:
                for n in range(per_thread):
                    for client, scope in ((cs, shared), (co, mine)):
                        token = f"tok{i}x{n}{uuid.uuid4().hex[:6]}"
                        r = client.post(
                            f"/v1/scopes/{scope}/remember", json={"text": f"on {token}"}
                        )
                        if r.status_code != 200 or len(r.json()["facts"]) != 1:
                            errors.append(f"{scope}: {r.status_code} {r.text[:200]}")
                        with lock:
                            written[scope].append(token)
                        rc = client.post(f"/v1/scopes/{scope}/recall", json={"query": token})
                        if rc.status_code != 200:
                            errors.append(f"recall {rc.status_code}")
        except Exception as exc:  # surfaced below
            errors.append(repr(exc))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(own))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for scope, tokens in written.items():
        stored = {f.object for f in live.memory.facts(scope)}
        assert stored == set(tokens), scope
    everything = {t for tokens in written.values() for t in tokens}
    for scope, tokens in written.items():
        stored = {f.object for f in live.memory.facts(scope)}
        assert not (stored & (everything - set(tokens)))
