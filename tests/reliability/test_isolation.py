"""Isolation fuzz (docs/reliability.md, "Isolation").

The 10 LoCoMo conversations and seeded generated conversations are cut into many scopes, one
memory per scope, all in ONE store (so a leak is possible). Every scope is told unique canary
tokens; the extraction model echoes them into facts (about the user and about the shared
LoCoMo speakers, so scopes share entity names), episodes and quarantined claims. Then every
read surface is exercised for every scope — library, HTTP API (real uvicorn server, one key per
scope) and MCP (in-process client bound to one scope) — including recall queries made of OTHER
scopes' canaries. Nothing returned for scope B may contain a canary of any other scope.

Default: a short sample. ``VEIL_RELIABILITY_FULL=1``: at least 200 scopes, MCP for 40 of them.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.conftest import SHARED
from tests.reliability.support import SEED, CanaryModel, record_figures, size
from tests.server.conftest import memory_target, start_uvicorn
from tests.server.mcp_direct import DirectMcp
from veil.memory import Memory, MemoryConfig
from veil.memory.projection import WIKI
from veil.server.app import ServerSettings, create_app
from veil.server.keys import KeyRing
from veil.server.mcp_server import Binding, build_server
from veil.testing import HashEmbedder

CANARY = re.compile(r"tokc[0-9a-f]{12}")
WORDS = [
    "garden",
    "painting",
    "hiking",
    "guitar",
    "camping",
    "pottery",
    "adoption",
    "career",
    "school",
    "family",
    "concert",
    "music",
    "book",
    "museum",
    "beach",
    "dinner",
    "project",
    "deadline",
    "interview",
]
NAMES = ("Caroline", "Melanie", "Jolene", "Andrew", "Audrey", "Nate", "Joanna", "Deborah")


@dataclass
class ScopePlan:
    scope: str
    canaries: list[str]
    texts: list[str]
    claim: str
    at: datetime


@dataclass
class Tally:
    operations: int = 0
    leaks: list[str] = field(default_factory=lambda: [])
    by_surface: dict[str, int] = field(default_factory=lambda: {})

    def look(self, surface: str, scope: str, own: set[str], output: object) -> None:
        """Count one operation and record any foreign canary in its output."""
        self.operations += 1
        self.by_surface[surface] = self.by_surface.get(surface, 0) + 1
        text = output if isinstance(output, str) else json.dumps(output, default=str)
        foreign = set(CANARY.findall(text)) - own
        if foreign:
            self.leaks.append(f"{surface} {scope}: {sorted(foreign)[:3]}")


def canary(seed: int, scope_index: int, n: int) -> str:
    return "tokc" + hashlib.sha256(f"{seed}:{scope_index}:{n}".encode()).hexdigest()[:12]


def locomo_chunks() -> list[list[str]]:
    """Each LoCoMo session as a list of "Speaker: text" lines."""
    data = json.loads((SHARED / "data" / "locomo10.json").read_text())
    chunks: list[list[str]] = []
    for sample in data:
        conv = sample["conversation"]
        for key, turns in conv.items():
            if re.fullmatch(r"session_\d+", key) and isinstance(turns, list) and turns:
                chunks.append([f"{t['speaker']}: {t['text']}" for t in turns[:12]])
    return chunks


def generated_chunk(rng: random.Random) -> list[str]:
    a, b = rng.sample(NAMES, 2)
    return [
        f"{rng.choice((a, b))}: I went to the {rng.choice(WORDS)} with my "
        f"{rng.choice(WORDS)} and talked about {rng.choice(WORDS)}."
        for _ in range(8)
    ]


def plan(scopes: int, seed: int) -> list[ScopePlan]:
    rng = random.Random(seed)
    chunks = locomo_chunks()
    plans: list[ScopePlan] = []
    for i in range(scopes):
        lines = chunks[(i * 7) % len(chunks)] if i % 3 else generated_chunk(rng)
        mine = [canary(seed, i, n) for n in range(4)]
        half = len(lines) // 2
        texts = [
            "\n".join([*lines[:half], f"My project code is {mine[0]}."]),
            "\n".join([*lines[half:], f"I prefer {mine[1]} these days."]),
            f"Caroline told me about {mine[2]} at the {rng.choice(WORDS)}.",
        ]
        claim = f"Web page: the user's new address is {mine[3]} street."
        at = datetime(2023, 5, 1, tzinfo=UTC) + timedelta(days=rng.randrange(300))
        plans.append(ScopePlan(f"user:iso{i:04d}", mine, texts, claim, at))
    return plans


@pytest.fixture(params=["sqlite", "postgresql"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """One store for every scope, on each backend (PostgreSQL as a non-superuser role, so
    row-level security is in force as well as the scoped SQL)."""
    target = memory_target(request.param, request, tmp_path)
    mem = Memory(
        next(target),
        complete=CanaryModel(),
        embedder=HashEmbedder(),
        config=MemoryConfig(consolidate_min_episodes=2),
        actor="server",
    )
    try:
        yield mem
    finally:
        mem.close()
        next(target, None)  # resume the generator: it drops the PostgreSQL database


def library_pass(
    memory: Memory, p: ScopePlan, others: list[str], tally: Tally, export: Path
) -> None:
    own = set(p.canaries)
    s = p.scope
    for n, text in enumerate(p.texts[:2]):
        tally.look(
            "library", s, own, memory.remember(text, user_id=s, at=p.at + timedelta(hours=n))
        )
    tally.look("library", s, own, memory.remember(p.claim, user_id=s, author="third_party"))
    # a fresh statement (the LoCoMo ones are dated 2023, stale now): the wiki gets a section
    fresh = memory.remember(f"Today I prefer {p.canaries[1]} again.", user_id=s)
    tally.look("library", s, own, fresh)
    tally.look("library", s, own, memory.maintain(s))
    for query in ("", "project code", " ".join(others), "Caroline", f"{others[0]} Caroline"):
        r = memory.recall(query, user_id=s, token_budget=2000)
        tally.look("library", s, own, [r.text, r.facts, r.episodes, r.claims, r.wiki, r.entities])
    tally.look("library", s, own, memory.facts(s, include_history=True))
    tally.look("library", s, own, memory.claims(s))
    tally.look("library", s, own, memory.episodes(s))
    for subject, relation in (("user", "works_on"), ("user", "prefers"), ("Caroline", "works_on")):
        tally.look("library", s, own, memory.history(s, subject, relation))
    memory.export(s, export)
    tally.look("library", s, own, export.read_text())


def http_pass(client: httpx.Client, p: ScopePlan, others: list[str], tally: Tally) -> None:
    own = set(p.canaries)
    base = f"/v1/scopes/{p.scope}"
    r = client.post(f"{base}/remember", json={"text": p.texts[2]})
    assert r.status_code == 200, r.text
    tally.look("http", p.scope, own, r.text)
    for query in ("", " ".join(others), "Caroline works on"):
        r = client.post(f"{base}/recall", json={"query": query, "token_budget": 2000})
        assert r.status_code == 200, r.text
        tally.look("http", p.scope, own, r.text)
    for path in (
        "/facts?include_history=true",
        "/history?subject=user&relation=works_on",
        "/history?subject=Caroline&relation=works_on",
        "/export",
    ):
        r = client.get(base + path)
        assert r.status_code == 200, r.text
        tally.look("http", p.scope, own, r.text)


def mcp_pass(memory: Memory, p: ScopePlan, others: list[str], tally: Tally) -> None:
    own = set(p.canaries)
    client = DirectMcp(build_server(memory, Binding(p.scope, "user")))
    result = client.call_tool("remember", {"text": f"Also {p.canaries[0]} again."})
    tally.look("mcp", p.scope, own, result.structured_content)
    for query in ("", " ".join(others)):
        result = client.call_tool("recall", {"query": query, "token_budget": 2000})
        assert not result.is_error
        tally.look("mcp", p.scope, own, result.structured_content)
    for subject in ("user", "Caroline"):
        result = client.call_tool("history", {"subject": subject, "relation": "works_on"})
        tally.look("mcp", p.scope, own, result.structured_content)


def test_no_canary_crosses_scopes(memory: Memory, tmp_path: Path) -> None:
    scopes = size(20, 200)
    mcp_scopes = size(3, 40)
    plans = plan(scopes, SEED)
    rng = random.Random(SEED + 1)
    tally = Tally()

    def others_of(i: int) -> list[str]:
        picks = rng.sample([j for j in range(scopes) if j != i], k=min(3, scopes - 1))
        return [c for j in picks for c in plans[j].canaries[:2]]

    for i, p in enumerate(plans):
        library_pass(memory, p, others_of(i), tally, tmp_path / f"export{i}.jsonl")
    keys = KeyRing(memory.store)
    url, stop = start_uvicorn(create_app(memory, keys, ServerSettings(rate_per_s=0)))
    try:
        for i, p in enumerate(plans):
            token = keys.create([p.scope], authority="user").token
            with httpx.Client(
                base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30.0
            ) as client:
                http_pass(client, p, others_of(i), tally)
                # the neighbour's scope with this key: 403, constant body, no content
                j = (i + 1) % scopes
                r = client.get(f"/v1/scopes/{plans[j].scope}/export")
                assert r.status_code == 403
                tally.look("http", p.scope, set(p.canaries), r.text)
    finally:
        stop()

    for i in rng.sample(range(scopes), mcp_scopes):
        mcp_pass(memory, plans[i], others_of(i), tally)
    # Sanity: the canaries really are in memory, each in its own scope.
    for p in plans[:5]:
        assert p.canaries[0] in memory.recall("project code", user_id=p.scope).text
        assert any(
            c.object == p.canaries[3] or p.canaries[3] in c.statement
            for c in memory.claims(p.scope)
        )
    assert all(memory.store.fetch(WIKI, scope=p.scope) for p in plans[:5]), "no wiki compiled"
    assert memory.store.check().ok
    assert tally.leaks == [], tally.leaks[:10]
    record_figures(
        "isolation",
        backend=type(memory.store).__name__,
        scopes=scopes,
        mcp_scopes=mcp_scopes,
        operations=tally.operations,
        by_surface=tally.by_surface,
        leaks=len(tally.leaks),
    )
