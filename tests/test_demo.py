"""``veil demo``'s replay shows what it claims: the replayed commands are attempts, stubs name
the tool once, a stage-2 reason is said once per pass, one window figure, a legend."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any, ClassVar

import pytest

from veil.cli import demo
from veil.llm.scripted import ScriptedProvider


class RecordingProvider(ScriptedProvider):
    """The demo's provider, kept so that a test can read every request the model was sent."""

    made: ClassVar[list[ScriptedProvider]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        RecordingProvider.made.append(self)


def replay(tmp: Path) -> tuple[bool, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ok = demo.replay(tmp)
    return ok, out.getvalue()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[bool, str, ScriptedProvider]:
    with pytest.MonkeyPatch.context() as mp:
        RecordingProvider.made.clear()
        mp.setattr(demo, "ScriptedProvider", RecordingProvider)
        ok, text = replay(tmp_path_factory.mktemp("demo"))
    return ok, text, RecordingProvider.made[-1]


def step_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("step ")]


def test_the_replayed_commands_are_attempts(recorded: tuple[bool, str, ScriptedProvider]) -> None:
    ok, text, _ = recorded
    assert ok
    steps = step_lines(text)
    assert len(steps) == 18
    # Each step says what the harness recorded it as; the recording's failing test runs fail.
    outcomes = [line.rsplit(maxsplit=1)[-1] for line in steps]
    assert all(
        re.fullmatch(r"(command|test|edit):(pass|fail|partial|unknown)", o) for o in outcomes
    )
    assert outcomes[0] == "command:pass"  # ls -la
    assert outcomes[11] == outcomes[13] == "test:fail"  # the two failing pytest runs
    assert outcomes[10] == "test:pass"
    assert "attempt log: 18 attempts, from the replayed commands" in text
    assert "step 12  test:fail  pytest xarray/tests/test_combine.py" in text
    # The resolved run never circles long enough for a note, and says so against the threshold.
    assert "convergence level now 0: 1 attempt without progress since the last pass" in text
    assert "under 4: the prompt carries no convergence note" in text


def test_a_recording_that_circles_earns_the_convergence_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failure = "FAILED tests/test_x.py::test_y - AssertionError: 1 != 2\n1 failed in 0.1s"
    steps = [
        {
            "thought": "Run the test again.",
            "action": "pytest tests/test_x.py",
            "observation": failure,
            "returncode": 1,
        }
        for _ in range(6)
    ]
    session = {
        "id": "circling",
        "resolved": False,
        "agent": "test",
        "model": "test",
        "task": "Make tests/test_x.py pass.",
        "steps": steps,
    }
    monkeypatch.setattr(demo, "load_session", lambda: session)
    ok, text = replay(tmp_path)
    assert ok
    assert [line.rsplit(maxsplit=1)[-1] for line in step_lines(text)] == ["test:fail"] * 6
    assert "↳ convergence level 0 → " in text
    assert "attempt log: 6 attempts, from the replayed commands (test:fail ×6)" in text
    note = text.split("the convergence note the prompt carries:\n", 1)[1]
    assert "pytest tests/test_x.py" in note.split("\n\n", 1)[0]


def test_stubs_name_the_tool_once(recorded: tuple[bool, str, ScriptedProvider]) -> None:
    _, text, provider = recorded
    assert "  [veil: bash ls -la — " in text
    sent = [
        stub
        for request in provider.requests
        for message in request.messages
        for stub in re.findall(r"\[veil:[^\]]*\]", str(message))
    ]
    assert any("bash ls -la" in stub for stub in sent)
    assert not [stub for stub in sent if "bash bash" in stub]
    assert "bash bash" not in text


def test_a_pass_says_its_reason_once(recorded: tuple[bool, str, ScriptedProvider]) -> None:
    _, text, _ = recorded
    lines = text.splitlines()
    headers = [line for line in lines if "↳ to warm" in line]
    assert headers
    # The reason is on the pass's line only, never on the lines of the items it moved.
    assert sum("a batch (" in line for line in lines) == len(headers)
    folded = [int(m[1]) for h in headers if (m := re.search(r"×(\d+) \(stage 2: ", h))]
    assert folded and max(folded) > 1
    start = lines.index(headers[0])
    members = lines[start + 1 : start + 1 + folded[0]]
    assert all(re.match(r" {14}step +\d+ (result: bash |turn \()", m) for m in members)


def test_split_reason() -> None:
    assert demo.split_reason(
        "a batch (3,464 tokens, budget 3,332, down to 2,998 or less); lowest score 0.411"
    ) == ("a batch (3,464 tokens, budget 3,332, down to 2,998 or less)", "lowest score 0.411")
    assert demo.split_reason(
        "with its results: over budget; repeated by a later call; score 1"
    ) == (
        "over budget",
        "with its results, repeated by a later call; score 1",
    )
    assert demo.split_reason("score 0.120 < T 0.150") == ("score under T 0.150", "score 0.120")
    assert demo.split_reason("durable R 0.31 < 0.50, idle 30 ticks") == (
        "durable R 0.31 < 0.50, idle 30 ticks",
        "",
    )


def test_one_window_figure_and_a_legend(recorded: tuple[bool, str, ScriptedProvider]) -> None:
    _, text, _ = recorded
    replayed = text.split("\nrun ended:", 1)[0]
    figures = re.findall(r"window (\d[\d,]*) tokens|(\d[\d,]*)-token window", replayed)
    assert figures and {a or b for a, b in figures} == {f"{demo.WINDOW:,}"}
    steps = step_lines(text)
    assert not [line for line in steps if "window" in line]
    assert all(re.search(r"conversation +[\d,]+/[\d,]+ \( *\d+%\)  T=", line) for line in steps)
    legend = replayed.split("\nstep  1 ", 1)[0]
    for term in ("conversation =", "T            =", "level        =", "attempt      ="):
        assert term in legend
