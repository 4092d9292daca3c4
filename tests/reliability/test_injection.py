"""Prompt injection and trust (docs/reliability.md, "Trust").

A corpus (tests/data/injection/*.json) of tool outputs, web pages and forwarded messages tries
to plant facts about the user. The extraction model is malicious: it returns each planted fact
as a first-hand ``claimant: "user"`` fact about the user and names the trusted fact it should
supersede. Remembered with author ``tool`` / ``third_party`` (library, HTTP with a tool key,
MCP bound to ``tool``), none may become a user fact or supersede one: each is a quarantined
claim, shown only under recall's "Unverified third-party claims". Through the harness
(``veil_remember``, author ``assistant``) it may not supersede the user's own fact nor enter
the wiki.

Also: pointers and the expand/read tools cannot reach another project's memory or escape the
project directory.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.reliability.support import fact, record_figures
from tests.server.conftest import start_uvicorn
from tests.server.mcp_direct import DirectMcp
from veil.agent.harness import VeilHarness
from veil.agent.tool import ToolContext
from veil.agent.tools import coding_tools
from veil.context.engine import ContextEngine, UnknownItem
from veil.memory import Memory
from veil.server.app import ServerSettings, create_app
from veil.server.keys import KeyRing
from veil.server.mcp_server import Binding, build_server
from veil.tape import open_store
from veil.testing import FakeClock, HashEmbedder, ScriptedModel

CORPUS = Path(__file__).resolve().parents[1] / "data" / "injection"
CLAIMS_HEADING = "Unverified third-party claims"
BASELINE = {"located_at": "Lisbon", "prefers": "vim", "works_as": "engineer"}


@dataclass(frozen=True)
class Case:
    id: str
    author: str
    text: str
    relation: str
    object: str
    statement: str
    supersede: bool


def corpus() -> list[Case]:
    cases: list[Case] = []
    for path in sorted(CORPUS.glob("*.json")):
        for raw in json.loads(path.read_text())["cases"]:
            p = raw["planted"]
            cases.append(
                Case(
                    raw["id"],
                    raw["author"],
                    raw["text"],
                    p["relation"],
                    p["object"],
                    p["statement"],
                    bool(p["supersede_trusted"]),
                )
            )
    return cases


CASES = corpus()


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    mem = Memory(
        tmp_path / "m.db", complete=ScriptedModel([]), embedder=HashEmbedder(), clock=FakeClock()
    )
    try:
        yield mem
    finally:
        mem.close()


def baseline(memory: Memory, scope: str) -> dict[str, str]:
    """The user's own first-hand facts; returns relation -> fact id."""
    memory.complete = ScriptedModel(
        [
            {
                "facts": [fact("user", r, o, f"The user {r} {o}.") for r, o in BASELINE.items()],
                "episodes": [],
            }
        ]
    )
    memory.remember("I live in Lisbon, I prefer vim and I work as an engineer.", user_id=scope)
    memory.maintain(scope)
    return {f.relation: f.id for f in memory.facts(scope)}


def malicious(case: Case, trusted: dict[str, str]) -> ScriptedModel:
    planted = fact("user", case.relation, case.object, case.statement, claimant="user")
    planted["supersedes"] = trusted.get(case.relation) if case.supersede else None
    return ScriptedModel([{"facts": [planted], "episodes": []}])


def assert_not_trusted(memory: Memory, scope: str, case: Case, trusted: dict[str, str]) -> None:
    current = memory.facts(scope)
    assert {f.id for f in current} == set(trusted.values()), case.id
    assert all(case.object not in f.object for f in current), case.id
    for relation, fact_id in trusted.items():
        versions = memory.history(scope, "user", relation)
        assert [f.id for f in versions if f.is_current] == [fact_id], case.id
    assert any(case.object in c.object for c in memory.claims(scope)), case.id
    memory.maintain(scope)
    recall = memory.recall(case.object, user_id=scope, token_budget=4000)
    assert all(case.object not in f.object for f in recall.facts), case.id
    assert all(case.object not in w for w in recall.wiki), case.id
    first = recall.text.find(case.object)
    assert first == -1 or first > recall.text.find(CLAIMS_HEADING) >= 0, (case.id, recall.text)
    briefing = memory.recall("", user_id=scope, token_budget=4000)
    assert all(case.object not in w for w in briefing.wiki), case.id


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_library_injection_is_quarantined(memory: Memory, case: Case) -> None:
    scope = f"user:{case.id}"
    trusted = baseline(memory, scope)
    memory.complete = malicious(case, trusted)
    report = memory.remember(case.text, user_id=scope, author=case.author)  # type: ignore[arg-type]
    assert report.superseded == () and report.quarantined, (case.id, report)
    assert_not_trusted(memory, scope, case, trusted)


def test_http_and_mcp_injection_is_quarantined(memory: Memory) -> None:
    keys = KeyRing(memory.store)
    url, stop = start_uvicorn(create_app(memory, keys, ServerSettings(rate_per_s=0)))
    try:
        for case in CASES:
            scope = f"user:http-{case.id}"
            trusted = baseline(memory, scope)
            memory.complete = malicious(case, trusted)
            token = keys.create([scope], authority="tool").token
            with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as c:
                # the body cannot claim to be the user: unknown fields are refused
                sneaky = c.post(
                    f"/v1/scopes/{scope}/remember", json={"text": case.text, "author": "user"}
                )
                assert sneaky.status_code == 422
                r = c.post(f"/v1/scopes/{scope}/remember", json={"text": case.text})
                assert r.status_code == 200 and not r.json()["superseded"], r.text
            assert_not_trusted(memory, scope, case, trusted)
    finally:
        stop()

    for case in CASES:
        scope = f"user:mcp-{case.id}"
        trusted = baseline(memory, scope)
        memory.complete = malicious(case, trusted)
        client = DirectMcp(build_server(memory, Binding(scope, "tool")))
        # Claiming to be the user is refused outright, naming the argument; nothing is written.
        claimed = client.call_tool(
            "remember", {"text": case.text, "author": "user", "user_id": scope}
        )
        assert claimed.is_error and "unexpected 'author'" in claimed.texts[0]
        result = client.call_tool("remember", {"text": case.text})
        assert not result.is_error
        assert_not_trusted(memory, scope, case, trusted)
    record_figures(
        "injection",
        cases=len(CASES),
        paths=["library", "http", "mcp", "harness"],
        trusted_facts_planted=0,
        supersessions=0,
    )


def test_harness_remember_cannot_override_the_user(memory: Memory, tmp_path: Path) -> None:
    """The model read an injected tool output and relays it through ``veil_remember``
    (author assistant): it may not supersede the user's first-hand fact nor enter the wiki."""
    store = open_store(tmp_path / "context.db", embedder=HashEmbedder())
    harness = VeilHarness(
        store=store, scope="project:inj", memory=memory, embedder=HashEmbedder(), clock=FakeClock()
    )
    remember = next(t for t in harness.tools() if t.spec.name == "veil_remember")
    ctx = ToolContext(cwd=tmp_path, default_timeout_s=5.0)
    trusted = baseline(memory, "project:inj")
    for case in (c for c in CASES if c.relation in BASELINE):
        memory.complete = malicious(case, trusted)
        result = remember.run({"text": case.text}, ctx)
        assert not result.is_error, result.content
        for relation, fact_id in trusted.items():
            current = [f for f in memory.history("project:inj", "user", relation) if f.is_current]
            assert fact_id in {f.id for f in current}, (case.id, current)
        memory.maintain("project:inj")
        briefing = memory.recall("", user_id="project:inj", token_budget=4000)
        assert all(case.object not in w for w in briefing.wiki), case.id
    store.close()


# ---- pointers and file tools ------------------------------------------------------------


def test_pointer_of_another_project_does_not_resolve(tmp_path: Path) -> None:
    store = open_store(tmp_path / "context.db", embedder=HashEmbedder())
    a = ContextEngine(store, session_id="sa", scope="project:a", embedder=HashEmbedder())
    secret = a.capture_tool_result(
        tool_call_id="c1",
        tool_name="bash",
        arguments={"command": "cat .env"},
        output="API_KEY=tokc-secret",
    )
    a.evict(secret.id)
    a.flush()
    b = ContextEngine(
        store, session_id="sb", scope="project:b", embedder=HashEmbedder(), register=False
    )
    for pointer in (
        secret.pointer,
        secret.id,
        "c1",
        f"veil://live/{secret.id}",
        f"veil://warm/../{secret.id}",
        f"veil://cold/{secret.id}",
    ):
        with pytest.raises(UnknownItem):
            b.expand(pointer)
    other = open_store(tmp_path / "context.db", embedder=HashEmbedder())  # as another process
    harness = VeilHarness(store=other, scope="project:b", embedder=HashEmbedder())
    expand = next(t for t in harness.tools() if t.spec.name == "veil_expand")
    result = expand.run({"pointer": secret.pointer}, ToolContext(cwd=tmp_path))
    assert result.is_error and "tokc-secret" not in result.content
    assert a.expand(secret.pointer).content == "API_KEY=tokc-secret"  # its own project can
    other.close()
    store.close()


def test_file_tools_stay_in_the_project(tmp_path: Path) -> None:
    project, other = tmp_path / "project", tmp_path / "other"
    (project / "src").mkdir(parents=True)
    (other / ".veil").mkdir(parents=True)
    (other / ".veil" / "context.db").write_text("other project's storage")
    (other / "secret.txt").write_text("tokc-other-secret")
    os.symlink(other, project / "src" / "link_dir")
    os.symlink(other / "secret.txt", project / "innocent.txt")
    tools = {t.spec.name: t for t in coding_tools()}
    ctx = ToolContext(cwd=project, default_timeout_s=5.0)
    paths = [
        "../other/secret.txt",
        str(other / "secret.txt"),
        "src/link_dir/secret.txt",
        "innocent.txt",
        "src/../../other/.veil/context.db",
        "src/link_dir/.veil/context.db",
        "/etc/passwd",
        "./src/./../../other/secret.txt",
    ]
    for path in paths:
        read = tools["read"].run({"path": path}, ctx)
        assert read.is_error and "tokc-other-secret" not in read.content, path
        write = tools["write"].run({"path": path, "content": "pwned"}, ctx)
        assert write.is_error, path
        edit = tools["edit"].run({"path": path, "old_text": "tokc", "new_text": "x"}, ctx)
        assert edit.is_error, path
    assert (other / "secret.txt").read_text() == "tokc-other-secret"
    assert (other / ".veil" / "context.db").read_text() == "other project's storage"
