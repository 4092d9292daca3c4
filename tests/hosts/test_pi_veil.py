"""Veil's working memory inside the REAL pi (npm ``@mariozechner/pi-coding-agent`` 0.73.1):
``veil pi`` starts Veil's proxy in front of the scripted model server (which counts every
request and refuses one over its context limit, as the APIs do) and pi with Veil's extension,
which points pi's provider at the proxy and gives the model ``veil_expand``.

The same session as Claude Code's and Codex's in ``test_proxy_veil.py`` — 42 reads of 8 KB
files, then an expand of the first stub — in a 50,000-token window: the requests the upstream
gets stay within it, old results arrive as stubs naming ``veil_expand``, the expand answers
with the original bytes, pi never compacts and its own session file keeps every full result.
Without Veil the same script is refused as too long (and pi compacts); with ``--shadow`` the
provider receives exactly the bodies pi sent.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.hosts.pi_runner import PiRun, PiRunner
from tests.hosts.relay import Relay
from tests.hosts.runners import private_env, run_process
from tests.hosts.test_proxy_veil import POINTER, modules, proxy_records, veil_stats
from tests.hosts.veil_setup import VEIL_BIN
from veil.context.budget import request_budget
from veil.llm.scripted_server import ModelRequest, ScriptedServer, ToolUse, Turn

READS = 42
WINDOW = 50_000
LIMIT = 70_000
EXPAND = "veil_expand"


@pytest.fixture
def run_pi(pi: Path, tmp_path: Path) -> PiRunner:
    """``run_pi(task, *, cwd, base_url, args=(), env=None, timeout=180, wrapper=()) -> PiRun``."""
    return PiRunner(pi, tmp_path / "pi-home")


def _script(files: list[Path], expanded: list[str], *, expand: bool) -> list[Any]:
    """A read of each file in turn (pi's ``read {path}``), then — with ``expand`` — a call of
    ``veil_expand`` on the first stub the model was shown, then a closing text."""

    def turn(k: int) -> Any:
        def reply(request: ModelRequest) -> Turn:
            if k == READS:
                for result in request.tool_results():
                    found = POINTER.search(result.text)
                    if found and expand:
                        expanded.append(found.group(0))
                        use = ToolUse(EXPAND, {"pointer": found.group(0)})
                        return Turn("Restoring.", (use,))
                return Turn("No stub.")
            path = files[k % len(files)]
            return Turn(f"Reading {path.name}.", (ToolUse("read", {"path": path.name}),))

        return reply

    return [turn(k) for k in range(READS + 1)] + [Turn("Done.")]


def _call_of(requests: list[Any], pointer: str) -> str:
    """The call whose result the stub with ``pointer`` replaced."""
    for request in requests:
        for result in request.tool_results:
            if pointer in result.text and result.text.startswith("[veil: "):
                return result.call_id
    raise AssertionError(f"no stub shows {pointer}")


def _compactions(run: PiRun) -> list[str]:
    """pi's own compaction events in its JSON output."""
    return [kind for kind in run.kinds() if "compaction" in kind]


def test_veil_pi_keeps_a_long_session_within_its_window(run_pi: PiRunner, agent_repo: Path) -> None:
    files = modules(agent_repo, READS)
    expanded: list[str] = []
    wrapper = [str(VEIL_BIN), "pi", "--window", str(WINDOW)]
    script = _script(files, expanded, expand=True)
    with ScriptedServer(script, context_limit=LIMIT, cache=True, pairing=True) as server:
        run = run_pi("read every module", cwd=agent_repo, base_url=server.url,
                     wrapper=wrapper, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.describe()
    requests = server.model_requests
    assert all(r.status == 200 for r in server.requests), [r.error for r in server.requests]
    assert len(requests) == READS + 2, len(requests)  # every request went through the proxy
    sizes = [r.usage.prompt_tokens for r in requests if r.usage is not None]
    assert max(sizes) < WINDOW, sizes  # the upstream's own count

    # the model was offered Veil's expand beside pi's own tools
    offered = [t["name"] for t in requests[0].body["tools"]]
    assert offered == ["read", "bash", "edit", "write", EXPAND], offered

    # without Veil the conversation would have grown past the limit (Veil's own figures)
    records = proxy_records(agent_repo)
    assert len(records) == len(requests)
    assert max(r["tokens_before"] for r in records) > LIMIT
    assert all(r["exact"] for r in records)  # every byte but the stubs as pi sent it
    batches = sum(1 for r in records if r["evicted"])
    assert 0 < batches < len(records) // 2  # evictions in batches, not on every request

    # old results arrive as stubs naming veil_expand; the expand gives the original back
    last = requests[-1]
    stubs = [r for r in last.tool_results if r.text.startswith("[veil: read")]
    assert len(stubs) >= READS // 2, [r.text[:80] for r in last.tool_results]
    assert all(f"{EXPAND} veil://" in s.text for s in stubs), stubs[0].text
    assert expanded, "the model was never shown a stub"
    call = _call_of(requests, expanded[0])
    original = next(
        r.text for q in requests for r in q.tool_results
        if r.call_id == call and not r.text.startswith("[veil: ")
    )  # fmt: skip
    restored = last.tool_results[-1]
    assert restored.text == original and "-marker'" in original  # byte for byte
    assert restored.call_id != call  # the answer of the expand call, not the stub's place

    # pi never compacted: no compaction event, every request holds all earlier messages
    assert not _compactions(run), run.kinds()
    counts = [len(r.body.get("messages", [])) for r in requests]
    assert counts == sorted(counts), counts
    # and its own session file still has every full result
    assert run.session_file is not None
    session = run.session_file.read_text()
    assert all(f"module-{i}-marker" in session for i in range(READS))

    # the user saw what Veil did: a line before, a summary after, and `veil stats` agrees
    # with what the upstream received (its own count of every request)
    received = sum(r.usage.prompt_tokens for r in server.requests if r.usage is not None)
    assert re.search(r"^veil pi: Veil's proxy http://127\.0\.0\.1:\d+ → http://127", run.stderr,
                     re.M), run.stderr  # fmt: skip
    assert f"budget {request_budget(WINDOW):,} tokens from --window {WINDOW:,}" in run.stderr
    forwarded = re.search(r"^veil pi: .*\n  tokens  pi sent [\d,]+; Veil forwarded ([\d,]+)",
                          run.stderr, re.M)  # fmt: skip
    assert forwarded, run.stderr
    assert abs(int(forwarded.group(1).replace(",", "")) - received) <= 0.02 * received
    assert "1 expanded by the model" in run.stderr and "0 compactions by pi" in run.stderr
    stats = veil_stats(agent_repo)
    assert abs(stats["total"]["tokens_sent"] - received) <= 0.02 * received
    assert stats["total"]["requests"] == len(requests)
    assert stats["total"]["batches"] == batches and stats["total"]["expands"] == 1
    assert {c["host"] for c in stats["conversations"]} == {"pi"}


def test_without_veil_the_same_pi_session_overflows(run_pi: PiRunner, agent_repo: Path) -> None:
    """The baseline: pi alone sends the whole conversation until the provider refuses it as
    too long; pi then compacts (its overflow recovery)."""
    files = modules(agent_repo, READS)
    script = _script(files, [], expand=False)
    with ScriptedServer(script, context_limit=LIMIT, cache=True, pairing=True) as server:
        run = run_pi("read every module", cwd=agent_repo, base_url=server.url, timeout=300)
    refused = [r for r in server.requests if r.status == 400]
    assert refused and "prompt is too long" in (refused[0].error or ""), run.describe()
    assert _compactions(run), run.kinds()


def test_veil_pi_shadow_forwards_every_body_as_pi_sent_it(
    run_pi: PiRunner, agent_repo: Path
) -> None:
    """``veil pi --shadow`` with a recording relay on each side of Veil's proxy: the provider
    receives exactly the bodies pi sent; the exit summary and ``veil stats`` say what Veil
    would have sent."""
    files = modules(agent_repo)
    script = _script(files, [], expand=False)
    target = agent_repo.parent / "proxy-url"
    agent = agent_repo.parent / "pi-behind-a-relay"
    server = ScriptedServer(script, context_limit=10 * LIMIT, cache=True, pairing=True)
    with server, Relay(server.url) as upstream, Relay(target_file=target) as client_side:
        # the "binary" veil pi starts: notes the proxy URL Veil gave its extension, then runs
        # the real pi against the client-side relay, which forwards to that URL
        agent.write_text(
            "#!/bin/sh\n"
            f'printf %s "$VEIL_PI_BASE_URL" > {target}\n'
            f'VEIL_PI_BASE_URL={client_side.url} exec {run_pi.binary} "$@"\n'
        )
        agent.chmod(0o755)
        shadowed = PiRunner(agent, run_pi.home)
        wrapper = [str(VEIL_BIN), "pi", "--shadow", "--window", str(WINDOW)]
        run = shadowed("read every module", cwd=agent_repo, base_url=upstream.url,
                       wrapper=wrapper, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.describe()
    sent, received = client_side.posted(), upstream.posted()
    assert len(sent) == READS + 1 and sent == received  # 42 reads, then the closing text
    assert not any(b"[veil: " in body for body in received)
    assert "SHADOW" in run.stderr, run.stderr
    total = veil_stats(agent_repo)["total"]
    assert total["batches"] >= 1 and total["stubs"] >= READS // 2
    assert total["tokens_sent"] < 0.8 * total["tokens_agent"]


def test_veil_pi_without_a_provider_says_how_to_name_one(tmp_path: Path, agent_repo: Path) -> None:
    """pi with no provider named, no default in its settings and no key: one line with the
    fix, exit 2, nothing started."""
    env = private_env(tmp_path / "empty-home", {"VEIL_PI": "/bin/true"})
    command = [str(VEIL_BIN), "pi", "--", "-p", "x"]
    code, stdout, stderr, _ = run_process(
        command, cwd=agent_repo, env=env, timeout=60, label="veil pi no provider"
    )
    assert code == 2 and not stdout, (code, stdout, stderr)
    assert stderr.strip().splitlines() == [
        "veil pi: which provider does pi use? name it: veil pi -- --provider NAME --model ID (or "
        f"set defaultProvider in {tmp_path / 'empty-home' / '.pi' / 'agent' / 'settings.json'})"
    ]
