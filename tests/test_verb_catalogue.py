"""The verb catalogue (:mod:`veil.verbs`) is the one definition of every memory verb: each
surface — the agent's tools, ``veil mcp``, the HTTP API, ``veil memory``, the pydantic-ai and
Agents SDK adapters — offers its verbs with the catalogue's names, descriptions, schemas and
defaults, and none takes what it binds (whose memory, whose word) as an argument."""

from __future__ import annotations

import argparse
import inspect
from pathlib import Path
from typing import Any, cast, get_args

import pytest

from veil.agent.harness import VeilHarness
from veil.context.items import TURN_KINDS
from veil.convergence.attempt import ACTIONS
from veil.convergence.record import AttemptLog
from veil.memory import Memory
from veil.server.mcp_server import Binding, build_server
from veil.server.openapi import openapi_document
from veil.tape.sqlite import SQLiteStore
from veil.testing import HashEmbedder, ScriptedModel
from veil.verbs import CATALOGUE, SURFACES, ArgumentError, Verb, offered
from veil.verbs.attempt_verbs import ActionName
from veil.verbs.memory_verbs import RECALL_TOKEN_BUDGET
from veil.verbs.signature import parameters_of
from veil.verbs.working_verbs import TurnKindName

BOUND = {"user_id", "scope", "author", "actor", "session_id"}


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    with Memory(tmp_path / "m.db", complete=ScriptedModel([]), embedder=HashEmbedder()) as m:
        yield m


def test_no_verb_takes_what_a_surface_binds() -> None:
    for verb in CATALOGUE.values():
        assert not BOUND & set(verb.schema["properties"]), verb.name
        assert all(p["description"] for p in verb.schema["properties"].values()), verb.name


def test_every_surface_offers_only_catalogue_verbs() -> None:
    for surface, names in SURFACES.items():
        assert names and set(names) <= set(CATALOGUE), surface
        assert len(set(names)) == len(names), surface


def test_one_default_recall_budget_the_librarys_own() -> None:
    recall = CATALOGUE["recall"]
    assert recall.param("token_budget").default == RECALL_TOKEN_BUDGET
    for method in (Memory.recall, Memory.arecall):
        assert inspect.signature(method).parameters["token_budget"].default == RECALL_TOKEN_BUDGET


def test_spelt_out_choices_agree_with_their_owners() -> None:
    assert get_args(TurnKindName) == tuple(TURN_KINDS)
    assert get_args(ActionName) == tuple(ACTIONS)


def test_agent_tools_are_the_catalogues(tmp_path: Path, memory: Memory) -> None:
    store = SQLiteStore(":memory:", embedder=HashEmbedder())
    harness = VeilHarness(store=store, memory=memory, embedder=HashEmbedder())
    tools = {t.spec.name: t.spec for t in harness.tools()}
    assert list(tools) == [f"veil_{v.name}" for v in offered("agent")]
    for verb in offered("agent"):
        spec = tools[f"veil_{verb.name}"]
        assert (spec.description, spec.parameters) == (verb.description, verb.schema)
    store.close()


def test_mcp_tools_are_the_catalogues(tmp_path: Path, memory: Memory) -> None:
    log = AttemptLog(memory.store, "user:a", "s1")
    server = build_server(memory, Binding("user:a", "user"), log)
    listed = cast(
        dict[str, Any], server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    )
    tools = {t["name"]: t for t in listed["result"]["tools"]}
    expected = [v for v in offered("mcp") if v.name != "expand"]  # expand: with a working memory
    assert list(tools) == [v.name for v in expected]
    for verb in expected:
        assert tools[verb.name]["description"] == verb.description
        assert tools[verb.name]["inputSchema"] == verb.schema
        assert tools[verb.name]["annotations"]["readOnlyHint"] == verb.read_only


def _model_properties(document: dict[str, Any], name: str) -> dict[str, Any]:
    return document["components"]["schemas"][name]["properties"]


def test_http_bodies_and_queries_are_the_catalogues() -> None:
    document = openapi_document()
    bodies = {"remember": "RememberBody", "recall": "RecallBody", "dispute": "DisputeBody"}
    for name, model in bodies.items():
        properties = _model_properties(document, model)
        verb = CATALOGUE[name]
        expected = [p for p in verb.params if p.name != "fact_id"]
        assert list(properties) == [p.name for p in expected], name
        for p in expected:
            assert properties[p.name]["description"] == p.description
            assert properties[p.name].get("default") == (None if p.required else p.default)
    for name, path in (("facts", "/facts"), ("history", "/history")):
        operation = document["paths"][f"/v1/scopes/{{scope}}{path}"]["get"]
        queried = {q["name"]: q for q in operation["parameters"] if q["in"] == "query"}
        assert list(queried) == [p.name for p in CATALOGUE[name].params], name
        for p in CATALOGUE[name].params:
            assert queried[p.name]["description"] == p.description
    for name in SURFACES["http"]:
        described = [
            op.get("description")
            for item in document["paths"].values()
            for op in item.values()
            if op.get("operationId", "").startswith(name)
        ]
        assert CATALOGUE[name].description in described, name


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # pyright: ignore[reportPrivateUsage]
    return cast(dict[str, argparse.ArgumentParser], action.choices)


def test_cli_actions_are_the_catalogues() -> None:
    from veil.cli.parser import build_parser

    actions = _subparsers(_subparsers(build_parser())["memory"])
    for verb in offered("cli"):
        action = actions[verb.name]
        by_dest = {a.dest: a for a in action._actions}  # pyright: ignore[reportPrivateUsage]
        for p in verb.params:
            argument = by_dest[p.name]
            assert (argument.help or "").startswith(p.description), (verb.name, p.name)
            if not p.required:
                expected = None if p.kind == "texts" else p.default
                assert argument.default == expected, (verb.name, p.name)
        assert action.description == verb.description


def test_adapters_tools_are_the_catalogues(memory: Memory) -> None:
    from veil.integrations.openai_agents import memory_tools
    from veil.integrations.pydantic_ai import memory_toolset

    sdk = {t.name: t for t in memory_tools(memory, user_id="u1")}
    toolset = memory_toolset(memory, user_id="u1")
    pai = {name: t.tool_def for name, t in toolset.tools.items()}
    for verb in (CATALOGUE["recall"], CATALOGUE["remember"]):
        name = f"veil_{verb.name}"
        assert (sdk[name].description, sdk[name].params_json_schema) == (
            verb.description,
            verb.schema,
        )
        assert (pai[name].description, pai[name].parameters_json_schema) == (
            verb.description,
            verb.schema,
        )


def test_arguments_are_checked_by_the_catalogue_and_named() -> None:
    recall: Verb = CATALOGUE["recall"]
    with pytest.raises(ArgumentError, match="token_budget must be a whole number"):
        recall.call(Any, Any, {"query": "x", "token_budget": "5"})  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="unknown argument 'user_id'"):
        recall.call(Any, Any, {"query": "x", "user_id": "someone:else"})  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match=r"as_of: time .* needs a timezone"):
        recall.call(Any, Any, {"query": "x", "as_of": "2024-01-01T00:00:00"})  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="token_budget must be at most 100000"):
        recall.call(Any, Any, {"query": "x", "token_budget": 10**9})  # type: ignore[arg-type]


def test_a_verb_without_described_arguments_is_refused_when_defined() -> None:
    def undocumented(on: object, who: object, *, query: str) -> None:
        """Does something."""

    with pytest.raises(TypeError, match="query has no line under Args"):
        parameters_of(undocumented)


DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
BEGIN, END = "<!-- verbs:begin -->", "<!-- verbs:end -->"


def verb_table() -> str:
    """The verb × surface table of docs/architecture.md, from :data:`SURFACES`."""
    surfaces = list(SURFACES)
    lines = [
        "| verb | needs | " + " | ".join(surfaces) + " |",
        "|---|---|" + "---|" * len(surfaces),
    ]
    for verb in CATALOGUE.values():
        marks = ["✓" if verb.name in SURFACES[s] else "" for s in surfaces]
        needs = " or ".join(sorted(verb.needs))
        lines.append(f"| `{verb.name}` | {needs} | " + " | ".join(marks) + " |")
    return "\n".join(lines)


def test_the_documented_verb_table_is_the_catalogue() -> None:
    text = DOC.read_text()
    documented = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    stale = "docs/architecture.md's verb table is stale; paste:\n"
    assert documented == verb_table(), stale + verb_table()
