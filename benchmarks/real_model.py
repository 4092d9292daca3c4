"""A real model driving Veil: extraction on labelled statements, and the agent on tiny repos.

Opt-in (never in ``make test``): it needs a model. With the local lane (docs/local-model.md)::

    veil local serve --ctx-size 8192 &
    eval "$(veil local env)"
    python -m benchmarks.real_model                 # both parts
    python -m benchmarks.real_model --extraction    # or one of them
    python -m benchmarks.real_model --agent
    python -m benchmarks.real_model --save-fixtures # also write tests/data/recorded/

Any ``VEIL_MODEL`` works (a hosted model when a key exists), so the numbers compare.

**Extraction.** The 66 statements of ``benchmarks/real_model_data/statements.json`` (13
scenarios: preferences and their changes, locations, jobs, reported claims, commitments with
dates, corrections, noise) are remembered in order, one scenario per fresh memory, through
Veil's own provider and ``Memory.remember``. Every raw model output is recorded. The outputs are
then replayed (the scripted model returns them in order) into two fresh memories — guardrails
off (``MemoryConfig(guardrails=False)``, the write path before them) and on — and both are
scored against the labels, so the table shows what the guardrails caught on the same output:

- facts: a stored trusted fact of a step matches a label when the subject matches, the relation
  is one the label accepts and the objects contain one another (case-insensitive). *wrong*:
  a trusted fact on a labelled slot with another value, any fact on a "nothing to store" step,
  a third party's claim stored as a trusted user fact. *unlabelled*: other trusted facts (the
  labels do not say; not counted either way). precision = correct / (correct + wrong),
  recall = labelled facts found / labelled facts;
- supersession: labelled supersessions done / labelled; wrong supersessions (a fact closed that
  the step did not replace);
- quarantine: labelled claims quarantined (or at least not stored as trusted user facts);
- due: commitments carrying the labelled due date; due dates on episodes that should have none;
- ungrounded flags, invalid items, seconds per remember (live run).

**Agent.** Five tiny repositories (``benchmarks/real_model_data/repos/``), one failing unittest
each; ``veil`` runs the task in a fresh git copy, with Veil's eviction on and with keep-all (no
eviction) at the same window (the server's context, 8,192 tokens by default). Solved = the test
passes afterwards. Reported: turns, tokens in / out / cached, tool calls recovered from message
text, tool-call problems (unknown tool or invalid arguments), context overflows, wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, cast

from benchmarks.lib.machine import describe, load_text
from benchmarks.lib.paths import REPO
from benchmarks.lib.report.real_model import render_section
from benchmarks.lib.results import path_for, save

DATA = REPO / "benchmarks" / "real_model_data"
FIXTURES = REPO / "tests" / "data" / "recorded"
DEFAULT_AT = "2024-03-04T10:00:00+00:00"

Json = dict[str, Any]


# ---- extraction -------------------------------------------------------------------------------


@dataclass
class Recorder:
    """A ``complete`` that calls the real one and keeps every output, and how long it took."""

    complete: Callable[..., str]
    outputs: list[str]
    seconds: list[float]

    def __call__(self, messages: list[dict[str, Any]], *, json_schema: Json | None = None) -> str:
        t0 = time.perf_counter()
        out = self.complete(messages, json_schema=json_schema)
        self.seconds.append(time.perf_counter() - t0)
        self.outputs.append(out)
        return out


SETS = {"tuning": "statements.json", "held-out": "statements_holdout.json"}
"""The guardrails were refined on the model's outputs for the tuning set; the held-out set was
written afterwards and recorded once, and no rule was changed for it."""


def scenarios(which: str = "tuning") -> list[Json]:
    return cast(list[Json], json.loads((DATA / SETS[which]).read_text())["scenarios"])


def step_times(scenario: Json) -> list[datetime]:
    start = datetime.fromisoformat(scenario.get("at", DEFAULT_AT))
    return [start + timedelta(days=i) for i in range(len(scenario["steps"]))]


def record_extraction(model: str, which: str = "tuning") -> list[Json]:
    """Remember every statement with the real model; returns one record per scenario."""
    from veil.llm.registry import extraction_complete_from_spec
    from veil.memory import Memory, MemoryConfig
    from veil.testing import FakeClock, HashEmbedder

    complete = extraction_complete_from_spec(model)
    out: list[Json] = []
    for scenario in scenarios(which):
        recorder = Recorder(complete, [], [])
        times = step_times(scenario)
        with tempfile.TemporaryDirectory(prefix="veil-real-") as tmp:
            clock = FakeClock(times[0])
            memory = Memory(
                Path(tmp) / "m.db",
                complete=recorder,
                embedder=HashEmbedder(),
                clock=clock,
                config=MemoryConfig(llm_timeout_s=900),
            )
            per_call: list[int] = []
            for step, at in zip(scenario["steps"], times, strict=True):
                before = len(recorder.outputs)
                memory.remember(step["text"], user_id="u", at=at)
                per_call.append(len(recorder.outputs) - before)
                print(f"{scenario['id']}: {step['text'][:60]!r}", file=sys.stderr, flush=True)
            memory.close()
        out.append(
            {
                "scenario": scenario["id"],
                "outputs": recorder.outputs,
                "calls_per_step": per_call,
                "seconds": recorder.seconds,
            }
        )
    return out


def replay(recording: list[Json], *, guardrails: bool, which: str = "tuning") -> list[Json]:
    """Replay recorded outputs into fresh memories; the stored state after every step."""
    from veil.memory import Memory, MemoryConfig
    from veil.testing import FakeClock, HashEmbedder, ScriptedModel

    by_id = {r["scenario"]: r for r in recording}
    out: list[Json] = []
    for scenario in scenarios(which):
        rec = by_id[scenario["id"]]
        times = step_times(scenario)
        with tempfile.TemporaryDirectory(prefix="veil-replay-") as tmp:
            memory = Memory(
                Path(tmp) / "m.db",
                complete=ScriptedModel(list(rec["outputs"])),
                embedder=HashEmbedder(),
                clock=FakeClock(times[0]),
                config=MemoryConfig(guardrails=guardrails),
            )
            steps: list[Json] = []
            for step, at in zip(scenario["steps"], times, strict=True):
                report = memory.remember(step["text"], user_id="u", at=at)
                history = memory.facts("u", include_history=True)
                steps.append(
                    {
                        "report": {
                            "facts": list(report.facts),
                            "superseded": list(report.superseded),
                            "reinforced": list(report.reinforced),
                            "quarantined": list(report.quarantined),
                            "episodes": list(report.episodes),
                            "invalid": len(report.invalid),
                            "ungrounded": list(report.ungrounded),
                            "error": report.error,
                        },
                        "facts": [
                            {
                                "id": f.id,
                                "subject": f.subject,
                                "relation": f.relation,
                                "object": f.object,
                                "statement": f.statement,
                                "status": f.status,
                                "trust": f.trust,
                                "flags": list(f.flags),
                            }
                            for f in history
                        ],
                        "episodes": [
                            {"id": e.id, "kind": e.kind, "text": e.text, "due": e.due}
                            for e in memory.episodes("u")
                        ],
                    }
                )
            memory.close()
        out.append({"scenario": scenario["id"], "steps": steps})
    return out


def _match_object(label: Json, value: str) -> bool:
    if label.get("object_any"):
        return True
    want = str(label["object"]).casefold()
    got = value.casefold()
    return want in got or (len(got) >= 3 and got in want)


def _match(label: Json, fact: Json) -> bool:
    subject_ok = (
        label.get("subject_any")
        or fact["subject"].casefold() == str(label.get("subject", "user")).casefold()
    )
    relation_ok = label.get("relation_any") or fact["relation"] in label.get("relation", [])
    return bool(subject_ok and relation_ok and _match_object(label, fact["object"]))


def score(replayed: list[Json], which: str = "tuning") -> Json:
    """The extraction table's numbers for one replay (see the module docstring)."""
    labelled = found = correct = wrong = unlabelled = 0
    sup_expected = sup_done = sup_wrong = 0
    claims_expected = claims_ok = 0
    due_expected = due_ok = due_spurious = 0
    ungrounded = invalid = errors = 0
    by_scenario = {s["id"]: s for s in scenarios(which)}
    for run in replayed:
        scenario = by_scenario[run["scenario"]]
        for label, state in zip(scenario["steps"], run["steps"], strict=True):
            report = state["report"]
            errors += report["error"] is not None
            invalid += report["invalid"]
            ungrounded += len(report["ungrounded"])
            new = {f["id"]: f for f in state["facts"] if f["id"] in report["facts"]}
            trusted = [f for f in new.values() if f["status"] != "quarantined"]
            current = [f for f in state["facts"] if f["status"] in ("current", "stale")]
            expected = cast(list[Json], label.get("facts", []))
            for exp in expected:
                labelled += 1
                if any(_match(exp, f) for f in current):
                    found += 1
            for fact in trusted:
                if label.get("nothing") or (
                    label.get("nothing_user_fact") and fact["subject"] == "user"
                ):
                    wrong += 1
                elif any(_match(exp, fact) for exp in expected):
                    correct += 1
                elif any(
                    (exp.get("subject_any") or fact["subject"] == exp.get("subject", "user"))
                    and (exp.get("relation_any") or fact["relation"] in exp.get("relation", []))
                    for exp in expected
                ):
                    wrong += 1  # a labelled slot with another value
                elif "claim" in label or "claim_or_other" in label:
                    spec = cast(Json, label.get("claim") or label.get("claim_or_other"))
                    if _match_object(spec, fact["object"]) or spec.get("object_any"):
                        wrong += 1  # the third party's word stored as a trusted fact
                    else:
                        unlabelled += 1
                else:
                    unlabelled += 1
            closed = [
                f
                for f in state["facts"]
                if f["id"] in report["superseded"] and f["status"] == "superseded"
            ]
            for obj in label.get("supersedes", []):
                sup_expected += 1
                if any(obj.casefold() in f["object"].casefold() for f in closed):
                    sup_done += 1
            sup_wrong += sum(
                1
                for f in closed
                if not any(
                    o.casefold() in f["object"].casefold() for o in label.get("supersedes", [])
                )
            )
            if "claim" in label:
                claims_expected += 1
                spec = cast(Json, label["claim"])
                as_user = [
                    f
                    for f in trusted
                    if f["subject"] == "user" and _match_object(spec, f["object"])
                ]
                if not as_user:
                    claims_ok += 1
            episodes = {e["id"]: e for e in state["episodes"]}
            mine = [episodes[i] for i in report["episodes"] if i in episodes]
            if "due" in label:
                if label["due"] is not None:
                    due_expected += 1
                    if any(e["kind"] == "commitment" and e["due"] == label["due"] for e in mine):
                        due_ok += 1
                due_spurious += sum(
                    1 for e in mine if e["due"] is not None and e["due"] != label["due"]
                )
            else:
                due_spurious += sum(1 for e in mine if e["due"] is not None)
    return {
        "labelled_facts": labelled,
        "found": found,
        "recall": found / labelled if labelled else 0.0,
        "correct": correct,
        "wrong": wrong,
        "unlabelled": unlabelled,
        "precision": correct / (correct + wrong) if correct + wrong else 0.0,
        "supersessions_expected": sup_expected,
        "supersessions_done": sup_done,
        "supersessions_wrong": sup_wrong,
        "claims_expected": claims_expected,
        "claims_kept_out": claims_ok,
        "due_expected": due_expected,
        "due_correct": due_ok,
        "due_spurious": due_spurious,
        "ungrounded_flags": ungrounded,
        "invalid_items": invalid,
        "failed_extractions": errors,
    }


# ---- agent ------------------------------------------------------------------------------------


def repos() -> list[Path]:
    return sorted(p for p in (DATA / "repos").iterdir() if p.is_dir())


TASK = (
    "A unit test of this project fails. Find it with `python -m unittest`, fix the code (not the "
    "test), and run `python -m unittest` again to check."
)


def run_agent_task(
    repo: Path, model: str, *, keep_all: bool, window: int, record: list[Json] | None = None
) -> Json:
    """One task in a fresh git copy of ``repo``; ``record`` collects every model reply as the
    server sent it (content, native tool calls, the calls recovered from text)."""
    from veil.agent.events import AgentEvent, RequestSent, ToolEnd
    from veil.agent.runtime import AgentSession, RunOptions
    from veil.context import ContextConfig

    with tempfile.TemporaryDirectory(prefix="veil-agent-") as tmp:
        root = Path(tmp) / repo.name
        shutil.copytree(repo, root)
        git = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b"}
        env = os.environ | git | {"GIT_COMMITTER_EMAIL": "b@b"}
        for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "x"]):
            subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)
        context = ContextConfig(window_tokens=10_000_000) if keep_all else None
        options = RunOptions(
            model=model,
            approve="auto",
            window=window,
            max_turns=12,
            cwd=root,
            profile="small",
            context=context,
        )
        stats: Json = {
            "turns": 0,
            "tokens_in": 0,
            "tokens_out": 0,
            "cached": 0,
            "from_text": 0,
            "call_problems": 0,
            "invalid_arguments": 0,
            "evicted": 0,
        }

        def emit(event: AgentEvent) -> None:
            if isinstance(event, RequestSent):
                stats["turns"] += 1
                usage = event.response.usage
                stats["tokens_in"] += usage.input_tokens
                stats["tokens_out"] += usage.output_tokens
                stats["cached"] += usage.cached_input_tokens
                raw = event.response.raw
                stats["from_text"] += int(raw.get("tool_calls_from_text", 0))
                stats["call_problems"] += len(raw.get("tool_call_problems", []))
                if record is not None:
                    message = event.response.message
                    from_text = int(raw.get("tool_calls_from_text", 0))
                    record.append(
                        {
                            "content": raw.get("content_as_sent", message.content),
                            "tool_calls": []
                            if from_text
                            else [
                                {"name": c.name, "arguments": c.arguments}
                                for c in message.tool_calls
                            ],
                            "recovered": [
                                {"name": c.name, "arguments": c.arguments}
                                for c in message.tool_calls
                            ]
                            if from_text
                            else [],
                            "problems": list(raw.get("tool_call_problems", [])),
                        }
                    )
            elif isinstance(event, ToolEnd) and event.result.content.startswith(
                ("invalid arguments", "unknown tool")
            ):
                stats["invalid_arguments"] += 1
            elif event.kind == "evicted":
                stats["evicted"] += len(getattr(event, "items", ()))

        t0 = time.perf_counter()
        session = AgentSession(options)
        end = session.run(TASK, emit=emit)
        stats["seconds"] = time.perf_counter() - t0
        check = subprocess.run(
            [sys.executable, "-m", "unittest", "-q"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        stats.update(
            repo=repo.name,
            mode="keep-all" if keep_all else "veil",
            end=end.reason,
            message=end.message[:200],
            solved=check.returncode == 0,
            overflow="context" in end.message.lower() and end.reason == "error",
        )
        with contextlib.suppress(Exception):
            if session.setup is not None:
                session.setup.harness.store.close()
        return stats


# ---- report -----------------------------------------------------------------------------------


def machine() -> Json:
    """The machine, with its load average at the start as text."""
    return describe(load=load_text())


def model_info(model: str) -> Json:
    from veil.cli import local_model

    info: Json = {"model": model}
    if local_model.MODEL_NAME in model:
        info |= {
            "gguf": local_model.MODEL_FILE,
            "quantisation": "Q4_K_M",
            "gguf_sha256": local_model.MODEL_SHA256,
            "server": f"llama-server from {local_model.LLAMA_PACKAGE}=={local_model.LLAMA_VERSION}",
        }
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--extraction", action="store_true")
    parser.add_argument("--agent", action="store_true")
    parser.add_argument("--save-fixtures", action="store_true")
    parser.add_argument(
        "--sets",
        nargs="+",
        choices=list(SETS),
        default=list(SETS),
        help="statement sets to run (default both)",
    )
    parser.add_argument(
        "--reuse-fixtures",
        action="store_true",
        help="score a set from its recording in tests/data/recorded/ instead of calling the model",
    )
    parser.add_argument("--window", type=int, default=8192)
    args = parser.parse_args(argv)
    model = os.environ.get("VEIL_MODEL")
    if not model:
        print("set VEIL_MODEL (and VEIL_BASE_URL): see docs/local-model.md", file=sys.stderr)
        return 2
    both = not (args.extraction or args.agent)
    out_path = path_for("real_model")
    data: Json = json.loads(out_path.read_text()) if out_path.exists() else {}
    data |= {"benchmark": "real_model", "quick": False, "model": model_info(model)}
    data["machine"] = machine()
    if args.extraction or both:
        if "raw" in data.get("extraction", {}):  # the layout before the held-out set
            data["extraction"] = {}
        data.setdefault("extraction", {})
        for which in args.sets:
            fixture = FIXTURES / f"extraction-{which}.json"
            if args.reuse_fixtures and fixture.exists():
                recording = cast(list[Json], json.loads(fixture.read_text())["recording"])
            else:
                recording = record_extraction(model, which)
            data["extraction"][which] = extraction_report(recording, which)
            if args.save_fixtures and not (args.reuse_fixtures and fixture.exists()):
                save_fixture(f"extraction-{which}", model, {"set": which, "recording": recording})
    if args.agent or both:
        rows: list[Json] = []
        recorded: list[Json] = []
        for repo in repos():
            for keep_all in (False, True):
                turns: list[Json] = []
                row = run_agent_task(
                    repo, model, keep_all=keep_all, window=args.window, record=turns
                )
                print(json.dumps(row), file=sys.stderr, flush=True)
                rows.append(row)
                recorded.append(
                    {"repo": repo.name, "mode": row["mode"], "row": row, "turns": turns}
                )
        data["agent"] = rows
        data["window"] = args.window
        if args.save_fixtures:
            save_fixture("agent", model, {"task": TASK, "window": args.window, "runs": recorded})
    save(data, "real_model", indent=1)
    print(render_section(data))
    return 0


def extraction_report(recording: list[Json], which: str) -> Json:
    """Scores of one recorded set, raw and guarded, and the model's speed."""
    seconds = [t for r in recording for t in r["seconds"]]
    statements = sum(len(s["steps"]) for s in scenarios(which))
    return {
        "statements": statements,
        "llm_calls": len(seconds),
        "seconds_per_remember": sum(seconds) / statements,
        "median_s": sorted(seconds)[len(seconds) // 2],
        "raw": score(replay(recording, guardrails=False, which=which), which),
        "guarded": score(replay(recording, guardrails=True, which=which), which),
    }


def save_fixture(name: str, model: str, body: Json) -> Path:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    path = FIXTURES / f"{name}.json"
    head: Json = {
        "recorded_with": model_info(model),
        "recorded_at": datetime.now().astimezone().isoformat(timespec="seconds"),
    }
    if "set" in body:
        statements = (DATA / SETS[str(body["set"])]).read_bytes()
        head["statements_sha256"] = hashlib.sha256(statements).hexdigest()
    path.write_text(
        json.dumps(
            {
                **head,
                **body,
            },
            indent=1,
        )
        + "\n"
    )
    return path


if __name__ == "__main__":
    raise SystemExit(main())
