"""Each host's tool vocabulary, one description per call, through both of Veil's entry points.

A table of real tool calls as each host sends them — to the model API (what the proxy reads)
and to its hooks (what ``veil hook`` and the ``hook`` MCP tool read) — each with the one
description expected (:class:`veil.hosts.host.Use`). Every row runs through the proxy's entry
point (:func:`veil.proxy.tools.describe`, which working memory takes) and the hooks' entry
point (:func:`veil.clients.claude_code_input.tool_call`, which the attempt record takes), so
the two cannot disagree again. The Claude Code rows with a fixture take its ``tool_input`` from
``tests/data/claude_code`` (the hook payloads as Claude Code sends them; the model's call has
the same name and input); the Codex rows take the shapes the real-binary tests script
(``tests/hosts/test_codex_veil.py``, ``test_smoke.py``) and its hooks' (``Bash`` with
``command``, ``apply_patch`` with the patch in ``command``).
"""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.hosts.binaries import CLAUDE_CODE, CODEX
from veil.cli import doctor
from veil.clients.claude_code_input import tool_call
from veil.context.transcript import Addressed, Call
from veil.hosts import HOSTS, claude_code, codex
from veil.hosts.host import COMMAND_CHARS, Use
from veil.proxy.tools import EXPAND_TOOLS, describe

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "claude_code"
ROOT = "{root}"
OUTSIDE = "{outside}"

PATCH = (
    "*** Begin Patch\n"
    "*** Update File: calc.py\n@@\n-    return a - b\n+    return a + b\n"
    "*** Add File: tests/test_more.py\n+def test_more():\n+    assert True\n"
    "*** Delete File: {root}/old.py\n"
    "*** Update File: calc.py\n@@\n-def add\n+def add_numbers\n"
    "*** End Patch\n"
)
ONE_FILE_PATCH = "*** Begin Patch\n*** Update File: calc.py\n@@\n-    x\n+    y\n*** End Patch\n"


@dataclass(frozen=True)
class Row:
    """One call: its form to the model (``model``, what the proxy reads) and to the hooks
    (``hook``), either absent when the host has no such form; ``fixture``: the hook payload
    whose ``tool_input`` it is. ``expected``: None when no host's vocabulary describes it."""

    id: str
    expected: Use | None
    model: tuple[str, dict[str, Any]] | None = None
    hook: tuple[str, dict[str, Any]] | None = None
    fixture: str = ""


def claude(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A Claude Code call: the same name and input to the model as to its hooks."""
    return {"model": (name, arguments), "hook": (name, arguments)}


def fixture(name: str) -> dict[str, Any]:
    payload = json.loads((FIXTURES / f"{name}.json").read_text())
    call = (payload["tool_name"], payload["tool_input"])
    return {"model": call, "hook": call, "fixture": name}


ROWS = [
    # Claude Code
    Row("read", Use("read", "calc.py", ("calc.py",)), **fixture("post_tool_use_read")),
    Row(
        "read offset only",
        Use("read", "calc.py#10+", ("calc.py",), partial=True),
        **claude("Read", {"file_path": f"{ROOT}/calc.py", "offset": 10}),
    ),
    Row(
        "read offset and limit",
        Use("read", "src/app.py#10+20", ("src/app.py",), partial=True),
        **claude("Read", {"file_path": f"{ROOT}/src/app.py", "offset": 10, "limit": 20}),
    ),
    Row(
        "read limit only",
        Use("read", "calc.py#1+50", ("calc.py",), partial=True),
        **claude("Read", {"file_path": f"{ROOT}/calc.py", "limit": 50}),
    ),
    Row(
        "read outside the root",
        Use("read", f"{OUTSIDE}/notes.txt", (f"{OUTSIDE}/notes.txt",)),
        **claude("Read", {"file_path": f"{OUTSIDE}/notes.txt"}),
    ),
    Row(
        "read outside the root, a range",
        Use("read", f"{OUTSIDE}/notes.txt#3+", (f"{OUTSIDE}/notes.txt",), partial=True),
        **claude("Read", {"file_path": f"{OUTSIDE}/notes.txt", "offset": 3}),
    ),
    Row("read without a path", None, **claude("Read", {"offset": 3})),
    Row("edit", Use("write", "calc.py", ("calc.py",)), **fixture("post_tool_use_edit")),
    Row("multiedit", Use("write", "calc.py", ("calc.py",)), **fixture("post_tool_use_multiedit")),
    Row("write", Use("write", "notes.txt", ("notes.txt",)), **fixture("post_tool_use_write")),
    Row(
        "write outside the root",
        Use("write", f"{OUTSIDE}/x.md", (f"{OUTSIDE}/x.md",)),
        **claude("Write", {"file_path": f"{OUTSIDE}/x.md", "content": "x\n"}),
    ),
    Row(
        "notebookedit",
        Use("write", "nb/a.ipynb", ("nb/a.ipynb",)),
        **claude(
            "NotebookEdit",
            {"notebook_path": f"{ROOT}/nb/a.ipynb", "cell_id": "c1", "new_source": "x = 1"},
        ),
    ),
    Row(
        "bash",
        Use("run", "python -m pytest -q tests/test_calc.py"),
        **fixture("post_tool_use_bash"),
    ),
    Row(
        "bash, padded",
        Use("run", "ls -la"),
        **claude("Bash", {"command": "  ls -la\n", "description": "List"}),
    ),
    Row(
        "bash, long",
        Use("run", "echo " + "x" * (COMMAND_CHARS - 5)),
        **claude("Bash", {"command": "echo " + "x" * 2_000}),
    ),
    Row("bash, blank", None, **claude("Bash", {"command": "   "})),
    Row(
        "powershell",
        Use("run", "Get-ChildItem"),
        **claude("PowerShell", {"command": "Get-ChildItem"}),
    ),
    Row(
        "grep",
        Use("look", "grep def add src"),
        **claude("Grep", {"pattern": "def add", "path": f"{ROOT}/src", "output_mode": "content"}),
    ),
    Row("glob", Use("look", "glob **/*.py"), **claude("Glob", {"pattern": "**/*.py"})),
    Row(
        "webfetch",
        Use("look", "https://example.com/a"),
        **claude("WebFetch", {"url": "https://example.com/a", "prompt": "Summarise"}),
    ),
    Row("websearch", Use("look", "python zstd"), **claude("WebSearch", {"query": "python zstd"})),
    Row("todowrite", None, **claude("TodoWrite", {"todos": []})),
    Row("another mcp tool", None, **claude("mcp__veil__recall", {"query": "calc"})),
    # Codex
    Row(
        "exec_command",
        Use("run", "echo hello"),
        model=("exec_command", {"cmd": "echo hello"}),
        hook=("Bash", {"command": "echo hello"}),
    ),
    Row(
        "shell, a list",
        Use("run", "python -m pytest -q"),
        model=("shell", {"command": ["bash", "-lc", "python -m pytest -q"], "timeout_ms": 10}),
        hook=("Bash", {"command": "python -m pytest -q"}),
    ),
    Row(
        "local shell",
        Use("run", "ls -la"),
        model=("local_shell_call", {"type": "exec", "command": ["ls", "-la"]}),
    ),
    Row(
        "apply_patch, several files",
        Use(
            "write",
            "calc.py tests/test_more.py old.py",
            ("calc.py", "tests/test_more.py", "old.py"),
        ),
        model=("apply_patch", {"input": PATCH}),
        hook=("apply_patch", {"command": PATCH}),
    ),
    Row(
        "apply_patch, one file",
        Use("write", "calc.py", ("calc.py",)),
        model=("apply_patch", {"input": ONE_FILE_PATCH}),
        hook=("apply_patch", {"command": ONE_FILE_PATCH}),
    ),
    Row(
        "apply_patch naming no file",
        Use("write", "apply_patch"),
        model=("apply_patch", {"input": "*** Begin Patch\n*** End Patch\n"}),
        hook=("apply_patch", {"command": "*** Begin Patch\n*** End Patch\n"}),
    ),
    Row(
        "a namespaced mcp tool",
        None,
        model=("mcp__veil.attempts", {}),
    ),
    # pi 0.73.1 (no hooks): the calls tests/hosts/test_pi_veil.py scripts and its tool schemas
    Row("pi read", Use("read", "calc.py", ("calc.py",)), model=("read", {"path": "calc.py"})),
    Row(
        "pi read, absolute with @, a range",
        Use("read", "src/calc.py#10+20", ("src/calc.py",), partial=True),
        model=("read", {"path": "@{root}/src/calc.py", "offset": 10, "limit": 20}),
    ),
    Row(
        "pi write",
        Use("write", "calc.py", ("calc.py",)),
        model=("write", {"path": "calc.py", "content": "x = 1\n"}),
    ),
    Row(
        "pi edit",
        Use("write", "calc.py", ("calc.py",)),
        model=("edit", {"path": "calc.py", "edits": [{"oldText": "a", "newText": "b"}]}),
    ),
    Row("pi bash", Use("run", "make test"), model=("bash", {"command": " make test "})),
    Row(
        "pi grep",
        Use("look", "grep def\\s+add src"),
        model=("grep", {"pattern": "def\\s+add", "path": "src"}),
    ),
]


def fill(value: Any, root: Path, outside: Path) -> Any:
    """``value`` with ``{root}``/``{project}`` and ``{outside}`` replaced by the paths."""
    if isinstance(value, str):
        return (
            value.replace("{root}", str(root))
            .replace("{project}", str(root))
            .replace("{outside}", str(outside))
        )
    if isinstance(value, list):
        return [fill(v, root, outside) for v in value]  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, dict):
        return {k: fill(v, root, outside) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    return value


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "project", tmp_path / "elsewhere"
    root.mkdir()
    outside.mkdir()
    return root, outside


def as_addressed(use: Use | None) -> Addressed:
    """What the proxy gives working memory for ``use``."""
    if use is None:
        return Addressed()
    one = use.files[0] if len(use.files) == 1 else None
    return Addressed(
        use.target,
        reads=one if use.effect == "read" else None,
        partial=use.partial,
        writes=one if use.effect == "write" else None,
    )


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_the_proxy_and_the_hooks_describe_a_call_the_same(
    row: Row, places: tuple[Path, Path]
) -> None:
    root, outside = places
    expected = None
    if row.expected is not None:
        expected = Use(
            row.expected.effect,
            fill(row.expected.target, root, outside),
            tuple(fill(list(row.expected.files), root, outside)),
            row.expected.partial,
        )
    assert row.model is not None or row.hook is not None
    if row.model is not None:
        name, arguments = row.model
        call = Call("call_1", name, fill(arguments, root, outside))
        assert describe(call, root) == as_addressed(expected)
    if row.hook is not None:
        name, arguments = row.hook
        found = tool_call(name, fill(arguments, root, outside), root)
        if expected is None or expected.effect == "look":  # not a call the hooks track
            assert found is None
        else:
            assert found is not None
            kind = {"read": "read", "write": "edit", "run": "command"}[expected.effect]
            assert (found.kind, found.target, found.files) == (
                kind,
                expected.target,
                expected.files,
            )


def test_a_path_through_a_symlinked_root_is_relative(places: tuple[Path, Path]) -> None:
    root, outside = places
    link = outside / "link"
    link.symlink_to(root)
    call = Call("c", "Read", {"file_path": f"{link}/calc.py", "offset": 4})
    assert describe(call, root) == Addressed("calc.py#4+", reads="calc.py", partial=True)
    found = tool_call("Read", {"file_path": f"{root}/calc.py", "offset": 4}, link)
    assert found is not None and found.target == "calc.py#4+"


def test_without_a_root_the_proxy_keeps_the_paths_as_the_agent_wrote_them() -> None:
    call = Call("c", "Read", {"file_path": "/repo/calc.py", "offset": 4})
    assert describe(call) == Addressed("/repo/calc.py#4+", "/repo/calc.py", partial=True)


def test_each_host_describes_only_its_own_tools(places: tuple[Path, Path]) -> None:
    root, _ = places
    assert codex.describe("Read", {"file_path": f"{root}/a.py"}, root) is None
    assert claude_code.describe("exec_command", {"cmd": "ls"}, root) is None
    assert claude_code.describe("apply_patch", {"input": ONE_FILE_PATCH}, root) is None
    # the one name both have means the same in both
    bash = {"command": "make test"}
    assert claude_code.describe("Bash", bash, root) == codex.describe("Bash", bash, root)


def test_the_expand_tool_names_are_recognised_as_before() -> None:
    assert {"mcp__veil__expand", "mcp__veil.expand", "veil_expand", "mcp_veil_expand"} <= set(
        EXPAND_TOOLS
    )
    assert all(h.expand_tool in EXPAND_TOOLS for h in HOSTS.values())


def test_the_tested_versions_come_from_the_host_modules() -> None:
    assert {name: host.tested for name, host in HOSTS.items()} == doctor.TESTED
    assert (doctor.TESTED["claude"], doctor.TESTED["codex"]) == (claude_code.TESTED, codex.TESTED)
    # the newest tested is what the real-binary suites pin
    assert (claude_code.TESTED[1], codex.TESTED[1]) == (CLAUDE_CODE.version, CODEX.version)
    for low, high in (claude_code.TESTED, codex.TESTED):
        assert doctor._version(low) <= doctor._version(high)  # pyright: ignore[reportPrivateUsage]


@pytest.mark.parametrize(
    ("shown", "ok"),
    [(claude_code.TESTED[0], True), (claude_code.TESTED[1], True), ("2.1.196", False)],
)
def test_doctor_warns_outside_the_host_modules_range(tmp_path: Path, shown: str, ok: bool) -> None:
    binary = tmp_path / "claude"
    binary.write_text(f"#!/bin/sh\necho '{shown} (Claude Code)'\n")
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    check = doctor.check_agent("claude", {"VEIL_CLAUDE": str(binary), "PATH": "/usr/bin:/bin"})
    assert check.ok is ok, check
    if not ok:
        assert check.severity == "warn" and "outside the versions Veil is tested" in check.detail
