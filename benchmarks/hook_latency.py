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
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.hosts.binaries import CLAUDE_CODE, AgentUnavailable, install
from tests.hosts.runners import ClaudeRunner, private_env
from tests.hosts.veil_setup import VEIL_BIN, seed_memory, trust_workspace
from tests.hosts.veil_setup import install as veil_install

from benchmarks.write_overhead import source_state
from veil.clients.settings import HOOKS, hook_command
from veil.llm.scripted_server import ModelRequest, ScriptedServer, ToolUse, Turn

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"

FULL_CALLS, QUICK_CALLS = 40, 8
FULL_SESSION_START_RUNS, QUICK_SESSION_START_RUNS = 15, 3
FULL_CONFIGS: tuple[str, ...] = ("none", "mcp_tool", "command")
QUICK_CONFIGS: tuple[str, ...] = ("mcp_tool", "command")
COMMAND_TIMEOUTS = {"UserPromptSubmit": 15}
"""Seconds Claude Code gave the command hooks before they became ``mcp_tool`` calls (10 for
the tool-call hooks): enough for a cold ``veil`` process, so Claude Code never cuts the baseline
short (``veil hook``'s own 0.9 s deadline still applies: see :data:`GAVE_UP`)."""
COMMAND_TIMEOUT = 10
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
PROMPT = "make every check in check.py pass"
FACTS = [
    ("project", "runs its checks with", "python3 -B check.py NAME"),
    ("calc.py", "holds", "one constant per check, each must be 1"),
]
GAVE_UP = "no answer within"
"""What ``veil hook`` (0.9 s) and the ``hook`` tool of ``veil mcp`` (0.8 s; 4 s for prompts)
say when a handler missed its deadline and the hook answered nothing."""
TARGET_P95_MS = 50.0
"""The per-tool-call p95 Veil aims for on this 2-core machine (the table says whether it held)."""

Json = dict[str, Any]


# ---- the session -----------------------------------------------------------------------------


CHECK_PY = '''\
"""The project's checks: python3 -B check.py NAME passes when calc.NAME == 1."""
import sys

import calc

name = sys.argv[1]
value = getattr(calc, name)
if value != 1:
    print(f"FAILED test_{name.lower()}: assert {value} == 1")
    sys.exit(1)
print(f"1 passed: test_{name.lower()}")
'''


def cycles_for(calls: int) -> int:
    return -(-calls // 8)


def make_repo(repo: Path, calls: int) -> None:
    """A git repository with ``calc.py`` (one constant per cycle, all 0) and ``check.py``."""
    repo.mkdir(parents=True)
    (repo / "README.md").write_text("# calc\n\nRun `python3 -B check.py NAME` for each check.\n")
    (repo / "calc.py").write_text("".join(f"V{k} = 0\n" for k in range(1, cycles_for(calls) + 1)))
    (repo / "check.py").write_text(CHECK_PY)
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "."],
        ["-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-q", "-m", "root"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@dataclass(frozen=True)
class Step:
    """One scripted tool call and whether Claude Code should report it as failed."""

    call: ToolUse
    fails: bool
    label: str


def steps(repo: Path, calls: int) -> list[Step]:
    """The tool calls of a session: cycles of eight (see the module docstring), cut to
    ``calls``."""
    calc = str(repo / "calc.py")

    def bash(command: str, description: str) -> ToolUse:
        return ToolUse("Bash", {"command": command, "description": description})

    out: list[Step] = []
    for k in range(1, cycles_for(calls) + 1):
        # -B: no .pyc, which a same-size edit within the second would leave stale
        check = bash(f"python3 -B check.py V{k}", f"run check V{k}")
        out += [
            Step(check, True, "Bash (check fails)"),
            Step(ToolUse("Read", {"file_path": calc}), False, "Read"),
            Step(
                ToolUse(
                    "Edit",
                    {"file_path": calc, "old_string": f"V{k} = 0", "new_string": f"V{k} = 2"},
                ),
                False,
                "Edit",
            ),
            Step(check, True, "Bash (check fails)"),
            Step(
                ToolUse(
                    "Edit",
                    {"file_path": calc, "old_string": f"V{k} = 2", "new_string": f"V{k} = 1"},
                ),
                False,
                "Edit",
            ),
            Step(check, False, "Bash (check passes)"),
            Step(
                ToolUse(
                    "Write",
                    {"file_path": str(repo / f"NOTES-v{k}.md"), "content": f"V{k} fixed: 1.\n"},
                ),
                False,
                "Write",
            ),
            Step(bash("git status --short", "show changes"), False, "Bash (succeeds)"),
        ]
    return out[:calls]


def script(plan: Sequence[Step], arrivals: list[float]) -> list[Callable[[ModelRequest], Turn]]:
    """One turn per step, then a closing text; each turn notes when its request arrived."""

    def turn(reply: Turn) -> Callable[[ModelRequest], Turn]:
        def answer(request: ModelRequest) -> Turn:
            arrivals.append(time.monotonic())
            return reply

        return answer

    turns = [turn(Turn(f"Next: {s.label}.", (s.call,))) for s in plan]
    return [*turns, turn(Turn("Every check passes."))]


def hooks_for(config: str) -> Json | None:
    """The ``hooks`` table of ``config`` (``None``: the installed one is kept)."""
    if config == "mcp_tool":
        return None
    if config == "none":
        return {}
    hooks: Json = {}
    for spec in HOOKS:
        timeout = COMMAND_TIMEOUTS.get(spec.event, COMMAND_TIMEOUT)
        if spec.kind == "command":
            timeout = spec.timeout
        group: Json = {} if spec.matcher is None else {"matcher": spec.matcher}
        group["hooks"] = [
            {
                "type": "command",
                "command": hook_command([str(VEIL_BIN)], spec.event),
                "timeout": timeout,
            }
        ]
        hooks[spec.event] = [group]
    return hooks


def configure(config: str, repo: Path, home: Path, state: Path) -> dict[str, str]:
    """Install Veil in ``repo``, then give it ``config``'s hooks; event → kind of hook."""
    veil_install("claude-code", repo, home, state, portable=False)
    trust_workspace(home, repo)
    path = repo / ".claude" / "settings.local.json"
    settings: Json = json.loads(path.read_text())
    hooks = hooks_for(config)
    if hooks is not None:
        if hooks:
            settings["hooks"] = hooks
        else:
            settings.pop("hooks", None)
        path.write_text(json.dumps(settings, indent=2) + "\n")
    kinds: dict[str, str] = {}
    for event, groups in settings.get("hooks", {}).items():
        for group in groups:
            for handler in group["hooks"]:
                kinds[event] = str(handler["type"])
    return kinds


# ---- the debug log ---------------------------------------------------------------------------

_MCP_START = re.compile(r"Hooks: mcp_tool calling veil/hook with")
_COMMAND_DONE = re.compile(
    r"Hooks: (?P<event>\w+)(?::(?P<tool>\w+))? \[.*\] finished with status (?P<status>-?\d+) "
    r"\((?P<ms>\d+)ms\)"
)
_OUTCOME = re.compile(
    r"\"?Hook (?P<event>\w+)(?::(?P<tool>\w+))? \((?P=event)\) "
    r"(?P<status>success|error|cancelled):(?P<detail>.*)"
)
_DISPATCH = re.compile(
    r"tool_dispatch_(?P<edge>start|end) tool=(?P<tool>\S+) toolUseId=(?P<id>\S+)"
)


@dataclass
class HookRun:
    """One hook as the debug log shows it; ``ms`` is ``None`` when no duration is known."""

    event: str
    tool: str | None
    kind: str
    status: str
    ms: float | None
    tool_use_id: str | None = None
    detail: str = ""


def _timestamp(line: str) -> float:
    return datetime.fromisoformat(line.split(" ", 1)[0].replace("Z", "+00:00")).timestamp()


def parse_debug_log(text: str, kinds: dict[str, str]) -> list[HookRun]:
    """Every hook run in a Claude Code debug log, in order, tool hooks tied to their call.

    ``kinds`` (event → ``command`` or ``mcp_tool``) names the kind of a hook whose failure the
    log reports without a start (an MCP server not connected, a command cut by its timeout)."""
    runs: list[HookRun] = []
    started: float | None = None
    awaiting: list[HookRun] = []  # PreToolUse runs before their call's dispatch
    current: str | None = None
    last_command: HookRun | None = None
    for line in text.splitlines():
        if _MCP_START.search(line):
            started = _timestamp(line)
            continue
        if m := _DISPATCH.search(line):
            last_command = None
            if m["edge"] == "start":
                current = m["id"]
                for run in awaiting:
                    run.tool_use_id = current
                awaiting = []
            continue
        run: HookRun | None = None
        if m := _COMMAND_DONE.search(line):
            status = "success" if m["status"] == "0" else f"exit {m['status']}"
            run = HookRun(m["event"], m["tool"], "command", status, float(m["ms"]))
            last_command = run
        elif m := _OUTCOME.search(line):
            detail = m["detail"].replace("\\n", " ").strip()[:200]
            if started is not None:
                ms = round((_timestamp(line) - started) * 1e3, 1)
                run = HookRun(m["event"], m["tool"], "mcp_tool", m["status"], ms, detail=detail)
                started = None
            elif last_command is not None and last_command.event == m["event"]:
                last_command.detail = detail  # the command's own outcome line, already counted
                last_command = None
                continue
            else:
                kind = kinds.get(m["event"], "?")
                run = HookRun(m["event"], m["tool"], kind, m["status"], None, detail=detail)
        if run is None:
            continue
        if run.kind == "mcp_tool":
            last_command = None
        if run.event == "PreToolUse":
            awaiting.append(run)
        elif run.event in TOOL_EVENTS:
            run.tool_use_id = current
        runs.append(run)
    return runs


def tool_call_sums(runs: Sequence[HookRun]) -> dict[str, float]:
    """Tool use id → the summed duration of its hooks (calls whose every hook has one)."""
    sums: dict[str, float] = {}
    unknown: set[str] = set()
    for run in runs:
        if run.event not in TOOL_EVENTS or run.tool_use_id is None:
            continue
        if run.ms is None:
            unknown.add(run.tool_use_id)
        sums[run.tool_use_id] = sums.get(run.tool_use_id, 0.0) + (run.ms or 0.0)
    return {k: round(v, 1) for k, v in sums.items() if k not in unknown}


def tool_ids(runs: Sequence[HookRun]) -> dict[str, list[str]]:
    """Tool name → the ids of its calls, in order."""
    out: dict[str, list[str]] = {}
    for run in runs:
        if run.event == "PreToolUse" and run.tool and run.tool_use_id:
            out.setdefault(run.tool, []).append(run.tool_use_id)
    return out


def summary(values: Sequence[float]) -> Json:
    """n, p50, p95 (linear interpolation between ranks) and max, in the values' unit."""
    xs = sorted(values)
    if not xs:
        return {"n": 0, "p50": None, "p95": None, "max": None}
    if len(xs) == 1:
        return {"n": 1, "p50": xs[0], "p95": xs[0], "max": xs[0]}
    cuts = statistics.quantiles(xs, n=20, method="inclusive")
    return {
        "n": len(xs),
        "p50": round(statistics.median(xs), 1),
        "p95": round(cuts[18], 1),
        "max": round(xs[-1], 1),
    }


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


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


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
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": {"start": load_start, "end": load_average()},
        },
        "seconds": round(time.perf_counter() - started, 1),
    }


# ---- report ----------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}"


def _gap_sentence(configs: dict[str, Json]) -> str:
    none = configs.get("none")
    if none is None or none["request_gap_ms"]["p50"] is None:
        return ""
    base = none["request_gap_ms"]["p50"]
    added = ", ".join(
        f"{c['request_gap_ms']['p50'] - base:+,.0f} ms with `{name}`"
        for name, c in configs.items()
        if name != "none"
    )
    return (
        f" End to end, the median gap between model requests is {base:,.0f} ms without "
        f"hooks; {added}."
    )


def table(result: Json) -> str:
    """The markdown the report shows, with what each number is."""
    configs: dict[str, Json] = result["configs"]
    lines = [
        "| hooks | tool calls | per tool call p50 ms | p95 | max | UserPromptSubmit ms "
        "| request gap p50 ms | p95 | session s | hooks failed / gave up |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, c in configs.items():
        per, gap = c["per_tool_call_ms"], c["request_gap_ms"]
        lines.append(
            f"| {name} | {c['tool_calls']} | {_ms(per['p50'])} | {_ms(per['p95'])} "
            f"| {_ms(per['max'])} | {_ms(c['user_prompt_submit_ms'])} | {_ms(gap['p50'])} "
            f"| {_ms(gap['p95'])} | {c['seconds']:.1f} | {len(c['not_success'])} "
            f"/ {len(c['gave_up']) + c['server_gave_up']} |"
        )
    lines += [
        "",
        "| hooks | event | kind | n | p50 ms | p95 | max |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, c in configs.items():
        for event, e in c["by_event"].items():
            lines.append(
                f"| {name} | {event} | {e['kind']} | {e['n']} | {_ms(e['p50'])} "
                f"| {_ms(e['p95'])} | {_ms(e['max'])} |"
            )
    start = result["session_start"]
    lines += [
        "",
        "| process (`veil hook`, one per hook) | runs | p50 ms | p95 | max |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, s in start["wall_ms"].items():
        lines.append(f"| {name} | {s['n']} | {_ms(s['p50'])} | {_ms(s['p95'])} | {_ms(s['max'])} |")
    wall = start["wall_ms"]
    mcp = configs["mcp_tool"]
    r = result["ratio_command_to_mcp_tool"]
    p95 = mcp["per_tool_call_ms"]["p95"]
    held = "met" if p95 is not None and p95 <= result["target_p95_ms"] else "NOT met"
    mix = ", ".join(f"{n} {label}" for label, n in result["mix"].items())
    m = result["machine"]
    lines += [
        "",
        f"Claude Code {result['claude_code']} (the real binary, headless, offline against the "
        f"scripted model server), one session per configuration in the same run: "
        f"{result['tool_calls']} scripted tool calls ({mix}). **Per tool call** is the sum of "
        "the durations of the hooks Claude Code ran for that call (PreToolUse + PostToolUse or "
        "PostToolUseFailure), read from its debug log: a command hook's duration as Claude "
        "Code logs it, an `mcp_tool` hook's from the log line of its call to the line of its "
        "outcome. **UserPromptSubmit** is the one prompt hook of the session (the project "
        f"briefing and memory; delivered: {mcp['briefing_delivered']}). **Request gap** is the "
        "time between consecutive model requests at the scripted server (reply, hooks, tool and "
        "Claude Code's own work); `none` has the MCP server but no hooks.",
        "",
        f"`mcp_tool` (what `veil install claude-code` installs) costs p50 "
        f"{_ms(mcp['per_tool_call_ms']['p50'])} ms / p95 {_ms(p95)} ms per tool call (target "
        f"≤ {result['target_p95_ms']:.0f} ms: {held}); one process per hook (`command`) costs "
        f"{r['per_tool_call_p50']}x that at p50 and {r['per_tool_call_p95']}x at p95, "
        f"{r['user_prompt_submit']}x for UserPromptSubmit, measured in the same run."
        + _gap_sentence(configs),
        "",
        "Veil installs no SessionStart hook (the briefing comes with the first prompt, the "
        "record after a compaction with the next hook), so a session start costs nothing. The "
        "command entry point that remains, `veil hook claude-code SessionStart`, as a "
        "subprocess with a `startup` payload (the handler returns at once) and with a `resume` "
        "payload of the recorded session, round-robin with `python -c pass` (the "
        f"interpreter's floor) after one discarded warm-up each: resume p50 "
        f"{_ms(wall['SessionStart resume']['p50'])} ms, startup "
        f"{_ms(wall['SessionStart startup']['p50'])} ms, floor "
        f"{_ms(wall['python -c pass (floor)']['p50'])} ms.",
        "",
        f"Machine: {m['cpus']} cores, load average {m['load_average']['start']} at the start, "
        f"{m['load_average']['end']} at the end (other work on the machine shows in the "
        f"tails); Python {m['python']}; the run took {result['seconds']:.0f} s.",
    ]
    failures = [
        f"{name}: {f['event']} {f['status']} ({f['detail'][:80]})"
        for name, c in configs.items()
        for f in c["not_success"]
    ]
    if failures:
        lines += ["", "Hooks that did not succeed: " + "; ".join(failures) + "."]
    gave_up = [
        f"{name}: {', '.join(c['gave_up'] + ['(in veil mcp)'] * c['server_gave_up'])}"
        for name, c in configs.items()
        if c["gave_up"] or c["server_gave_up"]
    ]
    if gave_up:
        lines += [
            "",
            "Hooks that missed Veil's own deadline and answered nothing (`veil hook` gives up "
            "after 0.9 s of handler time, the `hook` tool after 0.8 s, 4 s for a prompt; the "
            "duration counted is the time until it gave up, so it understates the work): "
            + "; ".join(gave_up)
            + ".",
        ]
    return "\n".join(lines)


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
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / ("hook_latency-quick.json" if quick else "hook_latency.json")
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
