"""Veil's working memory inside the REAL Gemini CLI (npm ``@google/gemini-cli``, the pin of
``tests/hosts/binaries.py``): ``veil gemini`` starts Veil's proxy in front of the scripted model
server (which counts every request and refuses one over its context limit, as the API does) and
runs Gemini CLI through it, as a person runs it (the real ``veil`` command, a subprocess).

A session of ~50 reads of 8 KB files, in a budget far below keeping everything: the requests
the upstream gets stay within the budget, old ``functionResponse`` parts arrive as one-line
stubs with ``veil://`` pointers, the model's ``mcp_veil_expand`` of a pointer gives the
original back byte for byte, Gemini CLI neither compresses its chat nor masks a tool output,
and its own chat file still holds every full result; the exit summary and ``veil stats`` agree
with what the upstream counted. The same session without Veil grows past the limit and has its
old outputs masked by Gemini CLI — so the checks above can fail. ``--shadow`` forwards every
body as Gemini CLI sent it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.hosts.gemini_runner import GeminiRun, GeminiRunner
from tests.hosts.relay import Relay
from tests.hosts.test_proxy_veil import modules, proxy_records, veil_stats
from tests.hosts.veil_setup import VEIL_BIN
from veil.context.budget import request_budget
from veil.hosts.gemini_cli import COMPRESSION_MARKER, MASKING_TAG
from veil.llm.scripted_server import ModelRequest, RecordedRequest, ScriptedServer, ToolUse, Turn

READS = 48
"""8 KB each: ~96k tokens of outputs, past Gemini CLI's masking point (50k kept + 30k)."""
WINDOW = 50_000
LIMIT = 70_000
POINTER = re.compile(r"veil://warm/[A-Za-z0-9_\-]+")
LOW_COMPRESSION = {"model": {"compressionThreshold": 0.06}}
"""Gemini CLI would compress at 6 % of its 1,048,576-token limit, ~62,900 tokens (below LIMIT),
counted as the last answer's ``promptTokenCount`` — but only what came before the latest user
prompt: a headless run of one prompt and its calls has nothing it can compress."""
LOOP = ":streamGenerateContent"


def script(files: list[Path], expanded: list[str], *, expand: bool) -> list[Any]:
    """Read every file (by its path relative to the repository, as the model writes it), then
    expand the first stub the model was shown, then stop."""

    def turn(k: int) -> Any:
        def reply(request: ModelRequest) -> Turn:
            if k == len(files):
                for result in request.tool_results():
                    found = POINTER.search(result.text)
                    if found and expand and "mcp_veil_expand" in result.text:
                        expanded.append(found.group(0))
                        use = ToolUse("mcp_veil_expand", {"pointer": found.group(0)})
                        return Turn("Restoring.", (use,))
                return Turn("No stub.")
            use = ToolUse("read_file", {"file_path": files[k].name})
            return Turn(f"Reading {files[k].name}.", (use,))

        return reply

    return [turn(k) for k in range(len(files) + 1)] + [Turn("Done.")]


def loop_requests(server: ScriptedServer) -> list[RecordedRequest]:
    """The agent loop's requests (streamed, with tools), answered from the script."""
    return [r for r in server.model_requests if LOOP in r.path]


def compressions(server: ScriptedServer) -> list[RecordedRequest]:
    """Gemini CLI's chat-compression requests (the last content asks for a state snapshot)."""
    return [r for r in server.requests
            if COMPRESSION_MARKER in json.dumps((r.body.get("contents") or [{}])[-1])]  # fmt: skip


def masked(server: ScriptedServer) -> list[RecordedRequest]:
    """Requests carrying a tool output Gemini CLI masked itself."""
    return [r for r in server.requests if f"<{MASKING_TAG}>" in json.dumps(r.body)]


def first_result(requests: list[RecordedRequest], pointer: str) -> str:
    """The original text of the result whose stub showed ``pointer``."""
    call = next(
        r.call_id for q in requests for r in q.tool_results
        if pointer in r.text and r.text.startswith("[veil: ")
    )  # fmt: skip
    return next(
        r.text for q in requests for r in q.tool_results
        if r.call_id == call and not r.text.startswith("[veil: ")
    )  # fmt: skip


def veil_gemini(*extra: str) -> list[str]:
    return [str(VEIL_BIN), "gemini", *extra, "--window", str(WINDOW)]


def test_veil_gemini_keeps_a_long_session_within_its_window(
    run_gemini: GeminiRunner, agent_repo: Path
) -> None:
    files = modules(agent_repo, READS)
    expanded: list[str] = []
    with ScriptedServer(script(files, expanded, expand=True), context_limit=LIMIT, cache=True,
                        pairing=True) as server:  # fmt: skip
        run = run_gemini("read every module", cwd=agent_repo, base_url=server.url,
                         wrapper=veil_gemini(), settings=LOW_COMPRESSION, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.describe()
    assert all(r.status == 200 for r in server.requests), [r.error for r in server.requests]
    requests = loop_requests(server)
    assert len(requests) == READS + 2, len(requests)
    names = requests[0].tool_names
    assert "mcp_veil_expand" in names and "mcp_veil_hook" not in names, " ".join(names)
    sizes = [r.usage.prompt_tokens for r in requests if r.usage is not None]
    assert max(sizes) < WINDOW, sizes  # the upstream's own count

    # without Veil the conversation would have grown past the limit (Veil's own figures)
    records = proxy_records(agent_repo)
    assert max(r["tokens_before"] for r in records) > LIMIT
    assert all(r["exact"] for r in records)  # every byte but the stubs as Gemini CLI sent it
    batches = sum(1 for r in records if r["evicted"])
    assert 0 < batches < len(records) // 4  # evictions in batches, not on every request

    # old results arrive as stubs naming mcp_veil_expand; the expand gives the original back
    last = requests[-1]
    stubs = [r for r in last.tool_results if r.text.startswith("[veil: read_file")]
    assert len(stubs) >= READS // 2, [r.text[:80] for r in last.tool_results]
    assert all("mcp_veil_expand veil://warm/" in r.text for r in stubs), stubs[0].text
    assert expanded, "the model was never shown a stub naming mcp_veil_expand"
    restored = last.tool_results[-1].text
    original = first_result(requests, expanded[0])
    # Gemini CLI wraps every MCP tool's answer (its wrapUntrusted); inside, the original
    assert "-marker'" in original
    assert restored == f"<untrusted_context>\n{original}\n</untrusted_context>", restored[:200]

    # Gemini CLI neither compressed nor masked an output (switched off for the run; alone it
    # masks this session: the next test; what it sent, before Veil's stubs, is checked
    # under --shadow below): every request holds all earlier contents
    assert not compressions(server) and not masked(server)
    counts = [len(r.body["contents"]) for r in requests]
    assert counts == sorted(counts), counts
    # its own chat file still has every full result
    assert run.chat is not None
    chat = run.chat.read_text()
    assert all(f"module-{i}-marker" in chat for i in range(READS))

    # what the user saw: a line before, a summary after, and `veil stats` agree with what the
    # upstream counted
    received = sum(r.usage.prompt_tokens for r in server.requests
                   if r.usage is not None and r.kind != "count_tokens")  # fmt: skip
    assert re.search(r"^veil gemini: Veil's proxy http://127\.0\.0\.1:\d+ → http://127",
                     run.stderr, re.M), run.stderr  # fmt: skip
    assert f"budget {request_budget(WINDOW):,} tokens from --window {WINDOW:,}" in run.stderr
    summary = re.search(r"^veil gemini: \d+ requests.*\n  tokens  Gemini CLI sent [\d,]+; "
                        r"Veil forwarded ([\d,]+)", run.stderr, re.M)  # fmt: skip
    assert summary, run.stderr[-3000:]
    assert abs(int(summary.group(1).replace(",", "")) - received) <= 0.02 * received
    assert "0 compactions by Gemini CLI" in run.stderr
    stats = veil_stats(agent_repo)
    assert abs(stats["total"]["tokens_sent"] - received) <= 0.02 * received
    assert stats["total"]["batches"] == batches and stats["total"]["expands"] == 1
    assert {c["host"] for c in stats["conversations"]} == {"gemini"}


def test_without_veil_the_same_session_overflows_and_gemini_cli_masks_its_outputs(
    run_gemini: GeminiRunner, agent_repo: Path
) -> None:
    """Gemini CLI alone, its defaults: the conversation grows past the limit (the upstream
    refuses it) and Gemini CLI masks old outputs itself."""
    files = modules(agent_repo, READS)
    with ScriptedServer(script(files, [], expand=False), cache=True, pairing=True) as server:
        run = run_gemini("read every module", cwd=agent_repo, base_url=server.url, timeout=300)
    assert run.returncode == 0, run.describe()
    sizes = [r.usage.prompt_tokens for r in loop_requests(server) if r.usage is not None]
    assert max(sizes) > LIMIT, sizes
    assert masked(server), "Gemini CLI masked nothing: the check under Veil would mean nothing"


def test_veil_gemini_resumes_a_session_within_its_window(
    run_gemini: GeminiRunner, agent_repo: Path
) -> None:
    """Half the files, then ``veil gemini -- --resume latest`` and the other half: the run's own
    home links ``~/.gemini/tmp``, so Gemini CLI finds its session; it sends every earlier
    ``functionResponse`` twice (0.61), and the copy goes as a short note, not in full, so the
    resumed session stays within the window too."""
    files = modules(agent_repo, READS)
    half = READS // 2
    runs: list[GeminiRun] = []
    servers: list[ScriptedServer] = []
    for task, part, args in (("read the first half", files[:half], ()),
                             ("read the rest", files[half:], ("--resume", "latest"))):  # fmt: skip
        reads = [Turn(f"Reading {p.name}.", (ToolUse("read_file", {"file_path": p.name}),))
                 for p in part] + [Turn("Done.")]  # fmt: skip
        with ScriptedServer(reads, context_limit=LIMIT, cache=True) as server:
            runs.append(run_gemini(task, cwd=agent_repo, base_url=server.url, args=args,
                                   wrapper=veil_gemini(), timeout=300))  # fmt: skip
        servers.append(server)
        assert runs[-1].returncode == 0, runs[-1].describe()
    assert runs[1].session_id == runs[0].session_id
    resumed = loop_requests(servers[1])
    assert len(resumed) == half + 1 and len(resumed[0].body["contents"]) > READS
    sizes = [r.usage.prompt_tokens for s in servers for r in loop_requests(s) if r.usage]
    assert max(sizes) < WINDOW, sizes
    last = json.dumps(resumed[-1].body)
    assert "the same as its result above" in last
    # no earlier result twice in full: each marker of the first half at most once
    assert all(last.count(f"module-{i}-marker") <= 1 for i in range(half))
    assert any(r.text.startswith("[veil: read_file") for r in resumed[-1].tool_results)


def posted(relay: Relay) -> list[bytes]:
    """The model requests' bodies a relay saw."""
    return [body for path, body in relay.bodies if "GenerateContent" in path]


def test_veil_gemini_shadow_forwards_every_body_as_gemini_cli_sent_it(
    run_gemini: GeminiRunner, agent_repo: Path
) -> None:
    """``veil gemini --shadow`` between two recording relays: the provider receives exactly the
    bodies Gemini CLI sent; the summary and ``veil stats`` say what Veil would have done."""
    files = modules(agent_repo, READS)
    target = agent_repo.parent / "proxy-url"
    agent = agent_repo.parent / "gemini-behind-a-relay"
    server = ScriptedServer(script(files, [], expand=False), cache=True, pairing=True)
    with server, Relay(server.url) as upstream, Relay(target_file=target) as client_side:
        agent.write_text(
            "#!/bin/sh\n"
            f'printf %s "$GOOGLE_GEMINI_BASE_URL" > {target}\n'
            f'GOOGLE_GEMINI_BASE_URL={client_side.url} exec {run_gemini.binary} "$@"\n'
        )
        agent.chmod(0o755)
        shadowed = GeminiRunner(agent, run_gemini.home)
        run: GeminiRun = shadowed("read every module", cwd=agent_repo, base_url=upstream.url,
                                  wrapper=veil_gemini("--shadow"), timeout=300)  # fmt: skip
    assert run.returncode == 0, run.describe()
    sent, received = posted(client_side), posted(upstream)
    assert len(sent) >= READS and sorted(sent) == sorted(received)
    assert not any(b"[veil: " in body for body in received)
    # as Gemini CLI sent them: nothing masked (alone it masks this session), nothing compressed
    assert not masked(server) and not compressions(server)
    assert "SHADOW" in run.stderr, run.stderr
    total = veil_stats(agent_repo)["total"]
    assert total["batches"] >= 1 and total["stubs"] >= READS // 2
    assert total["tokens_sent"] < 0.8 * total["tokens_agent"]
