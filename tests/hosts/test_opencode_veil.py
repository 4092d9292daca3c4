"""Veil's working memory inside the REAL opencode (npm ``opencode-ai``, pinned in
``tests/hosts/binaries.py``): ``veil opencode`` starts Veil's proxy in front of the scripted
model server (which counts every request, simulates the prompt cache and refuses one over its
context limit, as the APIs do) and runs ``opencode run --format json`` through it, its
``anthropic`` provider pointed at the proxy and Veil's MCP server added for the run — both
through ``OPENCODE_CONFIG_CONTENT``, nothing written.

The session of ``tests/hosts/test_proxy_veil.py``: 42 reads of 8 KB files, then an expand of
the first stub. Through Veil every request stays within the budget, old results arrive as
stubs naming ``veil_expand``, the expand gives the original back, opencode never compacts and
its own record keeps every full result; without Veil the same script overflows the limit and
opencode compacts; ``--shadow`` forwards every body as opencode sent it.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from tests.hosts.opencode_runner import OpencodeRunner
from tests.hosts.relay import Relay
from tests.hosts.test_proxy_veil import LIMIT, POINTER, READS, WINDOW, modules, veil_stats
from tests.hosts.veil_setup import VEIL_BIN
from veil.context.budget import request_budget
from veil.hosts import opencode as host
from veil.llm.scripted_server import ModelRequest, ScriptedServer, ToolUse, Turn

COMPACTION = host.HOST.compaction_markers[0]


def _script(files: list[Path], expanded: list[str] | None) -> list[Any]:
    """A read of each file; with ``expanded``, then an expand of the first stub the model was
    shown (its pointer noted there); then a closing text."""

    def read(path: Path) -> Turn:
        return Turn(f"Reading {path.name}.", (ToolUse("read", {"filePath": str(path)}),))

    def expand(request: ModelRequest) -> Turn:
        assert expanded is not None
        for result in request.tool_results():
            found = POINTER.search(result.text)
            if found and host.EXPAND in result.text:
                expanded.append(found.group(0))
                return Turn("Restoring.", (ToolUse(host.EXPAND, {"pointer": found.group(0)}),))
        return Turn("No stub.")

    turns: list[Any] = [read(path) for path in files]
    if expanded is not None:
        turns.append(expand)
    return [*turns, Turn("Done.")]


def _proxy_records(repo: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(repo / ".veil" / "context.db") as conn:
        rows = conn.execute(
            "SELECT payload FROM tape_events WHERE kind = 'proxy.request' ORDER BY seq"
        ).fetchall()
    return [json.loads(r[0]) for r in rows]


def _first_shown(requests: list[Any], pointer: str) -> str:
    """The full text of the result whose stub showed ``pointer``, as the model first saw it."""
    call = next(
        r.call_id for q in requests for r in q.tool_results
        if pointer in r.text and r.text.startswith("[veil: ")
    )  # fmt: skip
    return next(
        r.text for q in requests for r in q.tool_results
        if r.call_id == call and not r.text.startswith("[veil: ")
    )  # fmt: skip


def test_veil_opencode_keeps_a_long_session_within_its_window(
    run_opencode: OpencodeRunner, agent_repo: Path
) -> None:
    files = modules(agent_repo, READS)
    expanded: list[str] = []
    wrapper = [str(VEIL_BIN), "opencode", "--window", str(WINDOW)]
    with ScriptedServer(_script(files, expanded), context_limit=LIMIT, cache=True,
                        pairing=True) as server:  # fmt: skip
        run = run_opencode("read every module", cwd=agent_repo, base_url=server.url,
                           wrapper=wrapper, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.describe()
    assert all(r.status == 200 for r in server.requests), [r.error for r in server.requests]
    requests = server.model_requests
    assert {r.body.get("model") for r in requests} == {host.DEFAULT_MODEL}  # opencode's own pick
    assert host.EXPAND in requests[0].tool_names  # Veil's MCP server, added for the run
    assert "veil_hook" not in requests[0].tool_names  # the hooks' tool, never the model's
    sizes = [r.usage.prompt_tokens for r in requests if r.usage is not None]
    assert max(sizes) < WINDOW, sizes  # the upstream's own count

    # without Veil the conversation would have grown past the limit (Veil's own figures)
    records = _proxy_records(agent_repo)
    assert max(r["tokens_before"] for r in records) > LIMIT
    assert all(r["exact"] for r in records)  # every byte but the stubs as opencode sent it
    batches = sum(1 for r in records if r["evicted"])
    assert 0 < batches < len(records) // 2

    # old results arrive as stubs naming veil_expand; the expand gives the original back
    last = requests[-1]
    stubs = [r for r in last.tool_results if r.text.startswith("[veil: read")]
    assert len(stubs) >= READS // 2, [r.text[:80] for r in last.tool_results]
    assert all(host.EXPAND in s.text for s in stubs)
    assert expanded, "the model was never shown a stub"
    first = _first_shown(requests, expanded[0])
    restored = last.tool_results[-1].text
    assert "-marker'" in first and restored == first

    # opencode never compacted: every request holds all earlier messages, none asks for a summary
    counts = [len(r.body.get("messages", [])) for r in requests]
    assert counts == sorted(counts), counts
    assert not any(COMPACTION in json.dumps(r.body) for r in server.requests)
    # and its own record of the session keeps every full result
    outputs = "\n".join(str(p["state"].get("output", "")) for p in run.tool_parts())
    assert all(f"module-{i}-marker" in outputs for i in range(READS))

    # what the user sees: the line before, the summary after, in agreement with the upstream
    start = r"^veil opencode: Veil's proxy http://127\.0\.0\.1:\d+ → http://127\.0\.0\.1:\d+/v1;"
    assert re.search(start, run.stderr, re.M), run.stderr
    assert f"budget {request_budget(WINDOW):,} tokens from --window {WINDOW:,}" in run.stderr
    summary = re.search(r"^veil opencode: \d+ requests in \d+ conversations?, (\d+) tool results "
                        r"recognised\n  tokens  opencode sent [\d,]+; Veil forwarded ([\d,]+)",
                        run.stderr, re.M)  # fmt: skip
    assert summary, run.stderr
    assert int(summary.group(1)) >= READS
    received = sum(r.usage.prompt_tokens for r in server.requests if r.usage is not None)
    assert abs(int(summary.group(2).replace(",", "")) - received) <= 0.02 * received
    assert "0 compactions by opencode" in run.stderr and "1 expanded by the model" in run.stderr
    # the session opencode names in its x-session-id header resumes through Veil
    session = requests[-1].headers.get("x-session-id")
    assert session and f"  resume  veil opencode -- --session {session}" in run.stderr
    stats = veil_stats(agent_repo)
    assert stats["total"]["batches"] == batches and stats["total"]["expands"] == 1
    assert {c["host"] for c in stats["conversations"]} == {"opencode"}


def test_without_veil_the_same_opencode_session_overflows(
    run_opencode: OpencodeRunner, agent_repo: Path
) -> None:
    """The same reads against opencode alone: the conversation grows past the limit, the
    provider refuses it as too long, and opencode compacts (its summary request)."""
    files = modules(agent_repo, READS)
    with ScriptedServer(_script(files, None), context_limit=LIMIT, cache=True,
                        pairing=True) as server:  # fmt: skip
        run = run_opencode("read every module", cwd=agent_repo, base_url=server.url,
                           timeout=300)  # fmt: skip
    refused = [r for r in server.requests if r.status == 400]
    assert refused, (run.describe(), [r.status for r in server.requests])
    assert any(COMPACTION in json.dumps(r.body) for r in server.requests), run.describe()


def test_veil_opencode_shadow_forwards_every_body_as_opencode_sent_it(
    run_opencode: OpencodeRunner, agent_repo: Path
) -> None:
    """``veil opencode --shadow`` between two recording relays: the provider receives exactly
    the bodies opencode sent; the summary and ``veil stats`` say what Veil would have done."""
    files = modules(agent_repo, READS)
    target = agent_repo.parent / "proxy-url"
    agent = agent_repo.parent / "opencode-behind-a-relay"
    server = ScriptedServer(_script(files, None), context_limit=10 * LIMIT, cache=True,
                            pairing=True)  # fmt: skip
    with server, Relay(server.url) as upstream, Relay(target_file=target) as client_side:
        # the "binary" veil opencode starts: notes the proxy's URL from the configuration Veil
        # gave it, then runs the real opencode against the client-side relay, which forwards there
        real = str(run_opencode.binary)
        agent.write_text(
            f"#!{VEIL_BIN.parent / 'python'}\n"
            "import json, os, sys\n"
            "config = json.loads(os.environ['OPENCODE_CONFIG_CONTENT'])\n"
            "options = config['provider']['anthropic']['options']\n"
            f"open({str(target)!r}, 'w').write(options['baseURL'].removesuffix('/v1'))\n"
            f"options['baseURL'] = {client_side.url + '/v1'!r}\n"
            "os.environ['OPENCODE_CONFIG_CONTENT'] = json.dumps(config)\n"
            f"os.execv({real!r}, [{real!r}, *sys.argv[1:]])\n"
        )
        agent.chmod(0o755)
        shadowed = OpencodeRunner(agent, run_opencode.home)
        wrapper = [str(VEIL_BIN), "opencode", "--shadow", "--window", str(WINDOW)]
        run = shadowed("read every module", cwd=agent_repo, base_url=upstream.url,
                       wrapper=wrapper, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.describe()
    sent, received = client_side.posted(), upstream.posted()
    assert len(sent) >= READS and sorted(sent) == sorted(received)
    assert not any(b"[veil: " in body for body in received)
    assert "SHADOW" in run.stderr, run.stderr
    total = veil_stats(agent_repo)["total"]
    assert total["batches"] >= 1 and total["stubs"] >= READS // 2
    assert total["tokens_sent"] < 0.8 * total["tokens_agent"]
