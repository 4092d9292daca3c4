"""The session the hook-latency benchmark runs in the real Claude Code: a tiny repository with
failing checks, the tool calls the scripted model makes, and Veil installed with the hooks of
each configuration.

The scripted model makes the same tool calls in every configuration, in cycles of eight: a
failing check (``python3 -B check.py VK``), a ``Read`` of the module, an ``Edit`` that does not
fix it, the check failing again, the fixing ``Edit``, the check passing, a ``Write`` of a notes
file and ``git status``. Each cycle ends in a pass, so the convergence monitor never reaches
level 3 and stops the session early.

Configurations (:func:`hooks_for`): ``mcp_tool``, what ``veil install claude-code`` installs;
``command``, the same handlers as one ``veil hook`` process per hook, with the timeouts the
command hooks had before the ``mcp_tool`` ones; ``none``, the MCP server and no hooks.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.hosts.veil_setup import VEIL_BIN, trust_workspace
from tests.hosts.veil_setup import install as veil_install

from veil.clients.settings import HOOKS, hook_command
from veil.llm.scripted_server import ModelRequest, ToolUse, Turn

Json = dict[str, Any]
COMMAND_TIMEOUTS = {"UserPromptSubmit": 15}
"""Seconds Claude Code gave the command hooks before they became ``mcp_tool`` calls (10 for
the tool-call hooks): enough for a cold ``veil`` process, so Claude Code never cuts the baseline
short (``veil hook``'s own 0.9 s deadline still applies: ``benchmarks.hook_latency.GAVE_UP``)."""
COMMAND_TIMEOUT = 10
PROMPT = "make every check in check.py pass"
FACTS = [
    ("project", "runs its checks with", "python3 -B check.py NAME"),
    ("calc.py", "holds", "one constant per check, each must be 1"),
]


CHECK_PY = '''\
"""The project's checks: python3 -B check.py NAME passes when calc.NAME == 1."""
import sys

import calc

name = sys.argv[1]
value = getattr(calc, name)
if value != 1:
    print(f"FAILED test_{name.lower()}: assert {value} == 1")
    sys.exit(1)
print(f"1 passed: test_{name.lower()}")
'''


def cycles_for(calls: int) -> int:
    return -(-calls // 8)


def make_repo(repo: Path, calls: int) -> None:
    """A git repository with ``calc.py`` (one constant per cycle, all 0) and ``check.py``."""
    repo.mkdir(parents=True)
    (repo / "README.md").write_text("# calc\n\nRun `python3 -B check.py NAME` for each check.\n")
    (repo / "calc.py").write_text("".join(f"V{k} = 0\n" for k in range(1, cycles_for(calls) + 1)))
    (repo / "check.py").write_text(CHECK_PY)
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "."],
        ["-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-q", "-m", "root"],
    ):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@dataclass(frozen=True)
class Step:
    """One scripted tool call and whether Claude Code should report it as failed."""

    call: ToolUse
    fails: bool
    label: str


def steps(repo: Path, calls: int) -> list[Step]:
    """The tool calls of a session: cycles of eight (see the module docstring), cut to
    ``calls``."""
    calc = str(repo / "calc.py")

    def bash(command: str, description: str) -> ToolUse:
        return ToolUse("Bash", {"command": command, "description": description})

    out: list[Step] = []
    for k in range(1, cycles_for(calls) + 1):
        # -B: no .pyc, which a same-size edit within the second would leave stale
        check = bash(f"python3 -B check.py V{k}", f"run check V{k}")
        out += [
            Step(check, True, "Bash (check fails)"),
            Step(ToolUse("Read", {"file_path": calc}), False, "Read"),
            Step(
                ToolUse(
                    "Edit",
                    {"file_path": calc, "old_string": f"V{k} = 0", "new_string": f"V{k} = 2"},
                ),
                False,
                "Edit",
            ),
            Step(check, True, "Bash (check fails)"),
            Step(
                ToolUse(
                    "Edit",
                    {"file_path": calc, "old_string": f"V{k} = 2", "new_string": f"V{k} = 1"},
                ),
                False,
                "Edit",
            ),
            Step(check, False, "Bash (check passes)"),
            Step(
                ToolUse(
                    "Write",
                    {"file_path": str(repo / f"NOTES-v{k}.md"), "content": f"V{k} fixed: 1.\n"},
                ),
                False,
                "Write",
            ),
            Step(bash("git status --short", "show changes"), False, "Bash (succeeds)"),
        ]
    return out[:calls]


def script(plan: Sequence[Step], arrivals: list[float]) -> list[Callable[[ModelRequest], Turn]]:
    """One turn per step, then a closing text; each turn notes when its request arrived."""

    def turn(reply: Turn) -> Callable[[ModelRequest], Turn]:
        def answer(request: ModelRequest) -> Turn:
            arrivals.append(time.monotonic())
            return reply

        return answer

    turns = [turn(Turn(f"Next: {s.label}.", (s.call,))) for s in plan]
    return [*turns, turn(Turn("Every check passes."))]


def hooks_for(config: str) -> Json | None:
    """The ``hooks`` table of ``config`` (``None``: the installed one is kept)."""
    if config == "mcp_tool":
        return None
    if config == "none":
        return {}
    hooks: Json = {}
    for spec in HOOKS:
        timeout = COMMAND_TIMEOUTS.get(spec.event, COMMAND_TIMEOUT)
        if spec.kind == "command":
            timeout = spec.timeout
        group: Json = {} if spec.matcher is None else {"matcher": spec.matcher}
        group["hooks"] = [
            {
                "type": "command",
                "command": hook_command([str(VEIL_BIN)], spec.event),
                "timeout": timeout,
            }
        ]
        hooks[spec.event] = [group]
    return hooks


def configure(config: str, repo: Path, home: Path, state: Path) -> dict[str, str]:
    """Install Veil in ``repo``, then give it ``config``'s hooks; event → kind of hook."""
    veil_install("claude-code", repo, home, state, portable=False)
    trust_workspace(home, repo)
    path = repo / ".claude" / "settings.local.json"
    settings: Json = json.loads(path.read_text())
    hooks = hooks_for(config)
    if hooks is not None:
        if hooks:
            settings["hooks"] = hooks
        else:
            settings.pop("hooks", None)
        path.write_text(json.dumps(settings, indent=2) + "\n")
    kinds: dict[str, str] = {}
    for event, groups in settings.get("hooks", {}).items():
        for group in groups:
            for handler in group["hooks"]:
                kinds[event] = str(handler["type"])
    return kinds
