"""What Veil's Claude Code hooks cost per tool call, measured in the real Claude Code.

Run from the repository root::

    python -m benchmarks.hook_latency            # 40 tool calls per session, 3 configurations
    python -m benchmarks.hook_latency --quick    # 8 tool calls, mcp_tool and command only

The pinned Claude Code binary (``tests/hosts/binaries.py``; installed into the shared cache on
first use) runs headless (``claude -p``) on a private home, offline, against Veil's scripted
model server on 127.0.0.1 (:class:`veil.llm.scripted_server.ScriptedServer`). Veil is installed
the way a person installs it (``veil install claude-code`` as a subprocess, the workspace
trusted, two facts seeded in the project's memory). The scripted model makes the same tool
calls in every configuration, in cycles of eight: a failing check (``python3 -B check.py
VK``), a ``Read`` of the module, an ``Edit`` that does not fix it, the check failing again, the
fixing ``Edit``, the check passing, a ``Write`` of a notes file and ``git status``. Each cycle
ends in a pass, so the convergence monitor never reaches level 3 and stops the session early.
Every call must succeed or fail as scripted, else the run is refused.

Configurations, one session each, in the same run on the same machine:

- ``mcp_tool``: what ``veil install claude-code`` installs — UserPromptSubmit, PreToolUse,
  PostToolUse and PostToolUseFailure are ``mcp_tool`` hooks answered by the warm
  ``veil mcp --project`` server Claude Code already runs; PreCompact (once per compaction) is
  a command; there is no SessionStart hook (the briefing comes with the first prompt).
- ``command``: the same handlers as one process per hook — every event a command hook
  ``<venv>/bin/veil hook claude-code EVENT`` with the same matchers, and the timeouts the
  command hooks had before the ``mcp_tool`` ones (10 s; 15 s for UserPromptSubmit). The MCP
  server stays configured as in ``mcp_tool``.
- ``none`` (full run only): the MCP server, no hooks: the floor of the model-request gap.

What is measured, from Claude Code's own debug log (``--debug-file``):

- a command hook's duration is the one Claude Code logs (``Hooks: PreToolUse:Bash [<command>]
  finished with status 0 (33ms)``);
- an ``mcp_tool`` hook's is the time from ``Hooks: mcp_tool calling veil/hook`` to the line
  reporting its outcome (``"Hook PreToolUse:Bash (PreToolUse) success:…``; or ``error``,
  ``cancelled``), at the log's millisecond resolution;
- per tool call, the sum of the hooks attached to it (PreToolUse + PostToolUse or
  PostToolUseFailure), matched through the log's ``tool_dispatch_start``/``_end`` lines;
- the gap between consecutive model requests at the scripted server (the model's reply, the
  hooks, the tool, Claude Code's own work), whose difference to ``none`` is the hooks' cost
  seen end to end.

Veil installs no SessionStart hook, so a session start costs nothing; for the command entry
point that remains (a person's own SessionStart hook, or PreCompact), ``veil hook claude-code
SessionStart`` is run as a subprocess with a ``startup`` payload (the handler returns at once)
and a ``resume`` payload of the session just recorded, round-robin with ``python -c pass`` as
the floor, after one discarded warm-up of each.

The machine's cores and load average are recorded before and after: hooks share this machine
with Claude Code, the tools and whatever else runs, and the tails show it. Results:
``benchmarks/results/hook_latency.json`` (``hook_latency-quick.json`` with ``--quick``) and a
markdown table on stdout. Without the Claude Code binary (no npm, no registry) nothing is
measured: the command says ``REAL AGENT NOT RUN`` and exits 2.

The session (repository, scripted tool calls, each configuration's hooks) is
:mod:`benchmarks.hooks.session`; reading the debug log, :mod:`benchmarks.hooks.debug_log`; the
tables, :mod:`benchmarks.lib.report.hook_latency`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.hosts.binaries import CLAUDE_CODE, AgentUnavailable, install
from tests.hosts.runners import ClaudeRunner, private_env
from tests.hosts.veil_setup import VEIL_BIN, seed_memory

from benchmarks.hooks.debug_log import TOOL_EVENTS, parse_debug_log, tool_call_sums, tool_ids
from benchmarks.hooks.session import FACTS, PROMPT, configure, make_repo, script, steps
from benchmarks.lib import timing
from benchmarks.lib.machine import describe, load_average, source_state
from benchmarks.lib.report.hook_latency import table
from benchmarks.lib.results import save
from veil.llm.scripted_server import ScriptedServer

FULL_CALLS, QUICK_CALLS = 40, 8
FULL_SESSION_START_RUNS, QUICK_SESSION_START_RUNS = 15, 3
FULL_CONFIGS: tuple[str, ...] = ("none", "mcp_tool", "command")
QUICK_CONFIGS: tuple[str, ...] = ("mcp_tool", "command")
GAVE_UP = "no answer within"
"""What ``veil hook`` (0.9 s) and the ``hook`` tool of ``veil mcp`` (0.8 s; 4 s for prompts)
say when a handler missed its deadline and the hook answered nothing."""
TARGET_P95_MS = 50.0
"""The per-tool-call p95 Veil aims for on this 2-core machine (the table says whether it held)."""

Json = dict[str, Any]


def summary(values: Sequence[float]) -> Json:
    """n, p50, p95 (linear interpolation between ranks) and max, in the values' unit, to one
    decimal (``None`` when there are no values)."""
    return timing.summary(values, ("n", "p50", "p95", "max"), digits=1)


# ---- one session -----------------------------------------------------------------------------


def run_session(claude: Path, config: str, base: Path, calls: int) -> Json:
    """One Claude Code session of ``calls`` tool calls under ``config``'s hooks."""
    root = base / config
    repo, home, state = root / "repo", root / "home", root / "state"
    make_repo(repo, calls)
    home.mkdir(parents=True)
    kinds = configure(config, repo, home, state)
    seed_memory(repo, FACTS)
    plan = steps(repo, calls)
    arrivals: list[float] = []
    debug = root / "debug.log"
    with ScriptedServer(script(plan, arrivals)) as server:
        run = ClaudeRunner(claude, home)(
            PROMPT,
            cwd=repo,
            base_url=server.url,
            env={"ENABLE_TOOL_SEARCH": "false"},
            args=["--debug-file", str(debug)],
            timeout=300,
        )
        requests = server.model_requests
    if run.returncode != 0 or len(requests) != len(plan) + 1:
        raise RuntimeError(
            f"{config}: Claude Code made {len(requests)} model requests, expected "
            f"{len(plan) + 1}:\n{run.describe()}"
        )
    results = requests[-1].tool_results
    errors = [r.is_error for r in results]
    expected = [s.fails for s in plan]
    if errors != expected:
        raise RuntimeError(f"{config}: tool results failed as {errors}, scripted {expected}")
    log = debug.read_text()
    hook_runs = parse_debug_log(log, kinds)
    by_event: Json = {}
    for event in ("UserPromptSubmit", *TOOL_EVENTS):
        mine = [r for r in hook_runs if r.event == event]
        if not mine:
            continue
        by_event[event] = {
            "kind": mine[0].kind,
            **summary([r.ms for r in mine if r.ms is not None]),
            "not_success": sum(r.status != "success" for r in mine),
        }
    sums = tool_call_sums(hook_runs)
    ups = [r.ms for r in hook_runs if r.event == "UserPromptSubmit" and r.ms is not None]
    gaps = [(b - a) * 1e3 for a, b in itertools.pairwise(arrivals)]
    first_body = json.dumps(requests[0].body)
    return {
        "hooks": kinds,
        "exit": run.returncode,
        "seconds": round(run.seconds, 2),
        "terminal_reason": (run.result or {}).get("terminal_reason"),
        "model_requests": len(requests),
        "tool_calls": len(plan),
        "tool_calls_failed": sum(errors),
        "tool_calls_with_hooks": len(sums),
        "by_event": by_event,
        "per_tool_call_ms": summary(list(sums.values())),
        "per_tool_call_by_tool_ms": {
            tool: summary([sums[i] for i in ids if i in sums])
            for tool, ids in tool_ids(hook_runs).items()
        },
        "user_prompt_submit_ms": ups[0] if ups else None,
        "user_prompt_submit_answer": next(
            (r.detail for r in hook_runs if r.event == "UserPromptSubmit"), None
        ),
        "briefing_delivered": "<veil-memory>" in first_body,
        "request_gap_ms": summary(gaps),
        "not_success": [
            {"event": r.event, "tool": r.tool, "status": r.status, "detail": r.detail}
            for r in hook_runs
            if r.status != "success"
        ],
        "gave_up": [r.event for r in hook_runs if GAVE_UP in r.detail],
        "server_gave_up": sum(
            "Server stderr" in line and GAVE_UP in line for line in log.splitlines()
        ),
        "session_id": run.session_id,
        "transcript": str(run.transcript) if run.transcript else None,
        "repo": str(repo),
        "home": str(home),
    }


# ---- SessionStart ----------------------------------------------------------------------------


def _wall_ms(
    command: Sequence[str], stdin: str, env: dict[str, str], cwd: Path
) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(
        list(command), input=stdin, capture_output=True, text=True, env=env, cwd=cwd, check=False
    )
    ms = (time.perf_counter() - t0) * 1e3
    if done.returncode != 0:
        raise RuntimeError(f"{command} exited {done.returncode}: {done.stderr[-1000:]}")
    return ms, done.stdout


def measure_session_start(session: Json, runs: int) -> Json:
    """``veil hook claude-code SessionStart`` (startup, resume) and ``python -c pass``, each
    run ``runs`` times round-robin after a discarded warm-up, in the recorded session's
    project, with the environment Claude Code gives a hook."""
    repo, home = Path(session["repo"]), Path(session["home"])
    env = private_env(home, {"CLAUDE_PROJECT_DIR": str(repo)})
    hook = [str(VEIL_BIN), "hook", "claude-code", "SessionStart"]

    def payload(source: str, session_id: str) -> str:
        return json.dumps(
            {
                "session_id": session_id,
                "transcript_path": session["transcript"] or "",
                "cwd": str(repo),
                "hook_event_name": "SessionStart",
                "source": source,
            }
        )

    cases: dict[str, tuple[list[str], str]] = {
        "python -c pass (floor)": ([sys.executable, "-c", "pass"], ""),
        "SessionStart startup": (hook, payload("startup", str(uuid.uuid4()))),
        "SessionStart resume": (hook, payload("resume", str(session["session_id"]))),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    answers: dict[str, int] = {}
    for name, (command, stdin) in cases.items():
        _, out = _wall_ms(command, stdin, env, repo)  # warm-up, discarded
        answers[name] = len(out)
    for _ in range(runs):
        for name, (command, stdin) in cases.items():
            times[name].append(_wall_ms(command, stdin, env, repo)[0])
    return {
        "runs": runs,
        "wall_ms": {name: summary(ts) for name, ts in times.items()},
        "answer_chars": answers,
    }


# ---- the run ---------------------------------------------------------------------------------


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b <= 0 else round(a / b, 1)


def run(claude: Path, *, quick: bool, keep: bool = False) -> Json:
    started = time.perf_counter()
    load_start = load_average()
    calls = QUICK_CALLS if quick else FULL_CALLS
    configs = QUICK_CONFIGS if quick else FULL_CONFIGS
    base = Path(tempfile.mkdtemp(prefix="veil-hook-latency-"))
    try:
        sessions = {config: run_session(claude, config, base, calls) for config in configs}
        session_start = measure_session_start(
            sessions["mcp_tool"],
            QUICK_SESSION_START_RUNS if quick else FULL_SESSION_START_RUNS,
        )
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
    for session in sessions.values():
        for key in ("repo", "home", "transcript"):
            session.pop(key)
    mcp, command = sessions["mcp_tool"], sessions["command"]
    labels = [s.label for s in steps(base, calls)]
    return {
        "benchmark": "hook_latency",
        "quick": quick,
        "claude_code": CLAUDE_CODE.version,
        "tool_calls": calls,
        "mix": {label: labels.count(label) for label in dict.fromkeys(labels)},
        "configs": sessions,
        "ratio_command_to_mcp_tool": {
            "per_tool_call_p50": ratio(
                command["per_tool_call_ms"]["p50"], mcp["per_tool_call_ms"]["p50"]
            ),
            "per_tool_call_p95": ratio(
                command["per_tool_call_ms"]["p95"], mcp["per_tool_call_ms"]["p95"]
            ),
            "user_prompt_submit": ratio(
                command["user_prompt_submit_ms"], mcp["user_prompt_submit_ms"]
            ),
            "request_gap_p50": ratio(
                command["request_gap_ms"]["p50"], mcp["request_gap_ms"]["p50"]
            ),
        },
        "target_p95_ms": TARGET_P95_MS,
        "session_start": session_start,
        "source": source_state(),
        "kept": str(base) if keep else None,
        "machine": describe(load_average={"start": load_start, "end": load_average()}),
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Measure Veil's hooks in the real Claude Code.")
    parser.add_argument("--quick", action="store_true", help="8 tool calls, under a minute")
    parser.add_argument("--keep", action="store_true", help="keep the sessions' directories")
    args = parser.parse_args(argv)
    quick: bool = args.quick
    try:
        claude = install(CLAUDE_CODE)
    except AgentUnavailable as exc:
        print(
            f"REAL AGENT NOT RUN: {CLAUDE_CODE.spec} could not be installed: {exc}", file=sys.stderr
        )
        return 2
    result = run(claude, quick=quick, keep=args.keep)
    save(result, "hook_latency", quick=quick)
    print(table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
