"""The four OpenHands stuck patterns, and that a broken pattern is no longer reported."""

from __future__ import annotations

from veil.convergence.stuck import Step, detect


def test_same_action_same_observation_four_times() -> None:
    steps = [Step("ls", "a")] * 4
    assert "repeated_action_observation" in detect(steps)
    assert detect([Step("ls", "a")] * 3) == ()
    assert detect([*([Step("ls", "a")] * 3), Step("ls", "b")]) == ()


def test_same_action_with_error_three_times() -> None:
    steps = [Step("pytest", f"out{i}", is_error=True) for i in range(3)]
    assert detect(steps) == ("repeated_action_error",)
    steps[1] = Step("pytest", "out1", is_error=False)
    assert detect(steps) == ()


def test_same_message_three_times_without_action() -> None:
    steps = [Step("ls", "a"), *[Step(None, message="I will now fix it")] * 3]
    assert detect(steps) == ("monologue",)
    broken = [
        Step(None, message="m"),
        Step("ls", "a"),
        Step(None, message="m"),
        Step(None, message="m"),
    ]
    assert "monologue" not in detect(broken)


def test_ping_pong_over_six_steps() -> None:
    a, b = Step("edit x", "ok"), Step("pytest", "1 failed")
    assert "ping_pong" in detect([a, b, a, b, a, b])
    assert "ping_pong" not in detect([a, b, a, b, a])
    assert "ping_pong" not in detect([a, a, a, a, a, a])
    assert "ping_pong" not in detect([a, b, a, b, a, Step("other", "x")])


def test_a_fresh_run_is_not_stuck() -> None:
    assert detect([]) == ()
    assert detect([Step(f"cmd{i}", "o") for i in range(10)]) == ()
