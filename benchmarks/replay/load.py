"""Trajectories as prompts: what the agent saw at every step, with token counts.

The prompt at step ``k`` (when the model chose action ``k``) is the system message, the
instance message (task rendered into the agent's instance template) and, for every earlier step
``j < k``, the assistant message ``j`` (thought + fenced action) and observation ``j`` as the
harness rendered it. Set A's observations are stored rendered (and already truncated by
mini-swe-agent at 10,000 characters); set B's are wrapped at prompt time with SWE-agent's
``next_step_template`` (the open file and directory are the state *after* the action, i.e. the
next step's ``state``). Tokens: :func:`veil.tokens.estimate_tokens` (about chars / 4) for every
part, for every policy. The values (:class:`~veil.replay.trajectory.Trajectory` of
:class:`~veil.replay.trajectory.Step` s) are ``veil replay``'s own; only the loading is here.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from typing import Any

from benchmarks.lib.paths import TRAJECTORIES, TRAJECTORY_SETS
from veil.replay.trajectory import Step, Trajectory
from veil.tokens import estimate_tokens

__all__ = ["CONFIGS", "DATA", "SETS", "Step", "Trajectory", "build", "load"]

DATA = TRAJECTORIES
SETS = TRAJECTORY_SETS
CONFIGS = "prompts_and_configs.json"


def _templates() -> dict[str, Any]:
    return json.loads((DATA / CONFIGS).read_text())


def _stream(name: str) -> Iterator[dict[str, Any]]:
    with gzip.open(DATA / name, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _assistant_a(thought: str, action: str) -> str:
    return f"THOUGHT: {thought}\n\n```bash\n{action}\n```" if action else f"THOUGHT: {thought}"


def _assistant_b(thought: str, action: str) -> str:
    return f"{thought}\n\n```\n{action}\n```" if action else thought


def build(raw: dict[str, Any], set_name: str, templates: dict[str, Any]) -> Trajectory:
    """A normalised trajectory record → the prompts its agent saw."""
    task = str(raw["task"])
    steps: list[Step] = []
    raw_steps: list[dict[str, Any]] = raw["steps"]
    if set_name == "A":
        conf = templates["mini-gemini3pro-verified"]
        system = str(conf["system_message_rendered"])
        instance = str(conf["agent_config"]["instance_template"]).replace("{{task}}", task)
    else:
        runs = templates["sweagent-gpt4-lite"]["runs"]
        run = runs.get(str(raw.get("run")), runs["cost_2_2"])
        system = str(run["system_message_rendered"])
        instance_t = str(runs["cost_2_2"]["instance_template"])
        instance = instance_t.replace("{issue}", task)
    for n, s in enumerate(raw_steps):
        thought = str(s.get("thought") or "")
        action = str(s.get("action") or "")
        obs = str(s.get("observation") or "")
        open_file: str | None = None
        if set_name == "B":
            state = s.get("state") or {}
            open_file = str(state.get("open_file") or "") or None
            after = (raw_steps[n + 1].get("state") if n + 1 < len(raw_steps) else None) or state
            tail = (
                f"\n(Open file: {after.get('open_file', 'n/a')})\n"
                f"(Current directory: {after.get('working_dir', '')})\nbash-$"
            )
            obs = (
                obs + tail
                if obs.strip()
                else "Your command ran successfully and did not produce any output." + tail
            )
            assistant = _assistant_b(thought, action)
        else:
            assistant = _assistant_a(thought, action)
        steps.append(
            Step(
                i=int(s.get("i", n)),
                thought=thought,
                action=action,
                tool=str(s.get("tool") or "bash"),
                kind=str(s.get("kind") or "other"),
                paths=tuple(str(p) for p in (s.get("paths") or [])),
                observation=obs,
                assistant=assistant,
                obs_tokens=estimate_tokens(obs),
                assistant_tokens=estimate_tokens(assistant),
                open_file=open_file,
            )
        )
    return Trajectory(
        id=str(raw["id"]),
        set=set_name,
        task=task,
        system=system,
        instance=instance,
        steps=tuple(steps),
        resolved=bool(raw.get("resolved")),
    )


def load(set_name: str, *, every: int = 1, limit: int | None = None) -> list[Trajectory]:
    """Set ``A`` or ``B``: every ``every``-th trajectory in file order (a deterministic
    systematic sample), at most ``limit`` of them."""
    templates = _templates()
    out: list[Trajectory] = []
    for n, raw in enumerate(_stream(SETS[set_name])):
        if n % every:
            continue
        out.append(build(raw, set_name, templates))
        if limit is not None and len(out) >= limit:
            break
    return out
