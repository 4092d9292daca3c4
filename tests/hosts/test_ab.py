"""``python -m benchmarks.ab --quick`` end to end, as documented (docs/ab.md): the REAL Claude
Code, run headless under each arm (``veil claude``, the plain agent, ``veil claude --shadow``)
against the scripted model server the runner starts, every request through the runner's
recording relay; then each run's check and ``veil stats``. The figures mean nothing; what is
checked is that the machinery is real: each arm ran, the provider's usage was read by billing
class and priced, the check decided solved, and each arm did to the requests what it says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks.ab import TASKS, load_tasks

REPO = Path(__file__).resolve().parents[2]


def test_ab_quick_runs_each_arm_through_the_relay_and_checks_the_task(
    claude: Path, tmp_path: Path
) -> None:
    # the task set is sound: every check fails on its repository as shipped
    for task in load_tasks().values():
        shipped = subprocess.run(task.check, shell=True, cwd=task.path, capture_output=True,
                                 env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
                                 timeout=120, check=False)  # fmt: skip
        assert shipped.returncode != 0, f"{task.name}: the check passes as shipped"
        assert all((task.path / name).is_file() for name in task.protected), task
    assert TASKS.is_dir()

    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.ab", "--quick", "--agent", "claude", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads((out / "ab-quick.json").read_text())
    assert data["quick"] is True and data["complete"] is True and data["agent"] == "claude"
    assert data["arms"] == ["on", "off", "shadow"] and data["tasks"] == ["logstats"]
    runs = {r["arm"]: r for r in data["runs"]}
    assert set(runs) == {"on", "off", "shadow"} and len(data["runs"]) == 3
    assert [r["arm"] for r in data["runs"]] == ["on", "off", "shadow"]  # run 1's order

    for arm, run in runs.items():
        assert isinstance(run["solved"], bool), run
        assert run["solved"], (arm, run["check_output"], run["stderr_tail"])  # the model fixed it
        assert run["exit_code"] == 0 and not run["timed_out"], run["stderr_tail"]
        assert run["requests"] >= 5 and run["requests_failed"] == 0, run
        assert run["requests_without_usage"] == 0, run
        usage = run["usage"]
        assert usage["prompt"] > 0 and usage["output"] > 0 and usage["cache_read"] > 0, usage
        assert run["cost"] > 0 and run["unpriced"] == [], run

    # off: the plain agent, nothing of Veil in what the upstream received
    assert runs["off"]["veil"] is None and runs["off"]["stubbed_requests"] == 0
    # shadow: every body went upstream as Claude Code sent it (no stub reached the provider),
    # while Veil measured what it would have done
    shadow = runs["shadow"]
    assert shadow["stubbed_requests"] == 0
    assert shadow["veil"]["batches"] >= 1 and shadow["veil"]["stubs"] >= 1, shadow["veil"]
    assert shadow["veil"]["tokens_sent"] < shadow["veil"]["tokens_agent"]
    # on: stubs reached the provider and the model expanded one through Veil's tool
    on = runs["on"]
    assert on["stubbed_requests"] >= 1 and on["veil"]["batches"] >= 1, on
    assert on["veil"]["expands"] == 1, on["veil"]

    # the relay's account agrees with Veil's own (the same usage, the same price table)
    for run in (on, shadow):
        veil = run["veil"]
        assert veil["requests"] == run["requests"], (veil, run["requests"])
        sent = veil["tokens_sent"] if run is on else veil["tokens_agent"]
        assert abs(sent - run["usage"]["prompt"]) <= 0.02 * run["usage"]["prompt"]
        billed = veil["cost_estimated"] if run is on else veil["cost_without_veil_estimated"]
        assert billed == pytest.approx(run["cost"], rel=0.02, abs=1e-3)

    summary = data["summary"]
    for arm in ("on", "off", "shadow"):
        s = summary[arm]
        assert s["runs"] == 1 and s["solved"] == 1
        assert s["cost_per_solved"] == pytest.approx(runs[arm]["cost"], abs=1e-5)
        assert s["ci95"][0] == s["ci95"][1] == s["cost_per_solved"]  # one run: no spread
        assert s["turns_mean"] == runs[arm]["requests"]
    assert summary["on"]["expands_mean"] == 1 and summary["off"]["batches_mean"] is None
    table = done.stdout[done.stdout.index("arm ") :]
    assert all(f"\n{arm} " in table for arm in ("on", "off", "shadow")), done.stdout
    assert "cost/solved" in table and "95% CI" in table
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert (out / "ab-quick.png").stat().st_size > 0
