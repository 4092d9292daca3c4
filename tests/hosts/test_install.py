"""``make install`` as a new user runs it: a copy of this working tree (every file a clone has,
with the tree's uncommitted changes: what is under test), ``make install`` into a temporary
``PREFIX``, then the installed ``veil`` used by its path from another directory — ``--help``,
and ``veil claude --shadow -- -p …`` running the REAL Claude Code against the scripted model
server on 127.0.0.1.

Slow (``-m 'not slow'`` leaves it out): ``make install`` builds Veil and installs it with its
``tui`` and ``server`` extras into a new virtualenv — about 25-40 s here, the packages coming
from pip's cache and the machine's local wheel index."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.hosts.runners import ClaudeRunner
from veil.llm.scripted_server import ScriptedServer, ToolUse, Turn

REPO = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT = 600


def working_tree(destination: Path) -> Path:
    """``destination`` holding the files of this repository a clone would have (tracked, plus
    untracked ones git does not ignore), as they are in the working tree now."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode()  # fmt: skip
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the working tree is not copied
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return destination


def user_env() -> dict[str, str]:
    """Our environment without this checkout's virtualenv: ``python3`` is the one a person's
    shell finds, not the test's."""
    venv = REPO / ".venv"
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if not p.startswith(str(venv))]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    return {**env, "PATH": os.pathsep.join(path)}


@pytest.mark.slow
def test_make_install_puts_a_working_veil_on_path(
    claude: Path, agent_repo: Path, tmp_path: Path
) -> None:
    clone = working_tree(tmp_path / "veil")
    prefix, bindir = tmp_path / "prefix", tmp_path / "bin"
    done = subprocess.run(
        ["make", "install", f"PREFIX={prefix}", f"BINDIR={bindir}"],
        cwd=clone, env=user_env(), capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
        check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    veil = bindir / "veil"
    venv = prefix / "share" / "veil" / "venv"
    assert veil.resolve() == (venv / "bin" / "veil").resolve()
    assert f"installed: {veil} -> {venv}/bin/veil (veil " in done.stdout, done.stdout
    # BINDIR is not on PATH here: the output says so and how to add it
    assert f'export PATH="{bindir}:$PATH"' in done.stdout, done.stdout
    # an isolated environment, not an editable link back to the tree it was built from
    site = next(venv.glob("lib/python3*/site-packages"))
    assert (site / "veil" / "cli" / "main.py").is_file()
    assert not list(site.glob("__editable__*veil*")), "an editable install"
    # the extras a user needs for the TUI and `veil serve`
    imports = "import textual, fastapi, uvicorn, veil; print(veil.__file__)"
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", imports], capture_output=True,
                           text=True, check=False, cwd=tmp_path)  # fmt: skip
    assert probe.returncode == 0 and probe.stdout.startswith(str(site)), probe

    elsewhere = agent_repo  # another directory: a git repository of its own
    help_run = subprocess.run([str(veil), "--help"], cwd=elsewhere, capture_output=True,
                              text=True, check=False, env=user_env())  # fmt: skip
    assert help_run.returncode == 0 and "run Claude Code with Veil" in help_run.stdout, help_run

    runner = ClaudeRunner(claude, tmp_path / "claude-home")
    path = f"{bindir}{os.pathsep}{user_env()['PATH']}"  # as the install's output told us
    script = [Turn("Looking.", (ToolUse("Bash", {"command": "echo hello"}),)), Turn("Done.")]
    with ScriptedServer(script) as server:
        run = runner(
            "say hello",
            cwd=elsewhere,
            base_url=server.url,
            env={"PATH": path, "ENABLE_TOOL_SEARCH": "false"},
            wrapper=[str(veil), "claude", "--shadow"],
        )
    assert run.returncode == 0, run.describe()
    assert "SHADOW mode" in run.stderr and "veil claude: " in run.stderr, run.stderr
    requests = server.model_requests
    assert len(requests) == len(script), run.describe()
    assert requests[1].tool_results[-1].text.strip() == "hello"
    # the installed veil's MCP server gave Claude Code the expand tool
    assert "mcp__veil__expand" in requests[0].tool_names, requests[0].tool_names
    assert (elsewhere / ".veil" / "context.db").is_file()  # the project's store, where it ran
