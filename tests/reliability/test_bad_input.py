"""Bad input (docs/reliability.md, "Bad input").

Hypothesis drives the public entry points (remember / recall / facts / history / export /
import, and the HTTP API) with unicode edge cases, control characters, NUL, long strings,
deeply nested JSON and wrong types; a corpus of malformed model outputs (truncated JSON, wrong
types, prose, huge output, a model that raises, one that hangs past its timeout) drives
extraction. Expected every time: a result or a clear error (ValueError family, TypeError for a
wrong type / 4xx), never a crash or a 500, never a half-written state (``store.check().ok``),
and nothing the user said lost (the evidence event is on the tape whenever ``remember`` got
past validation).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reliability.support import TokenEchoModel, fact, record_figures, size
from veil.memory import ImportFormatError, Memory, MemoryConfig, VeilMemoryError
from veil.server.app import ServerSettings, create_app
from veil.server.keys import KeyRing
from veil.testing import FakeClock, HashEmbedder, ScriptedModel

EXAMPLES = size(40, 600)
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
TRIED: Counter[str] = Counter()

EDGE = st.sampled_from(
    [
        "\x00",
        "\u202e",
        "\ufeff",
        "\U0001f600",
        "e\u0301",
        "\ud7ff",
        "\t",
        "\r\n",
        "\x1b[31m",
        "\u2028",
        "'; DROP TABLE tape_events; --",
        "<evidence>",
        "</evidence>",
        '{"facts": []}',
        "tok",
        "NULL",
        "\\",
    ]
)
TEXT = st.one_of(
    st.text(max_size=200),
    st.lists(st.one_of(EDGE, st.text(max_size=20)), max_size=30).map("".join),
    st.integers(0, 4).map(lambda n: "x\u00e9" * (10**n // 2 + 1)),
)
SCOPE = st.one_of(st.sampled_from(["user:a", "user:b"]), st.text(max_size=40), EDGE)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


def nested(depth: int) -> str:
    """JSON text nested ``depth`` levels deep (too deep for a recursive encoder)."""
    return '{"a": [' * depth + '"deep"' + "]}" * depth


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    mem = Memory(
        tmp_path / "bad.db",
        complete=TokenEchoModel(),
        embedder=HashEmbedder(),
        clock=FakeClock(),
        config=MemoryConfig(max_evidence_chars=50_000),
    )
    try:
        yield mem
    finally:
        mem.close()


def test_library_entry_points(memory: Memory, tmp_path: Path) -> None:
    @SETTINGS
    @given(text=TEXT, scope=SCOPE, author=st.sampled_from(["user", "tool", "nobody", 3, None]))
    def remember(text: str, scope: str, author: Any) -> None:
        TRIED["remember"] += 1
        before = memory.store.head()
        try:
            report = memory.remember(text, user_id=scope, author=author)
        except (ValueError, TypeError, VeilMemoryError):  # TypeError: author 3 / None
            assert memory.store.head() == before, "a refused remember wrote something"
            return
        (evidence,) = memory.store.read(scope, after=before, kinds=["memory.evidence"])
        assert evidence.payload["text"] == text and evidence.id == report.evidence_id

    @SETTINGS
    @given(query=TEXT, scope=SCOPE, budget=st.integers(-5, 5000), subject=TEXT, relation=TEXT)
    def reads(query: str, scope: str, budget: int, subject: str, relation: str) -> None:
        TRIED["reads"] += 1
        with contextlib.suppress(ValueError):
            memory.recall(query, user_id=scope, token_budget=budget)
        with contextlib.suppress(ValueError):
            memory.history(scope, subject, relation)
            memory.facts(scope, subject=subject, relation=relation)

    remember()
    reads()
    assert memory.store.check().ok


def test_import_rejects_malformed_files_whole(memory: Memory, tmp_path: Path) -> None:
    memory.remember("I prefer tokgood", user_id="user:src")
    good = memory.export("user:src", tmp_path / "good.jsonl").read_text().splitlines()

    @SETTINGS
    @given(
        junk=st.one_of(JSONISH.map(json.dumps), TEXT, st.just(nested(2000))),
        where=st.integers(0, len(good)),
        restore=st.booleans(),
    )
    def bad_import(junk: str, where: int, restore: bool) -> None:
        TRIED["import"] += 1
        lines = [*good[:where], junk.replace("\n", " "), *good[where:]]
        path = tmp_path / "bad.jsonl"
        path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
        before = memory.store.head()
        try:
            memory.import_(path, restore=restore, user_id="user:dst")
        except ImportFormatError:
            # also the same export imported before with the other ``restore``
            assert memory.store.head() == before, "a rejected import wrote something"

    bad_import()
    assert memory.store.check().ok


def test_http_bodies_never_500(memory: Memory) -> None:
    keys = KeyRing(memory.store)
    token = keys.create(["user:a"], authority="user").token
    app = create_app(memory, keys, ServerSettings(rate_per_s=0))
    statuses: Counter[int] = Counter()
    with TestClient(app, raise_server_exceptions=False) as client:
        client.headers["Authorization"] = f"Bearer {token}"

        @SETTINGS
        @given(
            route=st.sampled_from(["remember", "recall", "facts/f1/dispute"]),
            body=st.one_of(
                JSONISH,
                st.fixed_dictionaries({"text": JSONISH}),
                st.fixed_dictionaries({"query": TEXT, "token_budget": JSONISH}),
            ).map(json.dumps)
            | st.just(nested(5000)),
        )
        def post(route: str, body: str) -> None:
            TRIED["http"] += 1
            r = client.post(
                f"/v1/scopes/user:a/{route}",
                content=body,
                headers={"Content-Type": "application/json"},
            )
            statuses[r.status_code] += 1
            assert r.status_code < 500, (r.status_code, r.text[:300])
            assert r.headers["content-type"].startswith("application/json")

        @SETTINGS
        @given(
            raw=st.binary(max_size=300), subject=st.text(max_size=200), scope=st.text(max_size=30)
        )
        def raw_requests(raw: bytes, subject: str, scope: str) -> None:
            TRIED["http"] += 1
            r = client.post(
                "/v1/scopes/user:a/remember",
                content=raw,
                headers={"Content-Type": "application/json"},
            )
            assert r.status_code < 500
            r = client.get(
                "/v1/scopes/user:a/history", params={"subject": subject, "relation": "x"}
            )
            assert r.status_code < 500
            r = client.get(f"/v1/scopes/{quote(scope, safe='') or 'x'}/facts")
            assert r.status_code < 500

        post()
        raw_requests()
    assert memory.store.check().ok


class Hangs:
    """A model that hangs past the timeout (bounded: released when the test ends)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def __call__(self, messages: list[dict[str, Any]], *, json_schema: Any = None) -> str:
        self.release.wait(5.0)
        return "{}"


GOOD = {"facts": [fact("user", "prefers", "tea", "The user prefers tea.")], "episodes": []}
MALFORMED: list[tuple[str, Any]] = [
    ("truncated", json.dumps(GOOD)[:40]),
    ("prose only", "Sure! The user likes tea. Let me know if you need anything else."),
    ("prose around json", "Here you go:\n```json\n" + json.dumps(GOOD) + "\n```\nAnything else?"),
    ("facts not a list", {"facts": {"subject": "user"}, "episodes": []}),
    ("wrong item types", {"facts": [1, "two", None, ["x"]], "episodes": [42]}),
    ("missing fields", {"facts": [{"subject": "user"}], "episodes": [{"kind": "nope"}]}),
    (
        "wrong value types",
        {"facts": [{**GOOD["facts"][0], "object": {"a": 1}, "volatility": 7, "supersedes": ["x"]}]},
    ),
    (
        "bad claimant and dates",
        {
            "facts": [{**GOOD["facts"][0], "claimant": None}],
            "episodes": [{"kind": "commitment", "text": "x", "due": "soon"}],
        },
    ),
    ("unknown supersedes id", {"facts": [{**GOOD["facts"][0], "supersedes": "f_nope"}]}),
    ("huge output", {"facts": [{**GOOD["facts"][0], "statement": "tea " * 250_000}]}),
    ("many facts", {"facts": [fact("user", "works_on", f"tokp{i}", f"p{i}") for i in range(3000)]}),
    ("nested deep", nested(3000)),
    ("not utf-8 clean", '\udcff\x00{"facts": [}'),
    ("empty", ""),
    ("array", [GOOD]),
    ("raises", RuntimeError("model exploded")),
    ("raises keyboard-ish", ConnectionError("connection reset")),
]


@pytest.mark.parametrize("name,output", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_model_output_is_reported_not_fatal(
    name: str, output: Any, tmp_path: Path
) -> None:
    # The same answer twice: the repair retry gets the same garbage.
    model = ScriptedModel([output, output])
    with Memory(
        tmp_path / "m.db", complete=model, embedder=HashEmbedder(), clock=FakeClock()
    ) as memory:
        report = memory.remember("I prefer tea, tokp1 and tokp2.", user_id="user:m")
        assert report.llm_calls <= 2
        (evidence,) = memory.store.read("user:m", kinds=["memory.evidence"])
        assert evidence.id == report.evidence_id
        assert report.error or report.invalid or report.facts or report.episodes, report
        assert memory.store.check().ok
        memory.recall("tea", user_id="user:m")


def test_model_that_hangs_past_its_timeout(tmp_path: Path) -> None:
    model = Hangs()
    try:
        with Memory(
            tmp_path / "m.db",
            complete=model,
            embedder=HashEmbedder(),
            config=MemoryConfig(llm_timeout_s=0.2),
        ) as memory:
            report = memory.remember("I prefer tea.", user_id="user:h")
            assert report.error and "0.2" in report.error and report.llm_calls == 1
            assert [e.id for e in memory.store.read("user:h", kinds=["memory.evidence"])] == [
                report.evidence_id
            ]
            assert memory.store.check().ok
    finally:
        model.release.set()


def test_figures() -> None:
    """Runs last in this module: the number of generated inputs tried (each test above fails
    on a crash, so no crash count is recorded here: it could only be a literal)."""
    record_figures(
        "bad_input",
        inputs=sum(TRIED.values()),
        by_entry=dict(TRIED),
        malformed_outputs=len(MALFORMED) + 1,
    )
