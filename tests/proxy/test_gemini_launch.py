"""``veil gemini``'s launcher and Gemini CLI's facts, without the binary (the real one runs in
``tests/hosts/test_gemini_veil.py``): the upstream, the home the run gets (the user's settings
plus Veil's MCP server, every other entry linked, nothing of the user's written), the experiment
flags that switch its masking off, the compression point and budget, its tool vocabulary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from veil.hosts import HOSTS, describe
from veil.hosts.gemini_cli import TOKEN_LIMIT, Use
from veil.launch import LAUNCHERS, Launch
from veil.launch import gemini_cli as launch_gemini
from veil.llm.catalog import CATALOG

GEMINI = HOSTS["gemini"]
LAUNCHER = LAUNCHERS["gemini"]
VEIL = ("/opt/veil/bin/veil",)


def user_home(tmp_path: Path, settings: str) -> Path:
    home = tmp_path / "home"
    (home / ".gemini" / "tmp" / "repo" / "chats").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(settings)
    (home / ".gemini" / "oauth_creds.json").write_text("{}")
    return home


def launch(tmp_path: Path, env: dict[str, str], args: tuple[str, ...] = ()) -> Launch:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    root = tmp_path / "repo"
    return Launch("/bin/gemini", "http://127.0.0.1:4000", root, args, env, VEIL, scratch)


def test_the_run_gets_a_home_with_veils_server_and_everything_else_linked(tmp_path: Path) -> None:
    settings = '{\n  // mine\n  "security": {"auth": {"selectedType": "gemini-api-key"}},\n'
    settings += '  "mcpServers": {"other": {"command": "x"}}, "url": "http://a//b"\n}\n'
    home = user_home(tmp_path, settings)
    before = {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}
    env = {"HOME": str(home), "PATH": "/usr/bin"}
    started = LAUNCHER.start(launch(tmp_path, env, ("-p", "hi")))

    assert started.command == ["/bin/gemini", "-p", "hi"]
    assert started.env["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:4000"
    assert started.env["HOME"] == str(home)  # the shells Gemini CLI runs keep the user's home
    run_home = Path(started.env["GEMINI_CLI_HOME"])
    assert run_home.is_relative_to(tmp_path / "scratch")
    mine = json.loads((run_home / ".gemini" / "settings.json").read_text())
    assert mine["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    assert mine["url"] == "http://a//b"  # a comment is stripped, a string is not
    assert mine["mcpServers"]["other"] == {"command": "x"}
    assert mine["mcpServers"]["veil"] == {
        "command": VEIL[0], "args": ["mcp", "--project"], "cwd": str(tmp_path / "repo"),
        "trust": True,
        "excludeTools": ["hook"],
    }  # fmt: skip
    for name in ("tmp", "oauth_creds.json", "history"):
        assert (run_home / ".gemini" / name).resolve() == (home / ".gemini" / name).resolve()
    assert started.env["GEMINI_CLI_TRUSTED_FOLDERS_PATH"] == str(
        home / ".gemini" / "trustedFolders.json"
    )
    # masking off through its experiment flags (0.61 reads no masking setting)
    flags = json.loads(Path(started.env["GEMINI_EXP"]).read_text())["flags"]
    assert {f["flagId"]: f["intValue"] for f in flags} == {
        flag: str(launch_gemini.UNMASKABLE) for flag in launch_gemini.MASKING_FLAGS
    }
    # nothing of the user's was changed (history/ was made: Gemini CLI makes it on any run)
    assert {p: p.read_bytes() for p in home.rglob("*") if p.is_file()} == before


def test_a_veil_server_of_the_users_own_and_their_experiment_flags_are_kept(
    tmp_path: Path,
) -> None:
    own = {"command": "veil", "args": ["mcp", "--project"]}
    home = user_home(tmp_path, json.dumps({"mcpServers": {"veil": own}}))
    given = tmp_path / "exp.json"
    given.write_text(json.dumps({"flags": [{"flagId": 1, "boolValue": True},
                                           {"flagId": 45758817, "intValue": "10"}]}))  # fmt: skip
    env = {"HOME": str(home), "GEMINI_EXP": str(given)}
    started = LAUNCHER.start(launch(tmp_path, env))
    run_home = Path(started.env["GEMINI_CLI_HOME"])
    assert json.loads((run_home / ".gemini" / "settings.json").read_text())["mcpServers"] == {
        "veil": own
    }
    flags = json.loads(Path(started.env["GEMINI_EXP"]).read_text())["flags"]
    assert {"flagId": 1, "boolValue": True} in flags
    assert {f["flagId"]: f.get("intValue") for f in flags}[45758817] == str(
        launch_gemini.UNMASKABLE
    )


def test_unreadable_settings_are_one_line_naming_the_file(tmp_path: Path) -> None:
    home = user_home(tmp_path, "{ not json")
    with pytest.raises(ValueError, match=r"settings\.json: not JSON .*fix it"):
        LAUNCHER.start(launch(tmp_path, {"HOME": str(home)}))


def test_the_upstream_is_its_base_url_or_googles() -> None:
    assert LAUNCHER.upstream({}) == "https://generativelanguage.googleapis.com"
    assert LAUNCHER.upstream({"GOOGLE_GEMINI_BASE_URL": "http://gw:1"}) == "http://gw:1"


def test_it_compresses_at_its_threshold_of_its_own_limit(tmp_path: Path) -> None:
    assert GEMINI.window("gemini-3.1-pro-preview", 2_000_000, {}) == TOKEN_LIMIT
    assert GEMINI.compaction("x", TOKEN_LIMIT, {}) == TOKEN_LIMIT // 2
    home = user_home(tmp_path, json.dumps({"model": {"name": "gemini-2.5-flash",
                                                     "compressionThreshold": 0.2}}))  # fmt: skip
    env = LAUNCHER.settings({"HOME": str(home)})
    assert GEMINI.model_of((), env) == "gemini-2.5-flash"
    assert GEMINI.compaction("gemini-2.5-flash", TOKEN_LIMIT, env) == int(TOKEN_LIMIT * 0.2)
    assert GEMINI.model_of(("-m", "gemini-3-pro-preview"), env) == "gemini-3-pro-preview"
    # the budget: below its compression, never into the dearer tier above 200k
    assert GEMINI.budget("gemini-3.1-pro-preview", {}, CATALOG) == 200_000
    assert GEMINI.budget("gemini-2.5-flash", env, CATALOG) < int(TOKEN_LIMIT * 0.2)


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("read_file", {"file_path": "{root}/a.py"}, Use("read", "a.py", ("a.py",))),
        ("read_file", {"file_path": "a.py", "start_line": 10, "end_line": 19},
         Use("read", "a.py#10+10", ("a.py",), partial=True)),
        ("read_file", {"file_path": "a.py", "start_line": 5},
         Use("read", "a.py#5+", ("a.py",), partial=True)),
        ("read_many_files", {"include": ["a.py", "{root}/b.py"]},
         Use("read", "a.py b.py", ("a.py", "b.py"))),
        ("write_file", {"file_path": "a.py", "content": "x"}, Use("write", "a.py", ("a.py",))),
        ("replace", {"file_path": "{root}/a.py", "old_string": "x", "new_string": "y"},
         Use("write", "a.py", ("a.py",))),
        ("run_shell_command", {"command": " make test ", "dir_path": "."},
         Use("run", "make test")),
        ("grep_search", {"pattern": "def", "dir_path": "src"}, Use("look", "grep def src")),
        ("search_file_content", {"pattern": "def"}, Use("look", "grep def")),
        ("glob", {"pattern": "**/*.py"}, Use("look", "glob **/*.py")),
        ("list_directory", {"dir_path": "src"}, Use("look", "ls src")),
        ("google_web_search", {"query": "veil"}, Use("look", "veil")),
        ("read_file", {}, None),
    ],
)  # fmt: skip
def test_its_tool_vocabulary(
    tmp_path: Path, name: str, arguments: dict[str, object], expected: Use | None
) -> None:
    given = {
        k: [v.format(root=tmp_path) for v in v] if isinstance(v, list) else
        v.format(root=tmp_path) if isinstance(v, str) else v
        for k, v in arguments.items()
    }  # fmt: skip
    assert describe(name, given, tmp_path) == expected


def test_its_expand_and_fixed_part() -> None:
    assert GEMINI.expand_tool == "mcp_veil_expand" and GEMINI.expand_calls == ("mcp_veil_expand",)
    assert 12_000 < GEMINI.fixed_tokens < 20_000
