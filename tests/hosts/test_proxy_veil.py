"""Veil's working memory inside the REAL Claude Code and Codex: ``veil claude`` / ``veil codex``
start Veil's proxy in front of the scripted model server (which counts every request and
refuses one over its context limit, as the APIs do) and run the agent through it.

A session of 40+ reads of large files, in a budget far below keeping everything: the requests
the upstream gets stay within the budget instead of growing, old results arrive as one-line
stubs with ``veil://`` pointers, the model's ``expand`` of a pointer gives the original back,
the agent never compacts (its conversation only grows), and the agent's own transcript still
holds every full result. The same script without Veil overflows the limit (the baseline run).
"""

from __future__ import annotations

import itertools
import json
import random
import re
import sqlite3
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.hosts.binaries import CLAUDE_VERSIONS
from tests.hosts.relay import Relay
from tests.hosts.runners import ClaudeRunner, CodexRunner, private_env, run_process
from tests.hosts.veil_setup import VEIL_BIN
from veil.context.budget import request_budget
from veil.llm.scripted_server import ModelRequest, ScriptedServer, ToolUse, Turn

MODULES = 15
READS = 42
WINDOW = 50_000
LIMIT = 70_000
POINTER = re.compile(r"veil://warm/[A-Za-z0-9_\-]+")


def modules(repo: Path, count: int = MODULES) -> list[Path]:
    """``count`` files of about 8 KB each, every line unique (a marker per file)."""
    rnd = random.Random(7)
    paths = []
    for i in range(count):
        lines = [
            f"def function_{i}_{j}(x):\n"
            f"    return x * {rnd.randint(1, 10**6)}  # {rnd.random():.12f}\n"
            for j in range(120)
        ]
        path = repo / f"module_{i}.py"
        path.write_text(f"MARKER = 'module-{i}-marker'\n" + "".join(lines))
        paths.append(path)
    return paths


def proxy_records(repo: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(repo / ".veil" / "context.db") as conn:
        rows = conn.execute(
            "SELECT payload FROM tape_events WHERE kind = 'proxy.request' ORDER BY seq"
        ).fetchall()
    return [json.loads(r[0]) for r in rows]


def veil_stats(repo: Path, *args: str) -> dict[str, Any]:
    """``veil stats --json`` in ``repo``, as a person runs it."""
    out = subprocess.run([str(VEIL_BIN), "stats", "--json", *args], cwd=repo, check=True,
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    return json.loads(out.stdout)


@pytest.mark.parametrize("run_claude", CLAUDE_VERSIONS, indirect=True)  # newest and oldest
def test_veil_claude_keeps_a_long_session_within_its_window(
    run_claude: ClaudeRunner, agent_repo: Path
) -> None:
    # a file per read: Claude Code 2.1.197 answers a re-read of an unchanged file with "Wasted
    # call — file unchanged since your last Read" instead of its content (docs/claude-code.md)
    files = modules(agent_repo, READS)
    expanded: list[str] = []

    def turn(k: int) -> Any:
        def reply(request: ModelRequest) -> Turn:
            if k == READS:  # expand the first stub the model was shown
                for result in request.tool_results():
                    found = POINTER.search(result.text)
                    if found:
                        expanded.append(found.group(0))
                        return Turn(
                            "Restoring.",
                            (ToolUse("mcp__veil__expand", {"pointer": found.group(0)}),),
                        )
                return Turn("No stub.")
            path = files[k]
            return Turn(f"Reading {path.name}.", (ToolUse("Read", {"file_path": str(path)}),))

        return reply

    script = [turn(k) for k in range(READS + 1)] + [Turn("Done.")]
    wrapper = [str(VEIL_BIN), "claude", "--window", str(WINDOW)]
    with ScriptedServer(script, context_limit=LIMIT, cache=True, pairing=True) as server:
        run = run_claude(
            "read every module",
            cwd=agent_repo,
            base_url=server.url,
            env={"ENABLE_TOOL_SEARCH": "false"},
            wrapper=wrapper,
            timeout=300,
        )
    assert run.returncode == 0, run.describe()
    requests = server.model_requests
    assert all(r.status == 200 for r in server.requests), [r.error for r in server.requests]
    sizes = [r.usage.prompt_tokens for r in requests if r.usage is not None]
    assert max(sizes) < WINDOW, sizes  # the upstream's own count

    # without Veil the conversation would have grown past the limit (Veil's own figures)
    records = proxy_records(agent_repo)
    assert max(r["tokens_before"] for r in records) > LIMIT
    assert all(r["exact"] for r in records)  # every byte but the stubs as Claude Code sent it
    batches = sum(1 for r in records if r["evicted"])
    assert 0 < batches < len(records) // 2  # evictions in batches, not on every request
    # between batches requests went out ahead of Veil's bookkeeping, which always came to the
    # bytes they were sent as
    assert any(r.get("ahead") for r in records) and not any(r.get("diverged") for r in records)

    # old results arrive as stubs with pointers; the expand gives the original back
    last = requests[-1]
    stubs = [r for r in last.tool_results if r.text.startswith("[veil: Read")]
    assert len(stubs) >= READS // 2, [r.text[:80] for r in last.tool_results]
    assert expanded, "the model was never shown a stub"
    restored = last.tool_results[-1].text
    call = _call_of(requests, expanded[0])
    first_read = next(
        r.text for q in requests for r in q.tool_results
        if r.call_id == call and not r.text.startswith("[veil: ")
    )  # fmt: skip
    assert restored == first_read and "-marker'" in restored

    # Claude Code never compacted: every request holds all earlier messages
    counts = [len(r.body.get("messages", [])) for r in requests]
    assert counts == sorted(counts), counts
    # and its own transcript still has every full result
    assert run.transcript is not None
    transcript = run.transcript.read_text()
    assert all(f"module-{i}-marker" in transcript for i in range(READS))

    # the user saw what Veil did: a line before, a summary after; `veil stats` says the same,
    # and both agree with what the upstream received (its own count of every request)
    received = sum(r.usage.prompt_tokens for r in server.requests
                   if r.usage is not None and r.kind != "count_tokens")  # fmt: skip
    assert re.search(r"^veil claude: Veil's proxy http://127\.0\.0\.1:\d+ → http://127", run.stderr,
                     re.M), run.stderr  # fmt: skip
    assert f"budget {request_budget(WINDOW):,} tokens from --window {WINDOW:,}" in run.stderr
    forwarded = re.search(r"Veil forwarded ([\d,]+)", run.stderr)
    assert forwarded, run.stderr
    assert abs(int(forwarded.group(1).replace(",", "")) - received) <= 0.02 * received
    stats = veil_stats(agent_repo)
    assert abs(stats["total"]["tokens_sent"] - received) <= 0.02 * received
    assert stats["total"]["requests"] == len(
        [r for r in server.requests if r.kind != "count_tokens"]
    )
    assert stats["total"]["batches"] == batches and stats["total"]["expands"] == 1
    assert stats["total"]["tokens_agent"] > LIMIT and stats["total"]["stubs"] >= READS // 2
    (main,) = [c for c in stats["conversations"] if c["requests"] > READS]
    assert main["host"] == "claude" and run.session_id and main["agent_session"] == run.session_id
    assert f"resume  veil claude -- --resume {run.session_id}" in run.stderr
    log = (agent_repo / ".veil" / "proxy.log").read_text()
    assert log.count(" batch in ") == batches and "127.0.0.1: batch in proxy-" in log


def test_veil_claude_batches_keep_the_cache_and_the_model_finds_expand_by_tool_search(
    run_claude: ClaudeRunner, agent_repo: Path
) -> None:
    """Claude Code as it ships (tool search on: Veil's ``mcp__veil__expand`` is deferred). The
    proxy changes the conversation only in rare, deep batches; between them the provider reads
    the whole last request from its cache; the stubs name ``mcp__veil__expand``, which the
    model finds through ``ToolSearch`` and calls; Claude Code never compacts."""
    files = modules(agent_repo)
    expanded: list[str] = []

    def turn(k: int) -> Any:
        def reply(request: ModelRequest) -> Turn:
            if k == READS:  # a stub: find the tool it names, as a model would
                for result in request.tool_results():
                    found = POINTER.search(result.text)
                    if found and "mcp__veil__expand" in result.text:
                        expanded.append(found.group(0))
                        query = {"query": "select:mcp__veil__expand"}
                        return Turn("Finding it.", (ToolUse("ToolSearch", query),))
                return Turn("No stub.")
            if k == READS + 1:
                assert expanded, "the model was never shown a stub naming mcp__veil__expand"
                use = ToolUse("mcp__veil__expand", {"pointer": expanded[0]})
                return Turn("Restoring.", (use,))
            path = files[k % MODULES]
            return Turn(f"Reading {path.name}.", (ToolUse("Read", {"file_path": str(path)}),))

        return reply

    script = [turn(k) for k in range(READS + 2)] + [Turn("Done.")]
    wrapper = [str(VEIL_BIN), "claude", "--window", str(WINDOW)]
    with ScriptedServer(script, context_limit=LIMIT, cache=True, pairing=True) as server:
        run = run_claude("read every module", cwd=agent_repo, base_url=server.url,
                         wrapper=wrapper, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.describe()
    assert all(r.status == 200 for r in server.requests), [r.error for r in server.requests]
    main = [r for r in server.model_requests if r.usage is not None and r.tool_results]
    assert max(r.usage.prompt_tokens for r in main if r.usage) < WINDOW

    # batches: requests where a result the model was sent before is shown otherwise
    seen: dict[str, str] = {}
    batches: list[int] = []
    for k, request in enumerate(main):
        now = {r.call_id: r.text for r in request.tool_results}
        if any(call in now and now[call] != text for call, text in seen.items()):
            batches.append(k)
        seen = now
    assert 1 <= len(batches) <= len(main) // 4, batches
    assert all(b - a > 1 for a, b in itertools.pairwise(batches)), batches
    # between batches the provider reads the last request from its cache (but where Claude Code
    # changed its own tools: the tool search loaded mcp__veil__expand)
    reads = [
        (k, main[k].usage.cached_tokens, main[k - 1].usage.prompt_tokens)  # type: ignore[union-attr]
        for k in range(1, len(main))
        if k not in batches and main[k].body.get("tools") == main[k - 1].body.get("tools")
    ]
    assert len(reads) >= len(main) // 2
    assert all(cached >= 0.9 * before for _, cached, before in reads), reads
    # the model reached the deferred tool through tool search; the original came back
    restored = main[-1].tool_results[-1].text
    call = _call_of(server.model_requests, expanded[0])
    first = next(
        r.text for q in server.model_requests for r in q.tool_results
        if r.call_id == call and not r.text.startswith("[veil: ")
    )  # fmt: skip
    assert restored == first and "-marker'" in restored
    # Claude Code never compacted
    counts = [len(r.body.get("messages", [])) for r in main]
    assert counts == sorted(counts), counts


def thought(k: int) -> str:
    """A long assistant message, every sentence unique: the agent's own text, which the proxy
    forwards unchanged."""
    return " ".join(
        f"Step {k}, note {j}: module {k} looks fine at line {j * 7}." for j in range(60)
    )


def test_veil_claude_runs_no_batch_once_the_agents_own_text_outgrows_the_budget(
    run_claude: ClaudeRunner, agent_repo: Path
) -> None:
    """Long thoughts and reads: first the budget is met by batches; then the agent's own text
    (which the proxy never changes), the unread result and every other result as its stub
    exceed it. From there no batch runs — it would rewrite the provider's cache and take the
    results the model is reading without meeting the budget: the requests only grow, the
    provider reads each from its cache, the recent results stay whole, the log says it once,
    and nothing fails."""
    files = modules(agent_repo, 40)

    def turn(k: int) -> Any:
        path = files[k]
        return Turn(thought(k), (ToolUse("Read", {"file_path": str(path)}),))

    script = [turn(k) for k in range(40)] + [Turn("Done.")]
    wrapper = [str(VEIL_BIN), "claude", "--window", str(WINDOW)]
    with ScriptedServer(script, context_limit=3 * LIMIT, cache=True, pairing=True) as server:
        run = run_claude("read every module", cwd=agent_repo, base_url=server.url,
                         env={"ENABLE_TOOL_SEARCH": "false"}, wrapper=wrapper,
                         timeout=300)  # fmt: skip
    assert run.returncode == 0, run.describe()
    assert all(r.status == 200 for r in server.requests), [r.error for r in server.requests]
    records = [r for r in proxy_records(agent_repo) if r.get("results")]  # sparse fields
    budget = records[-1]["budget"]
    over = [k for k, r in enumerate(records) if r["tokens_sent"] > budget]
    assert over and len(over) >= 8, [r["tokens_sent"] for r in records]
    first = over[0]
    assert over == list(range(first, len(records)))  # once there, it stays there
    assert any(r.get("batch") for r in records[:first])  # batches met the budget before
    assert not any(r.get("batch") or r["evicted"] for r in records[first:])
    # the provider reads each of those requests from its cache (Claude Code moves its own
    # cache marker: the last request's prefix up to it)
    main = [r for r in server.model_requests if r.usage is not None and r.tool_results]
    sizes = [r.usage.prompt_tokens for r in main if r.usage]
    late = [k for k in range(1, len(main)) if sizes[k - 1] > budget]
    assert len(late) >= 5, sizes
    for k in late:
        usage = main[k].usage
        assert usage is not None and usage.cached_tokens >= 0.9 * sizes[k - 1], (k, usage)
    # the results read since stay whole (before, each was stubbed right after it was read)
    last = main[-1].tool_results
    assert not any(r.text.startswith("[veil: ") for r in last[-6:]), [r.text[:40] for r in last]
    assert any(r.text.startswith("[veil: ") for r in last)  # the batches' stubs, unchanged
    # Claude Code never compacted, and the user was told once
    counts = [len(r.body.get("messages", [])) for r in main]
    assert counts == sorted(counts), counts
    log = (agent_repo / ".veil" / "proxy.log").read_text()
    assert log.count("no batch can meet the budget") == 1, log
    # the exit summary and `veil stats` count those requests
    stats = veil_stats(agent_repo)
    assert stats["total"]["unmet"] == len(over), stats["total"]
    said = re.search(r"(\d+) requests over the budget that no batch could meet", run.stderr)
    assert said and int(said.group(1)) == len(over), run.stderr


def _write_inputs(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each ``Write`` call's input in a request's body, by call id, in order."""
    out: dict[str, dict[str, Any]] = {}
    for message in body.get("messages", []):
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use" and block.get("name") == "Write":
                out[block["id"]] = block["input"]
    return out


def test_veil_claude_elides_old_write_inputs_and_the_model_expands_one(
    run_claude: ClaudeRunner, agent_repo: Path
) -> None:
    """Claude Code writes 30 files of about 8 KB: each ``Write`` carries the whole file in its
    input, and its result is one short line, so no batch of results can meet the budget. The
    proxy elides the old Writes' contents instead — the keys and the path stay, the content is
    one marker naming ``mcp__veil__expand`` and a pointer, the same bytes in every later
    request, the last three whole — and the model brings one back with the expand tool. The
    files on disk are whole, Claude Code never compacts, and the user is told."""
    rnd = random.Random(11)
    contents = [
        "".join(f"VALUE_{k}_{j} = {rnd.randint(1, 10**9)}  # {rnd.random():.10f}\n"
                for j in range(180))
        for k in range(30)
    ]  # fmt: skip
    paths = [agent_repo / f"gen_{k}.py" for k in range(30)]
    expanded: list[tuple[str, str]] = []  # (call id, pointer)

    def turn(k: int) -> Any:
        def reply(request: ModelRequest) -> Turn:
            if k == len(paths):  # a marker: bring that input back, as a model would
                for call_id, value in _write_inputs(request.body).items():
                    found = POINTER.search(str(value.get("content", "")))
                    if found:
                        expanded.append((call_id, found.group(0)))
                        use = ToolUse("mcp__veil__expand", {"pointer": found.group(0)})
                        return Turn("Restoring the first module.", (use,))
                return Turn("Nothing was elided.")
            write = ToolUse("Write", {"file_path": str(paths[k]), "content": contents[k]})
            return Turn(f"Writing {paths[k].name}.", (write,))

        return reply

    script = [turn(k) for k in range(len(paths) + 1)] + [Turn("Done.")]
    wrapper = [str(VEIL_BIN), "claude", "--window", str(WINDOW)]
    with ScriptedServer(script, context_limit=3 * LIMIT, cache=True, pairing=True) as server:
        run = run_claude("write the modules", cwd=agent_repo, base_url=server.url,
                         env={"ENABLE_TOOL_SEARCH": "false"}, wrapper=wrapper,
                         allowed_tools=("Write", "mcp__veil__expand"),
                         timeout=300)  # fmt: skip
    assert run.returncode == 0, run.describe()
    assert all(r.status == 200 for r in server.requests), [r.error for r in server.requests]
    assert [p.read_text() for p in paths] == contents  # Claude Code wrote every file whole
    main = [r for r in server.model_requests if r.usage is not None and r.tool_results]
    last = _write_inputs(main[-1].body)
    assert len(last) == len(paths)
    elided = {c: v for c, v in last.items() if v["content"] != contents[list(last).index(c)]}
    assert len(elided) >= 10, len(elided)
    for value in elided.values():
        assert set(value) == {"file_path", "content"}  # the keys stay, the path too
        assert str(value["file_path"]).endswith(".py")
        assert "input elided; call mcp__veil__expand with veil://warm/" in value["content"]
    # the calls of the last three assistant messages stay whole; once elided, the same bytes
    # in every later request
    seen: dict[str, Any] = {}
    for request in main:
        recent = [m for m in request.body["messages"] if m["role"] == "assistant"][-3:]
        ids = {b["id"] for m in recent for b in m["content"] if b.get("type") == "tool_use"}
        for call_id, value in _write_inputs(request.body).items():
            if call_id in ids:
                assert "input elided" not in str(value), call_id
            if call_id in seen:
                assert value == seen[call_id], call_id
            if call_id in elided and value == elided[call_id]:
                seen[call_id] = value
    # every batch of elisions met the budget; Claude Code never compacted
    records = [r for r in proxy_records(agent_repo) if r.get("results")]
    budget = records[-1]["budget"]
    assert all(r["tokens_sent"] <= budget for r in records if r.get("inputs_new")), records
    counts = [len(r.body.get("messages", [])) for r in main]
    assert counts == sorted(counts), counts
    # the model expanded one: the whole input came back
    assert expanded, "the model was never shown an elided input"
    call_id, _ = expanded[0]
    restored = main[-1].tool_results[-1].text
    assert contents[list(last).index(call_id)].splitlines()[5] in restored.replace("\\n", "\n")
    # the user is told: the proxy's log, the exit summary, `veil stats`
    log = (agent_repo / ".veil" / "proxy.log").read_text()
    assert "old tool inputs elided" in log, log
    assert re.search(r"\d+ old tool inputs? elided", run.stderr), run.stderr
    assert veil_stats(agent_repo)["total"]["inputs"] == len(elided)


def test_veil_claude_shadow_forwards_every_body_as_claude_code_sent_it(
    run_claude: ClaudeRunner, agent_repo: Path
) -> None:
    """``veil claude --shadow``: the same long session, with a recording relay on each side of
    Veil's proxy (one between Claude Code and the proxy, one between the proxy and the model
    server). The provider receives exactly the bodies Claude Code sent; the exit summary and
    ``veil stats`` say what Veil would have sent and done."""
    files = modules(agent_repo)
    script = [
        Turn(f"Reading {files[k % MODULES].name}.",
             (ToolUse("Read", {"file_path": str(files[k % MODULES])}),))
        for k in range(READS)
    ] + [Turn("Done.")]  # fmt: skip
    target = agent_repo.parent / "proxy-url"
    agent = agent_repo.parent / "claude-behind-a-relay"
    server = ScriptedServer(script, context_limit=10 * LIMIT, cache=True, pairing=True)
    with server, Relay(server.url) as upstream, Relay(target_file=target) as client_side:
        # the "binary" veil claude starts: notes the proxy URL Veil gave it, then runs the real
        # Claude Code against the client-side relay, which forwards to that URL
        agent.write_text(
            "#!/bin/sh\n"
            f'printf %s "$ANTHROPIC_BASE_URL" > {target}\n'
            f'ANTHROPIC_BASE_URL={client_side.url} exec {run_claude.binary} "$@"\n'
        )
        agent.chmod(0o755)
        shadowed = ClaudeRunner(agent, run_claude.home)
        wrapper = [str(VEIL_BIN), "claude", "--shadow", "--window", str(WINDOW)]
        no_search = {"ENABLE_TOOL_SEARCH": "false"}
        run = shadowed("read every module", cwd=agent_repo, base_url=upstream.url,
                       env=no_search, wrapper=wrapper, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.describe()
    sent, received = client_side.posted(), upstream.posted()
    assert len(sent) >= READS and sorted(sent) == sorted(received)
    assert not any(b"[veil: " in body for body in received)
    assert "SHADOW" in run.stderr, run.stderr
    stats = veil_stats(agent_repo)
    total = stats["total"]
    agent_tokens = sum(r.usage.prompt_tokens for r in server.requests
                       if r.usage is not None and r.kind != "count_tokens")  # fmt: skip
    assert all(c["shadow"] for c in stats["conversations"])
    # what Claude Code sent is what the provider counted; Veil would have sent far less
    assert abs(total["tokens_agent"] - agent_tokens) <= 0.02 * agent_tokens, (total, agent_tokens)
    assert total["batches"] >= 1 and total["stubs"] >= READS // 2
    assert total["tokens_sent"] < 0.8 * total["tokens_agent"]
    assert total["cost_estimated"] <= total["cost_without_veil_estimated"]


def _call_of(requests: list[Any], pointer: str) -> str:
    """The call whose result the stub with ``pointer`` replaced."""
    for request in requests:
        for result in request.tool_results:
            if pointer in result.text and result.text.startswith("[veil: "):
                return result.call_id
    raise AssertionError(f"no stub shows {pointer}")


def test_without_veil_the_same_session_overflows(
    run_claude: ClaudeRunner, agent_repo: Path
) -> None:
    files = modules(agent_repo)
    script = [
        Turn(
            f"Reading {files[k % MODULES].name}.",
            (ToolUse("Read", {"file_path": str(files[k % MODULES])}),),
        )
        for k in range(READS)
    ] + [Turn("Done.")]
    with ScriptedServer(script, context_limit=LIMIT, cache=True, pairing=True) as server:
        run = run_claude("read every module", cwd=agent_repo, base_url=server.url,
                         env={"ENABLE_TOOL_SEARCH": "false"}, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.describe()
    refused = [r for r in server.requests if r.status == 400]
    assert refused and "prompt is too long" in (refused[0].error or "")


def _codex_read(request: ModelRequest, path: Path) -> ToolUse:
    """Codex's shell tool for the model at hand (``exec_command`` or ``shell``)."""
    if "exec_command" in request.tool_names():
        return ToolUse("exec_command", {"cmd": f"cat {path.name}"})
    return ToolUse("shell", {"command": ["cat", path.name]})


def _codex_script(files: list[Path], expanded: list[str], *, expand: bool) -> list[Any]:
    def turn(k: int) -> Any:
        def reply(request: ModelRequest) -> Turn:
            if k == READS:  # expand the first stub the model was shown
                for result in request.tool_results():
                    found = POINTER.search(result.text)
                    if found and expand:
                        expanded.append(found.group(0))
                        use = ToolUse("mcp__veil.expand", {"pointer": found.group(0)})
                        return Turn("Restoring.", (use,))
                return Turn("No stub.")
            path = files[k % MODULES]
            return Turn(f"Reading {path.name}.", (_codex_read(request, path),))

        return reply

    return [turn(k) for k in range(READS + 1)] + [Turn("Done.")]


def test_veil_codex_keeps_a_long_session_within_its_window(
    run_codex: CodexRunner, agent_repo: Path
) -> None:
    """The same session through ``veil codex``: Codex sends the Responses API with the whole
    conversation on every request; the proxy stubs old outputs in place, and Veil's MCP server
    (added for the run, as nothing is installed) answers the model's expand."""
    files = modules(agent_repo)
    expanded: list[str] = []
    wrapper = [str(VEIL_BIN), "codex", "--window", str(WINDOW)]
    script = _codex_script(files, expanded, expand=True)
    with ScriptedServer(script, context_limit=LIMIT, cache=True) as server:
        run = run_codex("read every module", cwd=agent_repo, base_url=server.url,
                        model="gpt-4.1", wrapper=wrapper, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.describe()
    requests = server.model_requests
    assert all(r.status == 200 for r in server.requests), [r.error for r in server.requests]
    sizes = [r.usage.prompt_tokens for r in requests if r.usage is not None]
    assert max(sizes) < WINDOW, sizes

    records = proxy_records(agent_repo)
    assert max(r["tokens_before"] for r in records) > LIMIT
    assert all(r["exact"] for r in records)
    batches = sum(1 for r in records if r["evicted"])
    assert 0 < batches < len(records) // 2
    assert any(r.get("ahead") for r in records) and not any(r.get("diverged") for r in records)

    last = requests[-1]
    stubs = [r for r in last.tool_results if r.text.startswith("[veil: ")]
    assert len(stubs) >= READS // 2, [r.text[:80] for r in last.tool_results]
    assert expanded, "the model was never shown a stub"
    call = _call_of(requests, expanded[0])
    first_output = next(
        r.text for q in requests for r in q.tool_results
        if r.call_id == call and not r.text.startswith("[veil: ")
    )  # fmt: skip
    restored = last.tool_results[-1].text
    # Codex prefixes an MCP tool's answer with its own lines; the original follows, byte for byte
    assert "-marker'" in first_output and first_output in restored

    # Codex never compacted: its input only grows
    counts = [len(r.body.get("input", [])) for r in requests]
    assert counts == sorted(counts), counts
    # and its own rollout still has every full output
    assert run.rollout is not None
    rollout = run.rollout.read_text()
    assert all(f"module-{i}-marker" in rollout for i in range(MODULES))

    # the summary at exit and `veil stats` agree with what the upstream counted
    received = sum(r.usage.prompt_tokens for r in server.requests if r.usage is not None)
    forwarded = re.search(r"^veil codex: .*\n  tokens  Codex sent [\d,]+; Veil forwarded ([\d,]+)",
                          run.stderr, re.M)  # fmt: skip
    assert forwarded, run.stderr
    assert abs(int(forwarded.group(1).replace(",", "")) - received) <= 0.02 * received
    stats = veil_stats(agent_repo)
    assert abs(stats["total"]["tokens_sent"] - received) <= 0.02 * received
    assert stats["total"]["batches"] == batches
    assert {c["host"] for c in stats["conversations"]} == {"codex"}
    assert "resume  veil codex -- resume " in run.stderr


def _commands(body: dict[str, Any]) -> dict[str, str]:
    """Each shell call's arguments (a JSON text) in a Responses body, by call id, in order."""
    return {
        item["call_id"]: item["arguments"]
        for item in body.get("input", [])
        if isinstance(item, dict)
        and item.get("type") == "function_call"
        and item.get("name") in ("exec_command", "shell")
    }


def test_veil_codex_elides_old_shell_inputs(run_codex: CodexRunner, agent_repo: Path) -> None:
    """Codex writes 24 files of about 8 KB with its shell tool (a heredoc: the whole file is
    in the call's ``arguments``, a JSON text) and each output is short. The proxy elides the
    old calls' long strings inside that JSON text (it stays JSON with its keys, each long
    string one marker naming Veil's expand tool and a pointer), the same bytes in every later
    request, the recent ones whole; the files on disk are whole, the splice is exact, and the
    model's expand brings a whole input back."""
    rnd = random.Random(13)
    names = [f"gen_{k}.py" for k in range(24)]
    bodies = [
        "".join(f"VALUE_{k}_{j} = {rnd.randint(1, 10**9)}  # {rnd.random():.10f}\n"
                for j in range(180))
        for k in range(len(names))
    ]  # fmt: skip
    expanded: list[tuple[str, str]] = []

    def turn(k: int) -> Any:
        def reply(request: ModelRequest) -> Turn:
            if k == len(names):
                for call_id, arguments in _commands(request.body).items():
                    found = POINTER.search(arguments)
                    if found:
                        expanded.append((call_id, found.group(0)))
                        use = ToolUse("mcp__veil.expand", {"pointer": found.group(0)})
                        return Turn("Restoring the first command.", (use,))
                return Turn("Nothing was elided.")
            heredoc = f"cat > {names[k]} <<'EOF'\n{bodies[k]}EOF"
            if "exec_command" in request.tool_names():
                use = ToolUse("exec_command", {"cmd": heredoc})
            else:
                use = ToolUse("shell", {"command": ["bash", "-lc", heredoc]})
            return Turn(f"Writing {names[k]}.", (use,))

        return reply

    script = [turn(k) for k in range(len(names) + 1)] + [Turn("Done.")]
    wrapper = [str(VEIL_BIN), "codex", "--window", str(WINDOW)]
    with ScriptedServer(script, context_limit=3 * LIMIT, cache=True) as server:
        run = run_codex("write the modules", cwd=agent_repo, base_url=server.url,
                        model="gpt-4.1", wrapper=wrapper, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.describe()
    assert all(r.status == 200 for r in server.requests), [r.error for r in server.requests]
    assert [(agent_repo / n).read_text() for n in names] == bodies  # Codex ran every command
    requests = [r for r in server.model_requests if _commands(r.body)]
    last = _commands(requests[-1].body)
    assert len(last) == len(names)
    elided = {c: a for c, a in last.items() if "input elided" in a}
    assert len(elided) >= 8, len(elided)
    for arguments in elided.values():
        value = json.loads(arguments)  # still JSON, with its keys
        assert set(value) in ({"cmd"}, {"command"}), value
        assert POINTER.search(arguments) and "expand" in arguments
    assert not set(list(last)[-2:]) & set(elided)  # the newest stay whole
    seen: dict[str, str] = {}
    for request in requests:  # once elided, the same bytes in every later request
        for call_id, arguments in _commands(request.body).items():
            if call_id in seen:
                assert arguments == seen[call_id], call_id
            if "input elided" in arguments:
                seen[call_id] = arguments
    records = [r for r in proxy_records(agent_repo) if r.get("results")]
    budget = records[-1]["budget"]
    assert all(r["tokens_sent"] <= budget for r in records if r.get("inputs_new")), records
    assert all(r["exact"] for r in records)
    counts = [len(r.body.get("input", [])) for r in requests]
    assert counts == sorted(counts), counts  # Codex never compacted
    assert expanded, "the model was never shown an elided input"
    restored = server.model_requests[-1].tool_results[-1].text
    index = list(last).index(expanded[0][0])
    assert bodies[index].splitlines()[7] in restored
    assert veil_stats(agent_repo)["total"]["inputs"] == len(elided)


def test_without_veil_the_same_codex_session_overflows(
    run_codex: CodexRunner, agent_repo: Path
) -> None:
    files = modules(agent_repo)
    script = _codex_script(files, [], expand=False)
    with ScriptedServer(script, context_limit=LIMIT, cache=True) as server:
        run = run_codex("read every module", cwd=agent_repo, base_url=server.url,
                        model="gpt-4.1", timeout=300)  # fmt: skip
    refused = [r for r in server.requests if r.status == 400]
    assert refused, [r.status for r in server.requests]
    assert run.returncode != 0 or "context" in run.stdout + run.stderr


def test_veil_codex_on_its_built_in_provider_goes_through_the_proxy(
    run_codex: CodexRunner, agent_repo: Path
) -> None:
    """An API-key user of Codex's built-in OpenAI provider (no ``model_provider`` in its
    configuration, ``OPENAI_BASE_URL`` naming the provider): the pinned Codex reads its base URL
    from ``openai_base_url``, so ``veil codex`` sets that for the run — every model request
    reaches the upstream through Veil's proxy."""
    codex_home = run_codex.home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text('model = "gpt-4.1"\n')
    files = modules(agent_repo)[:3]
    script = [Turn(f"Reading {p.name}.", (ToolUse("shell", {"command": ["cat", p.name]}),))
              for p in files] + [Turn("Done.")]  # fmt: skip
    with ScriptedServer(script, cache=True) as server:
        env = private_env(run_codex.home, {
            "CODEX_HOME": str(codex_home), "OPENAI_API_KEY": "sk-scripted-dummy",
            "OPENAI_BASE_URL": f"{server.url}/v1", "VEIL_CODEX": str(run_codex.binary),
        })  # fmt: skip
        command = [str(VEIL_BIN), "codex", "--", "exec", "--json", "--skip-git-repo-check",
                   "--dangerously-bypass-approvals-and-sandbox", "read the files"]  # fmt: skip
        code, _, stderr, _ = run_process(command, cwd=agent_repo, env=env, timeout=120,
                                         label="codex built-in provider")  # fmt: skip
    assert code == 0, stderr[-2000:]
    assert server.model_requests, "no request reached the upstream"
    records = proxy_records(agent_repo)
    assert len(records) == len(server.model_requests), (len(records), stderr[-1000:])
    assert re.search(r"^veil codex: Veil's proxy http://127\.0\.0\.1:\d+ → http://127", stderr,
                     re.M), stderr  # fmt: skip


def test_two_veil_claude_sessions_in_one_repository_never_block_or_mix(
    run_claude: ClaudeRunner, agent_repo: Path
) -> None:
    """Two ``veil claude`` runs at once in one repository (one ``.veil/context.db``), each with
    its own model server and its own files: both finish, both stay within the budget, and
    neither's requests carry the other's results — not even in a stub."""
    files = modules(agent_repo)
    halves = {"a": files[:7], "b": files[7:14]}
    runs: dict[str, Any] = {}
    servers: dict[str, ScriptedServer] = {}

    def session(name: str) -> None:
        mine = halves[name]
        script = [Turn(f"Reading {p.name}.", (ToolUse("Read", {"file_path": str(p)}),))
                  for p in mine * 3] + [Turn("Done.")]  # fmt: skip
        runner = ClaudeRunner(run_claude.binary, run_claude.home.parent / f"home-{name}")
        with ScriptedServer(script, context_limit=LIMIT, cache=True, pairing=True) as server:
            servers[name] = server
            runs[name] = runner(f"read the files ({name})", cwd=agent_repo, base_url=server.url,
                                env={"ENABLE_TOOL_SEARCH": "false"},
                                wrapper=[str(VEIL_BIN), "claude", "--window", str(WINDOW)],
                                timeout=300)  # fmt: skip

    threads = [threading.Thread(target=session, args=(name,)) for name in halves]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=400)
    for name, other in (("a", "b"), ("b", "a")):
        run = runs[name]
        assert run.returncode == 0, run.describe()
        requests = servers[name].model_requests
        assert max(r.usage.prompt_tokens for r in requests if r.usage) < WINDOW
        sent = "\n".join(r.text for q in requests for r in q.tool_results)
        theirs = [f"module-{files.index(p)}-marker" for p in halves[other]]
        assert not any(marker in sent for marker in theirs), name
        assert any(r.text.startswith("[veil: Read") for r in requests[-1].tool_results), name
    stats = veil_stats(agent_repo)
    sessions = {c["agent_session"] for c in stats["conversations"] if c["requests"] > 7}
    assert sessions == {runs["a"].session_id, runs["b"].session_id}
