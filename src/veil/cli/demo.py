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
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

from veil.agent.events import AgentEnd, ToolEnd
from veil.agent.harness import VeilHarness
from veil.agent.loop import AgentLoopConfig, run_agent
from veil.agent.tool import ToolContext, ToolResult
from veil.context import ContextConfig
from veil.embed import default_embedder
from veil.llm.messages import Message, ToolSpec, UserMessage
from veil.llm.scripted import ScriptedProvider
from veil.tape import open_store

WINDOW = 6_000


def load_session() -> dict[str, Any]:
    data = resources.files("veil.cli").joinpath("demo_data/session.json.gz").read_bytes()
    return json.loads(gzip.decompress(data))


class RecordedBash:
    """The ``bash`` tool of the recording: returns what the original run returned, in order."""

    spec = ToolSpec(
        "bash",
        "Run a shell command (recorded).",
        {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    )
    mutates = False
    parallel_safe = False

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self._outputs = [str(s["observation"]) for s in steps]
        self._codes = [s.get("returncode") for s in steps]
        self._next = 0

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        out = self._outputs[self._next]
        code = self._codes[self._next]
        self._next += 1
        tail = f"\n[exit code {code}]" if isinstance(code, int) else ""
        return ToolResult(out + tail, details={"exit_code": code})


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
        config=ContextConfig(window_tokens=WINDOW, reserve_tokens=1_000),
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
    step = 0
    for event in run_agent(config, messages, session_id=harness.session_id):
        if isinstance(event, ToolEnd):
            step += 1
            outputs[event.call.id] = event.result.content
            engine = harness.engine
            level = harness.attempts.assess().level if harness.attempts.goal else 0
            command = str(event.call.arguments.get("command", "")).splitlines()[0][:48]
            fill = engine.live_tokens / engine.budget
            print(
                f"step {step:>2}  {command:<48}  window {engine.live_tokens:>5,}/"
                f"{engine.budget:,} ({fill:4.0%})  T={engine.threshold:.3f}  level {level}"
            )
            for report in harness.reports:
                for move in report.moves:
                    item = engine.item(move.id)
                    label = (item.target or item.turn_kind or item.kind).splitlines()[0][:40]
                    print(
                        f"          ↳ {item.kind} {label!r} → {move.to} "
                        f"(stage {move.stage}: {move.reason})"
                    )
            harness.reports.clear()
        elif isinstance(event, AgentEnd):
            print(f"\nrun ended: {event.reason} — {event.message[:100]}")
    engine = harness.engine
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
            f"  veil_expand {victim.pointer} → {restored.tokens:,} tokens back in the window, "
            f"{'byte-identical' if same else 'DIFFERENT'}; T halved to {engine.threshold:.3f}"
            " (an evicted item had to come back: a regret)"
        )
    attempts = harness.attempts.attempts()
    print(
        f"\nattempt log: {len(attempts)} attempts "
        f"({', '.join(f'{a.action}:{a.outcome}' for a in attempts[-6:])} …)"
    )
    print(f"convergence level now {harness.attempts.assess().level}")
    print("\nthe manifest appended to the system prompt (first lines):")
    for line in engine.manifest().splitlines()[:6]:
        print(f"  {line}")
    store.close()
    return ok


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
