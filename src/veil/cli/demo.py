"""``veil demo``: an offline tour of the main job, saying plainly what is scripted.

1. A real recorded coding session (mini-swe-agent + Gemini 3 Pro fixing pydata/xarray#4629,
   bundled with its MIT notice) is replayed through the real agent loop with Veil's harness
   installed. SCRIPTED: the model's replies (the recorded ones) and the tool outputs (the
   recorded observations). REAL: everything Veil does — capture, FSRS scoring, the AIMD
   threshold, the three eviction stages, stubs and pointers, the attempt log and the
   convergence monitor, the manifest — on a real SQLite tape.
2. Long-term memory: supersession, history, a quarantined third-party claim and recall. The
   extraction model is SCRIPTED (its JSON replies are written below) unless ``VEIL_MODEL`` is
   set, in which case the real model extracts. Recall never calls a model either way.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from veil.agent.events import AgentEnd, AttemptRecorded, LevelChanged, RequestSent, ToolEnd
from veil.agent.harness import VeilHarness
from veil.agent.loop import AgentLoopConfig, run_agent
from veil.agent.tool import ToolContext, ToolResult, Touches
from veil.agent.tools.bash import BashTool
from veil.context import ContextConfig, ContextEngine, ContextItem
from veil.context.eviction import Move
from veil.embed import default_embedder
from veil.llm.messages import Message, ToolSpec, UserMessage
from veil.llm.scripted import ScriptedProvider
from veil.tape import open_store

WINDOW = 6_000
RESERVE = 1_000
"""Of the window, the tokens kept for the model's reply."""
WITH_RESULTS = "with its results: "
"""How a turn's move reason starts when it leaves with its tools' results."""


def load_session() -> dict[str, Any]:
    data = resources.files("veil.cli").joinpath("demo_data/session.json.gz").read_bytes()
    return json.loads(gzip.decompress(data))


class RecordedBash:
    """The ``bash`` tool of the recording: returns what the original run returned, in order.

    It declares what a call touches exactly as the real ``bash`` tool does (the command it runs;
    the file it reads when the command is a plain view of one), so the harness records each
    replayed command as an attempt — a ``test`` when a test runner runs, else a ``command`` —
    with the recorded exit status as its outcome."""

    spec = ToolSpec(
        "bash",
        "Run a shell command (recorded).",
        {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    )
    mutates = True
    parallel_safe = False

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self._declared = BashTool()
        self._outputs = [str(s["observation"]) for s in steps]
        self._codes = [s.get("returncode") for s in steps]
        self._next = 0

    def touches(self, arguments: dict[str, Any]) -> Touches:
        return self._declared.touches(arguments)

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        out = self._outputs[self._next]
        code = self._codes[self._next]
        self._next += 1
        tail = f"\n[exit code {code}]" if isinstance(code, int) else ""
        return ToolResult(out + tail, details={"exit_code": code})


LEGEND = (
    "  conversation = tokens the conversation takes / its budget: the {window:,}-token window\n"
    "                 less {reserve:,} kept for the reply and the fixed part of each request\n"
    "                 (system prompt, tool schemas, manifest); past 100% Veil evicts before the\n"
    "                 next request.\n"
    "  T            = the eviction threshold: an item scoring under T leaves the window; T climbs\n"
    "                 while the window stays full and halves when an evicted item must come back.\n"
    "  level        = the convergence level of the attempt log: 0 progressing, 1 a note of what\n"
    "                 was tried, 2 a demand for a different approach, 3 stop and hand back.\n"
    "  attempt      = what the replayed command was recorded as (action:outcome).\n"
)


def move_label(engine: ContextEngine, item: ContextItem, step_of: Mapping[str, int]) -> str:
    """What an evicted item was, in a few words: the step's result (tool and target) or the
    step's assistant turn (``step_of``: the step of each tool call id)."""
    if item.kind == "turn":
        calls = [i.tool_call_id or "" for i in engine.items() if i.parent == item.id]
        steps = sorted(step_of[c] for c in calls if c in step_of)
        where = f"step {steps[0]:>2} " if steps else ""
        return f"{where}turn ({item.turn_kind or 'assistant'})"
    what = f"{item.tool_name or item.kind} {item.target or ''}".strip()
    what = what.splitlines()[0] if what else item.kind
    what = what if len(what) <= 56 else what[:53] + "..."
    step = step_of.get(item.tool_call_id or "")
    return f"step {step:>2} result: {what}" if step else what


def split_reason(reason: str) -> tuple[str, str]:
    """A move's reason as the part it may share with other moves of the same pass and the part
    that is its own: a stage-2 reason is the pass's (over budget, the goal) then the item's
    (``; lowest score 0.43``); a stage-1 reason is the item's score under the pass's T; a turn
    leaving with its results says so first."""
    own: list[str] = []
    if reason.startswith(WITH_RESULTS):
        reason = reason[len(WITH_RESULTS) :]
        own.append("with its results")
    below = re.fullmatch(r"(score [0-9.]+) < (T [0-9.]+)", reason)
    if below:
        shared, rest = f"score under {below[2]}", below[1]
    else:
        shared, _, rest = reason.partition("; ")
    if rest:
        own.append(rest)
    return shared, ", ".join(own)


def fold_moves(
    engine: ContextEngine, moves: Sequence[Move], step_of: Mapping[str, int]
) -> list[str]:
    """The lines for one boundary's moves: a reason shared by several moves (a stage-2 pass
    gives them all the same reason, with a score each) is said once, with how many moves it
    covers (``×6``); each move then names its item and what is its own."""
    groups: dict[tuple[int, str, str], list[str]] = {}
    for move in moves:
        shared, own = split_reason(move.reason)
        label = move_label(engine, engine.item(move.id), step_of) + (f" — {own}" if own else "")
        groups.setdefault((move.stage, move.to, shared), []).append(label)
    lines: list[str] = []
    for (stage, to, shared), labels in groups.items():
        times = f" ×{len(labels)}" if len(labels) > 1 else ""
        lines.append(f"          ↳ to {to}{times} (stage {stage}: {shared}):")
        lines.extend(f"              {label}" for label in labels)
    return lines


def replay(tmp: Path) -> bool:
    session = load_session()
    steps = [s for s in session["steps"] if s["action"]]
    print(f"Replaying {session['id']} ({len(steps)} tool calls, resolved: {session['resolved']})")
    print(f"  agent: {session['agent']}; model: {session['model']}")
    print("  SCRIPTED: the model's replies and the tool outputs are the recording.")
    print(
        f"  REAL: Veil's harness — capture, scoring, eviction (window {WINDOW:,} tokens), "
        "attempts, convergence, manifest.\n"
    )
    print(LEGEND.format(window=WINDOW, reserve=RESERVE))
    turns: list[dict[str, Any]] = [
        {
            "content": s["thought"][:600],
            "tool_calls": [{"name": "bash", "arguments": {"command": s["action"]}}],
        }
        for s in steps
    ]
    turns.append({"content": "The fix is in xarray/core/merge.py; the reproduction passes."})
    provider = ScriptedProvider({"turns": turns}, context_window=WINDOW)
    embedder = default_embedder()
    store = open_store(f"sqlite:///{tmp / 'context.db'}?synchronous=normal", embedder=embedder)
    harness = VeilHarness(
        store=store,
        scope="project:demo",
        embedder=embedder,
        config=ContextConfig(window_tokens=WINDOW, reserve_tokens=RESERVE),
    )
    task = session["task"][:1500]
    harness.start(task)
    tools = [RecordedBash(steps), *harness.tools()]
    harness.use_tools(tools)
    config = AgentLoopConfig(
        provider=provider,
        tools=tools,
        system_prompt="You are a coding agent.",
        tool_context=ToolContext(cwd=tmp),
        **harness.hooks(),
    )
    messages: list[Message] = [UserMessage(task)]
    outputs: dict[str, str] = {}
    step_of: dict[str, int] = {}
    step = 0
    attempt = "—"
    engine = harness.engine
    for event in run_agent(config, messages, session_id=harness.session_id):
        if isinstance(event, RequestSent):
            for report in harness.reports:
                for line in fold_moves(engine, report.moves, step_of):
                    print(line)
            harness.reports.clear()
        elif isinstance(event, AttemptRecorded):
            attempt = f"{event.action}:{event.outcome}"
        elif isinstance(event, LevelChanged):
            print(
                f"          ↳ convergence level {event.previous} → {event.level}: "
                + "; ".join(event.reasons)
            )
        elif isinstance(event, ToolEnd):
            step += 1
            outputs[event.call.id] = event.result.content
            step_of[event.call.id] = step
            command = str(event.call.arguments.get("command", "")).splitlines()[0][:40]
            fill = engine.live_tokens / engine.budget
            print(
                f"step {step:>2}  {command:<40}  conversation {engine.live_tokens:>5,}/"
                f"{engine.budget:,} ({fill:4.0%})  T={engine.threshold:.3f}  "
                f"level {harness.level}  {attempt}"
            )
            attempt = "—"
        elif isinstance(event, AgentEnd):
            print(f"\nrun ended: {event.reason} — {event.message[:100]}")
    evicted = [i for i in engine.items() if i.tier != "live" and i.tool_call_id in outputs]
    print(f"\n{len(evicted)} tool results were evicted; the prompt carried one-line stubs, e.g.:")
    ok = True
    if evicted:
        victim = evicted[0]
        print(f"  {engine.stub(victim.id)}")
        restored = engine.expand(victim.pointer)
        same = restored.content == outputs[victim.tool_call_id or ""]
        ok = ok and same
        print(
            f"  {engine.config.expand_tool} {victim.pointer} → {restored.tokens:,} tokens back "
            f"in the window, {'byte-identical' if same else 'DIFFERENT'}; "
            f"T halved to {engine.threshold:.3f}"
            " (an evicted item had to come back: a regret)"
        )
    ok = attempt_summary(harness, step_of) and ok
    print(
        "\nthe manifest appended to the system prompt (first lines; its window figure is the "
        "conversation against its budget, as on the step lines):"
    )
    for line in engine.manifest().splitlines()[:6]:
        print(f"  {line}")
    store.close()
    return ok


def attempt_summary(harness: VeilHarness, step_of: Mapping[str, int]) -> bool:
    """The attempt log and the convergence monitor's view of it (with the note the prompt
    carries, if the run earned one); False when the replayed commands left no attempt (the
    demo would then not show what it claims)."""
    attempts = harness.attempts.attempts()
    counts = Counter(f"{a.action}:{a.outcome}" for a in attempts)
    listed = ", ".join(f"{k} ×{n}" for k, n in sorted(counts.items()))
    print(f"\nattempt log: {len(attempts)} attempts, from the replayed commands ({listed})")
    for a in attempts:
        if a.outcome in ("fail", "partial"):
            seen = f", fingerprint {a.fingerprint}" if a.fingerprint else ""
            step = step_of.get(a.tool_call_id or "")
            where = f"step {step:>2}  " if step else ""
            print(f"  {where}{a.action}:{a.outcome}  {a.target.splitlines()[0][:60]}{seen}")
    assessment = harness.attempts.assess()
    monitor = harness.attempts.config
    circling = assessment.circling_count
    print(
        f"convergence level now {assessment.level}: {circling} "
        f"attempt{'' if circling == 1 else 's'} without progress since the last pass\n"
        f"  (a note of what was tried at {monitor.note_after}, a demand for a different approach "
        f"at {monitor.demand_after}, a stop at {monitor.stop_after})"
    )
    note = harness.attempts.note()
    if note:
        print("the convergence note the prompt carries:")
        for line in note.splitlines():
            print(f"  {line}")
    else:
        print(f"  under {monitor.note_after}: the prompt carries no convergence note")
    return bool(attempts)


def long_term(tmp: Path) -> bool:
    from veil.clock import FakeClock
    from veil.llm.scripted import ScriptedModel
    from veil.memory import Memory

    real = os.environ.get("VEIL_MODEL")
    if real:
        from veil.llm.registry import extraction_complete_from_spec

        complete: Any = extraction_complete_from_spec(real)
        print(f"\nLong-term memory — extraction by the REAL model {real}; recall uses no model.")
    else:
        complete = ScriptedModel(
            [
                {
                    "facts": [
                        {
                            "subject": "user",
                            "relation": "prefers",
                            "object": "vim",
                            "statement": "The user prefers vim.",
                            "volatility": "durable",
                            "claimant": "user",
                            "supersedes": None,
                        }
                    ],
                    "episodes": [],
                },
                {
                    "facts": [
                        {
                            "subject": "user",
                            "relation": "prefers",
                            "object": "emacs",
                            "statement": "The user prefers emacs.",
                            "volatility": "durable",
                            "claimant": "user",
                            "supersedes": None,
                        }
                    ],
                    "episodes": [
                        {
                            "kind": "interaction",
                            "text": "The user switched from vim to emacs.",
                            "due": None,
                        }
                    ],
                },
                {
                    "facts": [
                        {
                            "subject": "user",
                            "relation": "owes",
                            "object": "500 dollars",
                            "statement": "The user owes the landlord 500 dollars.",
                            "volatility": "slow",
                            "claimant": "landlord",
                            "supersedes": None,
                        }
                    ],
                    "episodes": [],
                },
            ]
        )
        print(
            "\nLong-term memory — extraction is SCRIPTED (canned JSON replies, set VEIL_MODEL "
            "to use a real model); everything else is real."
        )
    clock = FakeClock()
    memory = Memory(tmp / "memory.db", complete=complete, clock=clock)
    memory.remember("I use vim for everything.", user_id="demo")
    clock.advance(days=30)
    memory.remember("I switched from vim to emacs last week.", user_id="demo")
    claim = memory.remember("My landlord says I owe him 500 dollars.", user_id="demo")
    history = memory.history("demo", "user", "prefers")
    print("  history of (user, prefers):")
    for fact in history:
        until = fact.valid_to.date().isoformat() if fact.valid_to else "now"
        print(f"    {fact.object:<6} {fact.valid_from.date()} → {until}  [{fact.status}]")
    print(
        f"  quarantined third-party claims: {len(claim.quarantined)} "
        "(never rendered as the user's facts)"
    )
    recall = memory.recall(
        "what editor do I use, and do I owe money?", user_id="demo", token_budget=200
    )
    print("  recall (200-token budget, no model call):")
    for line in recall.text.splitlines():
        print(f"    {line}")
    memory.close()
    return real is not None or [f.object for f in history] == ["vim", "emacs"]


def run_demo() -> int:
    started = time.perf_counter()
    print("Veil demo — offline; each part says what is scripted.\n")
    with tempfile.TemporaryDirectory(prefix="veil-demo-") as tmp:
        ok = replay(Path(tmp))
        ok = long_term(Path(tmp)) and ok
    print(f"\ndone in {time.perf_counter() - started:.1f} s")
    return 0 if ok else 1
