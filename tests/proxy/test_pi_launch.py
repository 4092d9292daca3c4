"""``veil pi``'s launcher and pi's budget rule, without the binary (the real one runs in
``tests/hosts/test_pi_veil.py``): which provider pi will use and so the proxy's upstream, the
window and compaction point its files set, and the command that starts it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from veil.hosts import HOSTS
from veil.launch import LAUNCHERS, Launch
from veil.launch import pi as launch_pi
from veil.llm.catalog import CATALOG

PI = HOSTS["pi"]
MODELS = {
    "providers": {
        "local": {
            "baseUrl": "http://127.0.0.1:8080/v1",
            "api": "openai-completions",
            "apiKey": "x",
            "models": [
                {"id": "qwen", "contextWindow": 32_768},
                {"id": "own", "baseUrl": "http://127.0.0.1:9090/v1"},
            ],
        },
        "anthropic": {"baseUrl": "https://gateway.example/anthropic"},
    }
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An environment whose pi agent directory holds :data:`MODELS`; the working directory
    has no project settings."""
    agent = tmp_path / "home" / ".pi" / "agent"
    agent.mkdir(parents=True)
    (agent / "models.json").write_text(json.dumps(MODELS))
    monkeypatch.chdir(tmp_path)
    return {"HOME": str(tmp_path / "home")}


@pytest.mark.parametrize(
    ("args", "extra", "upstream"),
    [
        (("--provider", "local", "--model", "qwen"), {}, "http://127.0.0.1:8080/v1"),
        (("--model", "local/own"), {}, "http://127.0.0.1:9090/v1"),  # the model's own URL
        (("--provider", "anthropic"), {}, "https://gateway.example/anthropic"),  # overridden
        (("--provider", "openai"), {}, "https://api.openai.com/v1"),  # pi's built-in URL
        ((), {"OPENAI_API_KEY": "k"}, "https://api.openai.com/v1"),  # the first with a key
        (
            (),
            {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"},
            "https://gateway.example/anthropic",
        ),
    ],
)
def test_the_upstream_is_the_provider_pi_will_use(
    home: dict[str, str], args: tuple[str, ...], extra: dict[str, str], upstream: str
) -> None:
    assert LAUNCHERS["pi"].upstream_for({**home, **extra}, args) == upstream


def test_the_settings_default_provider_comes_before_keys(
    home: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "settings.json").write_text('{"defaultProvider": "local"}')
    env = {**home, "ANTHROPIC_API_KEY": "k"}
    assert launch_pi.upstream_of_args(env, ()) == "http://127.0.0.1:8080/v1"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((), "which provider does pi use? name it: veil pi -- --provider NAME --model ID"),
        (("--provider", "mystery"), "pi's provider 'mystery' has no base URL Veil knows"),
    ],
)
def test_a_provider_veil_cannot_tell_is_one_line_with_the_fix(
    home: dict[str, str], args: tuple[str, ...], words: str
) -> None:
    with pytest.raises(ValueError, match="^" + words.replace("?", r"\?")):
        launch_pi.upstream_of_args(home, args)


def test_a_corrupt_models_json_is_named(home: dict[str, str]) -> None:
    path = Path(home["HOME"]) / ".pi" / "agent" / "models.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match=f"^{path}: cannot read it"):
        launch_pi.upstream_of_args(home, ("--provider", "local"))


def test_pi_compacts_at_its_window_less_its_reserve(home: dict[str, str], tmp_path: Path) -> None:
    settings = launch_pi.limits(home)
    # a models.json model: its contextWindow, or pi's 128,000 when it gives none
    assert PI.window("qwen", 200_000, settings) == 32_768
    assert PI.window("own", 200_000, settings) == 128_000
    assert PI.window("claude-sonnet-4-5", 200_000, settings) == 200_000  # the table's
    assert PI.compaction("qwen", 32_768, settings) == 32_768 - 16_384
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "settings.json").write_text('{"compaction": {"reserveTokens": 4000}}')
    assert PI.compaction("qwen", 32_768, launch_pi.limits(home)) == 28_768
    (tmp_path / ".pi" / "settings.json").write_text('{"compaction": {"enabled": false}}')
    assert PI.compaction("qwen", 32_768, launch_pi.limits(home)) is None
    # the budget is just below it, less the reply's reserve
    assert PI.budget("qwen", settings, CATALOG) < 32_768 - 16_384


def test_pi_starts_with_veils_extension_and_nothing_is_written(
    home: dict[str, str], tmp_path: Path
) -> None:
    agent = Path(home["HOME"]) / ".pi" / "agent"
    before = {p: p.read_bytes() for p in agent.rglob("*") if p.is_file()}
    launch = Launch(
        binary="/opt/pi",
        base="http://127.0.0.1:4000/v1",
        root=tmp_path,
        args=("--provider", "local", "--model", "qwen", "-p", "fix it"),
        env=home,
        veil=("/opt/veil",),
        scratch=tmp_path / "scratch",
    )
    started = LAUNCHERS["pi"].start(launch)
    extension = launch_pi.EXTENSION
    assert extension.is_file() and extension.name == "pi_extension.ts"
    assert started.command == ["/opt/pi", "-e", str(extension), *launch.args]
    assert started.env["VEIL_PI_PROVIDER"] == "local"
    assert started.env["VEIL_PI_BASE_URL"] == "http://127.0.0.1:4000/v1"
    assert json.loads(started.env["VEIL_PI_MCP"]) == [
        "/opt/veil",
        "mcp",
        "--project",
        str(tmp_path),
    ]
    # the hooks wait as long as Claude Code waits for Veil's: 5 s for a prompt, 1 s for a call
    timeouts = json.loads(started.env["VEIL_HOOK_TIMEOUTS"])
    assert timeouts["UserPromptSubmit"] == 5 and timeouts["PreToolUse"] == 1
    assert extension.with_name("veil_mcp.ts").is_file()  # the MCP client it imports
    assert {p: p.read_bytes() for p in agent.rglob("*") if p.is_file()} == before


def test_pi_describes_only_its_own_calls() -> None:
    describe = PI.describe
    assert describe("read", {"filePath": "a.py"}, None) is None  # opencode's read: not pi's
    assert describe("Read", {"file_path": "a.py"}, None) is None
    assert describe("veil_expand", {"pointer": "veil://warm/x"}, None) is None
    assert PI.expand_tool == "veil_expand" and PI.expand_calls == ("veil_expand",)
