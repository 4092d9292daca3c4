"""``veil opencode``'s launcher and opencode's budget rule, without the binary (the real one
runs in ``tests/hosts/test_opencode_veil.py``): which provider the run uses and so the proxy's
upstream, its configuration read as opencode reads it (JSONC, ``{env:…}``, the user's files,
the project's, ``OPENCODE_CONFIG_CONTENT`` last), what the run is given in
``OPENCODE_CONFIG_CONTENT`` (merged over the user's own), and where opencode compacts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from veil.hosts import HOSTS
from veil.launch import LAUNCHERS, Launch
from veil.launch import opencode as launch
from veil.llm.catalog import CATALOG

OPENCODE = HOSTS["opencode"]
USER_CONFIG = """{
  // the user's own opencode.json: comments and trailing commas, as opencode allows
  "$schema": "https://opencode.ai/config.json",
  "provider": {
    "anthropic": {"options": {"baseURL": "{env:GATEWAY}/v1",},},
    "local": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "http://127.0.0.1:8080/v1"},
              "models": {"qwen": {"limit": {"context": 32768, "output": 4096}}}},
  },
}
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """An environment whose user configuration is :data:`USER_CONFIG`; the working directory
    is a repository with no project configuration."""
    config = tmp_path / "home" / ".config" / "opencode"
    config.mkdir(parents=True)
    (config / "opencode.json").write_text(USER_CONFIG)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.chdir(repo)
    return {"HOME": str(tmp_path / "home"), "GATEWAY": "https://gateway.example"}


def _started(env: dict[str, str], args: tuple[str, ...] = ()) -> tuple[list[str], dict[str, Any]]:
    root = Path.cwd()
    given = Launch("/bin/opencode", "http://127.0.0.1:5555/v1", root, args, env,
                   ("/venv/bin/veil",), root / "scratch")  # fmt: skip
    started = LAUNCHERS["opencode"].start(given)
    return started.command, json.loads(started.env[launch.CONTENT])


def test_the_upstream_is_the_provider_of_the_model_the_run_uses(home: dict[str, str]) -> None:
    up = LAUNCHERS["opencode"].upstream_for
    # nothing names a model: the first provider the configuration names
    assert up(home, ()) == "https://gateway.example/v1"  # {env:GATEWAY} substituted
    assert up(home, ("run", "-m", "local/qwen", "x")) == "http://127.0.0.1:8080/v1"
    assert up(home, ("--model=openai/gpt-5.5",)) == "https://api.openai.com/v1"
    assert up({**home, "OPENAI_BASE_URL": "https://o.example/v1"}, ("-m", "openai/gpt-5.5")) == (
        "https://o.example/v1"
    )
    with pytest.raises(ValueError, match=r"provider 'mystery' has no base URL Veil knows"):
        up(home, ("-m", "mystery/model"))


def test_the_configuration_merges_as_opencode_merges_it(
    home: dict[str, str], tmp_path: Path
) -> None:
    repo = Path.cwd()
    # the project's file over the user's, OPENCODE_CONFIG_CONTENT over both
    (repo / "opencode.json").write_text('{"model": "local/qwen"}')
    assert LAUNCHERS["opencode"].upstream(home) == "http://127.0.0.1:8080/v1"
    content = {**home, launch.CONTENT: '{"model": "anthropic/claude-opus-5-5"}'}
    assert LAUNCHERS["opencode"].upstream(content) == "https://gateway.example/v1"
    # the last model opencode used, when nothing names one
    (repo / "opencode.json").unlink()
    state = tmp_path / "home" / ".local" / "state" / "opencode"
    state.mkdir(parents=True)
    (state / "model.json").write_text(
        json.dumps({"recent": [{"providerID": "openai", "modelID": "gpt-5.5"}]})
    )
    assert LAUNCHERS["opencode"].upstream(home) == "https://api.openai.com/v1"
    # a file opencode could not read either is one line naming it
    (repo / "opencode.json").write_text("{nope")
    with pytest.raises(ValueError, match=r"opencode\.json: cannot read it"):
        LAUNCHERS["opencode"].upstream(home)


def test_the_run_gets_the_proxy_and_veils_server_over_the_users_own_content(
    home: dict[str, str],
) -> None:
    own = {"theme": "dark", "provider": {"anthropic": {"options": {"timeout": 5}}}}
    command, content = _started({**home, launch.CONTENT: json.dumps(own)}, ("run", "hi"))
    assert command == ["/bin/opencode", "run", "hi"]  # the user's arguments untouched
    assert content["theme"] == "dark"
    options = content["provider"]["anthropic"]["options"]
    assert options == {"timeout": 5, "baseURL": "http://127.0.0.1:5555/v1"}
    assert content["mcp"]["veil"] == {
        "type": "local", "command": ["/venv/bin/veil", "mcp", "--project"]
    }  # fmt: skip
    # the provider the arguments choose is the one pointed at the proxy
    _, content = _started(home, ("run", "-m", "local/qwen", "hi"))
    assert list(content["provider"]) == ["local"]


def test_the_run_gets_veils_plugin_after_the_users_own(home: dict[str, str]) -> None:
    """Veil's hooks: its plugin (package data, a file URL) after the plugins of the user's own
    content (opencode adds each source's list to the others'), told how to start Veil's MCP
    server for the project and how long to wait for a hook."""
    own = {"plugin": ["opencode-wakatime"]}
    given = Launch("/bin/opencode", "http://127.0.0.1:5555/v1", Path.cwd(), ("run", "hi"),
                   {**home, launch.CONTENT: json.dumps(own)}, ("/venv/bin/veil",),
                   Path.cwd() / "scratch")  # fmt: skip
    started = LAUNCHERS["opencode"].start(given)
    content = json.loads(started.env[launch.CONTENT])
    assert content["plugin"] == ["opencode-wakatime", launch.PLUGIN.as_uri()]
    assert launch.PLUGIN.is_file() and launch.PLUGIN.with_name("veil_mcp.ts").is_file()
    assert json.loads(started.env[launch.MCP_VARIABLE]) == [
        "/venv/bin/veil", "mcp", "--project", str(Path.cwd())
    ]  # fmt: skip
    assert json.loads(started.env["VEIL_HOOK_TIMEOUTS"])["PostToolUse"] == 1
    _, content = _started(home)
    assert content["plugin"] == [launch.PLUGIN.as_uri()]


def test_a_configured_veil_server_is_kept(home: dict[str, str]) -> None:
    mine = {"mcp": {"veil": {"type": "local", "command": ["veil", "mcp", "--project"]}}}
    repo = Path.cwd()
    (repo / "opencode.json").write_text(json.dumps(mine))
    _, content = _started(home)
    assert "mcp" not in content  # nothing added: opencode's own entry stands


def test_opencode_compacts_where_its_code_does() -> None:
    """``limit.context − min(limit.output, 32,000)``, or ``limit.input − reserved``; the
    configuration's limits and switches, folded in by the launcher's settings."""
    env: dict[str, str] = {}
    # claude-opus-5-5: a 1M window, 128k output capped at 32k
    assert OPENCODE.compaction("claude-opus-5-5", 1_000_000, env) == 968_000
    # what the real binary did with limit {context: 30000, output: 4000}: compacted at 26,000
    limits = {"VEIL_OPENCODE_LIMITS": json.dumps({"m": {"context": 30_000, "output": 4_000}})}
    assert OPENCODE.window("m", 200_000, limits) == 30_000
    assert OPENCODE.compaction("anthropic/m", 30_000, limits) == 26_000
    with_input = {"VEIL_OPENCODE_LIMITS": json.dumps({"m": {"input": 100_000, "output": 8_000}})}
    assert OPENCODE.compaction("m", 200_000, with_input) == 92_000
    reserved = {**with_input, "VEIL_OPENCODE_COMPACTION_RESERVED": "30000"}
    assert OPENCODE.compaction("m", 200_000, reserved) == 70_000
    assert OPENCODE.compaction("m", 200_000, {"OPENCODE_DISABLE_AUTOCOMPACT": "true"}) is None
    # the budget: just below it, less the reply's reserve; the window is Veil's table's (200k
    # for Sonnet 4.5, whose 1M in opencode's own table is a dearer tier above 200k)
    assert OPENCODE.budget("claude-opus-5-5", env, CATALOG) == 968_000 - 16_000
    assert OPENCODE.budget("claude-sonnet-4-5", env, CATALOG) == 200_000 - 32_000 - 16_000


def test_settings_fold_the_configuration_in(home: dict[str, str]) -> None:
    repo = Path.cwd()
    (repo / "opencode.json").write_text(
        json.dumps({"model": "local/qwen", "compaction": {"auto": False, "reserved": 1000}})
    )
    settings = LAUNCHERS["opencode"].settings(home)
    assert OPENCODE.model_of((), settings) == "qwen"
    assert OPENCODE.window("qwen", 200_000, settings) == 32_768
    assert OPENCODE.compaction("qwen", 32_768, settings) is None  # compaction.auto: false
    assert settings["VEIL_OPENCODE_COMPACTION_RESERVED"] == "1000"


@pytest.mark.parametrize(
    ("tool", "arguments", "use"),
    [
        ("read", {"filePath": "/r/a.py"}, ("read", "a.py", False)),
        ("read", {"filePath": "/r/a.py", "offset": 10, "limit": 5}, ("read", "a.py#10+5", True)),
        ("edit", {"filePath": "/r/a.py", "oldString": "x"}, ("write", "a.py", False)),
        ("write", {"filePath": "/r/b.py", "content": ""}, ("write", "b.py", False)),
        ("apply_patch", {"patchText": "*** Update File: a.py\n"}, ("write", "a.py", False)),
        ("bash", {"command": " ls -la ", "description": "list"}, ("run", "ls -la", False)),
        ("grep", {"pattern": "def", "path": "/r/src"}, ("look", "grep def src", False)),
        ("glob", {"pattern": "*.py"}, ("look", "glob *.py", False)),
        ("webfetch", {"url": "https://x.example"}, ("look", "https://x.example", False)),
    ],
)  # fmt: skip
def test_opencodes_tools(tool: str, arguments: dict[str, Any], use: tuple[str, str, bool]) -> None:
    found = OPENCODE.describe(tool, arguments, Path("/r"))
    assert found is not None and (found.effect, found.target, found.partial) == use
    assert OPENCODE.describe("read", {"path": "/r/a.py"}, Path("/r")) is None  # pi's key, not its
