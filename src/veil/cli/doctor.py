"""``veil doctor [--json]``: one screen of checks of Veil's setup here, each problem with its fix.

One function per check, each returning a :class:`Check`. Nothing is changed, except what an agent
would do anyway: starting ``veil mcp --project`` opens (creates) the project's stores. The checks:
``veil`` on ``PATH``; every host agent (``claude``, ``codex``, ``opencode``, ``pi``,
``gemini``) found and inside :data:`TESTED`; Claude Code's hooks, MCP server and workspace
trust, and Codex's MCP server and hook trust, when ``veil install`` put them there; the store
``.veil/context.db``. Claude Code (2.1.332) ignores a project's
own settings files (``.claude/settings*.json``, ``.mcp.json``) until the workspace is trusted
(``~/.claude.json`` ``projects[<dir>].hasTrustDialogAccepted``, on the root or a directory between
the current one and it): interactive sessions ask first; ``claude -p`` skips the check (seen with
2.1.332: hooks and allowed MCP tools work untrusted).

Exit status: 1 when a check fails (severity ``fail``), else 0; warnings and notes never fail.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, TextIO, cast

from veil import __version__
from veil.clients import codex
from veil.clients.settings import (
    MCP_NAME,
    SettingsError,
    claude_dir,
    claude_json,
    is_veil_hook,
    read_json,
)
from veil.hosts import HOSTS
from veil.launch import LAUNCHERS

Severity = Literal["fail", "warn", "note"]
Agent = str
"""A host's command (a key of :data:`veil.hosts.HOSTS`)."""
TIMEOUT_S = 10.0
"""How long any program doctor runs may take, an MCP server's first answer included."""
TESTED = {name: host.tested for name, host in HOSTS.items()}
"""Agent → the oldest and newest version Veil is tested with (each host module's ``TESTED``)."""
PACKAGES = {name: host.package for name, host in HOSTS.items()}
VARIABLES = {name: launcher.binary_variable for name, launcher in LAUNCHERS.items()}
CODEX_ENV = ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ")
"""What Codex passes an MCP server of its own environment (besides the entry's ``env_vars``)."""
MARKS = {"fail": "✗", "warn": "⚠"}
"""The mark of a check that is not ok (✓ one that is, · a note)."""
INITIALIZE = (
    b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": '
    b'"2025-06-18", "capabilities": {}, "clientInfo": {"name": "veil-doctor", "version": "1"}}}\n'
)


@dataclass(frozen=True)
class Check:
    """One line of the screen. ``ok``: nothing to fix. ``severity``: what a check that is not
    ok means — ``fail`` (✗, exit 1), ``warn`` (⚠) — or ``note`` (·, always ok): an optional
    part, absent, whose ``fix`` says how to set it up."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    severity: Severity = "fail"


def _fail(name: str, detail: str, fix: str = "") -> Check:
    return Check(name, False, detail, fix)


def _warn(name: str, detail: str, fix: str = "") -> Check:
    return Check(name, False, detail, fix, "warn")


def _note(name: str, detail: str, fix: str = "") -> Check:
    return Check(name, True, detail, fix, "note")


def _obj(value: object) -> dict[str, Any]:
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def _items(value: object) -> list[Any]:
    return cast(list[Any], value) if isinstance(value, list) else []


def _line(text: str, last: bool = False) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[-1] if last else lines[0]) if lines else ""


def _run(argv: Sequence[str], env: Mapping[str, str], cwd: Path | None = None) -> tuple[bool, str]:
    """Run a program for at most :data:`TIMEOUT_S`: (exit 0, its first line) or (False, why)."""
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=TIMEOUT_S, env=dict(env), cwd=cwd,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return False, f"no answer within {TIMEOUT_S:g} s"
    except OSError as exc:
        return False, f"{argv[0]}: {exc.strerror or exc}"
    if done.returncode != 0:
        why = _line(done.stderr, last=True) or _line(done.stdout)
        return False, f"exit {done.returncode}" + (f": {why}" if why else "")
    return True, _line(done.stdout) or _line(done.stderr)


def _veil(env: Mapping[str, str]) -> str:
    """How the person can run veil now: ``veil`` when it is on PATH, else this interpreter."""
    if shutil.which("veil", path=env.get("PATH")):
        return "veil"
    return shlex.join([sys.executable, "-m", "veil.cli.main"])


def _missing(words: Sequence[str], env: Mapping[str, str]) -> str | None:
    """Why a command's program cannot be started (not on PATH, no such file), or None."""
    program = words[0] if words else ""
    if "/" in program:
        return None if Path(program).exists() else f"{program} does not exist"
    found = program and shutil.which(program, path=env.get("PATH"))
    return None if found else f"`{program}` is not on PATH"


def check_veil_on_path(env: Mapping[str, str]) -> Check:
    """``veil`` resolves on ``PATH`` and ``veil --version`` answers within the timeout."""
    name, found = "veil on PATH", shutil.which("veil", path=env.get("PATH"))
    if found is None:
        return _fail(name, "no `veil` on PATH: your shell cannot run it by name", _path_fix())
    ok, out = _run([found, "--version"], env)
    if not ok:
        return _fail(name, f"{found} does not run ({out})", _path_fix())
    if out != f"veil {__version__}":
        return _warn(name, f"{found} is {out}, this is veil {__version__}", _path_fix())
    return Check(name, True, f"{found} ({out})")


def _path_fix() -> str:
    """Ways that exist here to put this veil on PATH: ``make install`` in the clone it runs
    from (its own virtualenv, linked into ``~/.local/bin``), or its directory on PATH."""
    ways: list[str] = []
    tree = Path(__file__).resolve().parents[3]
    if (tree / "Makefile").exists() and (tree / "pyproject.toml").exists():
        ways.append(f"make -C {shlex.quote(str(tree))} install")
    here = Path(sys.executable).parent
    if (here / "veil").exists():
        ways.append(f'export PATH="{here}:$PATH" (in your shell profile, to keep it)')
    if (tree / "pyproject.toml").exists():
        if shutil.which("pipx"):
            ways.append(f"pipx install {shlex.quote(str(tree))}")
        elif sys.prefix == sys.base_prefix:  # --user does not work inside a virtualenv
            ways.append(f"{sys.executable} -m pip install --user {shlex.quote(str(tree))}")
    return " — or: ".join(ways) or "pip install Veil, then put the bin it installs into on PATH"


def _version(text: str) -> tuple[int, ...]:
    found = re.search(r"\d+(?:\.\d+)+", text)
    return tuple(int(part) for part in found.group().split(".")) if found else ()


def find_agent(agent: Agent, env: Mapping[str, str]) -> str | None:
    """The agent's binary: ``$VEIL_CLAUDE`` / ``$VEIL_CODEX``, else on ``PATH``."""
    return env.get(VARIABLES[agent]) or shutil.which(agent, path=env.get("PATH"))


def check_agent(agent: Agent, env: Mapping[str, str]) -> Check:
    """The agent is found and its version is inside :data:`TESTED` (optional: a note if not)."""
    low, high = TESTED[agent]
    pinned = f"npm install -g {PACKAGES[agent]}@{high}"
    binary = find_agent(agent, env)
    if binary is None:
        return _note(agent, f"not found (${VARIABLES[agent]}, PATH); optional", pinned)
    ok, out = _run([binary, "--version"], env)
    version = _version(out) if ok else ()
    if not version:
        return _warn(agent, f"{binary} --version: {out or 'no version number'}", pinned)
    shown = ".".join(map(str, version))
    tested = f"tested {low}" + (f" – {high}" if high != low else "")
    if not _version(low) <= version <= _version(high):
        return _warn(agent, f"{binary} {shown}: outside the versions Veil is {tested}", pinned)
    return Check(agent, True, f"{binary} {shown} ({tested})")


def mcp_starts(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> tuple[bool, str]:
    """Start the MCP server ``argv`` in ``cwd`` (its own process group), write an
    ``initialize`` request line, read one response line within :data:`TIMEOUT_S` (then the
    group is killed), close its input and stop it. Returns (it answered, what happened)."""
    if (why := _missing(argv, env)) is not None:
        return False, why
    started = time.monotonic()
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
                env=dict(env), cwd=cwd, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            return False, f"cannot start {argv[0]}: {exc.strerror or exc}"
        assert proc.stdin is not None and proc.stdout is not None
        timer = threading.Timer(TIMEOUT_S, _kill, (proc,))
        timer.start()
        try:
            with suppress(OSError):  # it may be gone already: its status says why
                proc.stdin.write(INITIALIZE)
                proc.stdin.flush()
            line = proc.stdout.readline()
            seconds = time.monotonic() - started
        finally:
            timer.cancel()
            with suppress(OSError):
                proc.stdin.close()
            try:
                proc.wait(2)
            except subprocess.TimeoutExpired:
                _kill(proc)
            proc.stdout.close()
        errors.seek(0)
        said = _line(errors.read().decode("utf-8", "replace"), last=True)
    tail = f": {said}" if said else ""
    if not line and seconds >= TIMEOUT_S:
        return False, f"no answer to initialize within {TIMEOUT_S:g} s{tail}"
    if not line:
        return False, f"exited with status {proc.returncode} before answering initialize{tail}"
    with suppress(ValueError):
        info = _obj(_obj(_obj(json.loads(line)).get("result")).get("serverInfo"))
        if info:
            who = f"{info.get('name')} {info.get('version')}"
            return True, f"answers initialize ({who}, {seconds:.1f} s)"
    return False, f"answered initialize with {line[:100].decode('utf-8', 'replace')!r}"


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the server's process group (a wrapper's children too) and reap it."""
    with suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


# ---- Claude Code ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaudeSetup:
    """What ``veil install claude-code`` left in Claude Code's settings, seen from ``root``:
    Veil's hooks (file, event, handler), its MCP server (where, entry), whether any of it is
    in the project's own files (``gated``: they need the workspace trusted), and
    ``~/.claude.json``."""

    hooks: tuple[tuple[Path, str, dict[str, Any]], ...]
    mcp: tuple[str, dict[str, Any]] | None
    gated: bool
    config: dict[str, Any]


def claude_setup(root: Path, env: Mapping[str, str]) -> ClaudeSetup:
    """Veil's hooks (user, project and local settings) and its MCP server ``veil`` (local scope
    in ``~/.claude.json``, then ``.mcp.json``, then user scope: Claude Code's precedence)."""
    read = read_json  # a file it cannot read is a SettingsError
    project = (root / ".claude" / "settings.json", root / ".claude" / "settings.local.json")
    hooks: list[tuple[Path, str, dict[str, Any]]] = []
    for path in (claude_dir(env) / "settings.json", *project):
        for event, groups in _obj(read(path).get("hooks")).items():
            for group in map(_obj, _items(groups)):
                hooks += [(path, event, h) for h in _items(group.get("hooks")) if is_veil_hook(h)]
    config_file = claude_json(env)
    config = read(config_file)
    local = _obj(_obj(config.get("projects")).get(str(root)))
    places = [(f"{config_file} projects[{str(root)!r}]", local)]
    places += [(str(root / ".mcp.json"), read(root / ".mcp.json")), (str(config_file), config)]
    found = [(where, data.get("mcpServers")) for where, data in places]
    entries = [(where, _obj(servers).get(MCP_NAME)) for where, servers in found]
    mcp = next(((where, _obj(e)) for where, e in entries if _obj(e)), None)
    gated = any(path in project for path, _, _ in hooks)
    gated = gated or (mcp is not None and mcp[0].endswith(".mcp.json"))
    return ClaudeSetup(tuple(hooks), mcp, gated, config)


def _reinstall(setup: ClaudeSetup, env: Mapping[str, str]) -> str:
    user = not setup.gated and (setup.mcp is None or not setup.mcp[0].endswith("]"))
    return f"{_veil(env)} install claude-code{' --user' if user else ''}"


def check_claude_hooks(setup: ClaudeSetup, root: Path, env: Mapping[str, str]) -> Check:
    """Veil's hooks are there; each command hook's veil runs (``<veil> --version``, the words
    before ``hook``); the ``mcp_tool`` hooks have the MCP server ``veil`` they call."""
    name, fix = "claude-code hooks", _reinstall(setup, env)
    if not setup.hooks:
        return _fail(name, "the MCP server is installed, none of Veil's hooks", fix)
    if setup.mcp is None:
        return _fail(name, "the hooks call the MCP server 'veil', which is not configured", fix)
    versions: dict[str, str] = {}
    for path, event, handler in setup.hooks:
        if handler.get("type") != "command":
            continue
        command = str(handler.get("command") or "")
        try:
            words = shlex.split(command)
        except ValueError:
            words = [command]
        veil = words[: words.index("hook")] if "hook" in words else words[:1]
        why = _missing(veil, env)
        ok, out = (False, why) if why else _run([*veil, "--version"], env, root)
        if not ok:
            return _fail(name, f"{event} in {path} runs `{command}`: {out}", fix)
        versions[shlex.join(veil)] = out
    files = ", ".join(sorted({str(path) for path, _, _ in setup.hooks}))
    runs = "".join(f"; `{k}` runs ({v})" for k, v in versions.items())
    return Check(name, True, f"{len(setup.hooks)} in {files}{runs}")


def check_claude_mcp(setup: ClaudeSetup, root: Path, env: Mapping[str, str]) -> Check:
    """The ``veil`` MCP server starts as Claude Code starts it (its command, args and env, in
    the project) and answers ``initialize``."""
    name, fix = "claude-code MCP server", _reinstall(setup, env)
    if setup.mcp is None:
        return _fail(name, "Veil's hooks are installed, its MCP server 'veil' is not", fix)
    where, entry = setup.mcp
    argv = [str(entry.get("command") or ""), *map(str, _items(entry.get("args")))]
    environ = {**env, **{str(k): str(v) for k, v in _obj(entry.get("env")).items()}}
    ok, out = mcp_starts(argv, environ, root)
    if not ok:
        see = f"see why: cd {shlex.quote(str(root))} && {shlex.join(argv)} </dev/null"
        return _fail(name, f"`{shlex.join(argv)}` ({where}) {out}", f"{see}; then {fix}")
    return Check(name, True, f"`{shlex.join(argv)}` {out}")


def check_claude_trust(
    setup: ClaudeSetup, cwd: Path, git: Path | None, env: Mapping[str, str]
) -> Check:
    """Claude Code's trust record, which the project's own settings files need: on the current
    directory or one above it — up to the repository's root ``git``, any outside a repository —
    never the home directory, whose trust Claude Code keeps for one session only."""
    name, where = "claude-code workspace trust", claude_json(env)
    here, root = cwd.resolve(), git or cwd.resolve()
    chain = [here, *here.parents]
    if git is not None:
        chain = chain[: len(here.parts) - len(git.parts) + 1] if here.is_relative_to(git) else [git]
    projects = _obj(setup.config.get("projects"))
    home = Path(env.get("HOME") or Path.home()).resolve()
    trusted = [_obj(projects.get(str(p))).get("hasTrustDialogAccepted") is True for p in chain]
    ok = [p for p, yes in zip(chain, trusted, strict=True) if yes and p != home]
    if ok:
        return Check(name, True, f"{ok[0]} is trusted ({where})")
    if not setup.gated:
        return _note(name, f"{root} is not trusted; Veil's entries are user-wide and apply anyway")
    if root == home:
        why = "is your home directory, which Claude Code trusts one session at a time"
        return _fail(name, f"{root} {why}", f"{_veil(env)} install claude-code --user")
    why = (
        "is not trusted: Claude Code ignores Veil's hooks and MCP server in .claude/ and "
        ".mcp.json here (interactive sessions ask first, `claude -p` skips the check)"
    )
    fix = (
        f"run `claude` once in {root} and accept the trust dialog, or set "
        f'projects["{root}"].hasTrustDialogAccepted: true in {where}'
    )
    return _fail(name, f"{root} {why}", fix)


# ---- Codex ---------------------------------------------------------------------------------


def codex_checks(root: Path, env: Mapping[str, str]) -> list[Check]:
    """Codex's ``[mcp_servers.veil]`` starts with the environment Codex gives it, and Codex
    trusts Veil's hooks in ``hooks.json`` (a note when ``veil install codex`` was not run)."""
    config, hooks_file, fix = codex.config_path(env), codex.hooks_path(env), _veil(env)
    fix = f"{fix} install codex"
    try:
        text = config.read_text(encoding="utf-8") if config.exists() else ""
        server = _obj(_obj(tomllib.loads(text).get("mcp_servers")).get(MCP_NAME))
        hooks = _obj(read_json(hooks_file).get("hooks"))
    except (OSError, ValueError) as exc:  # TOML, JSON, UTF-8 and settings errors are ValueErrors
        return [_fail("codex settings", f"{config}: {exc}", f"fix the file, then {fix}")]
    groups = [_obj(group) for groups in hooks.values() for group in _items(groups)]
    count = sum(1 for group in groups for h in _items(group.get("hooks")) if is_veil_hook(h))
    if not server and not count:
        return [_note("codex integration", "Veil is not installed in Codex (optional)", fix)]
    if not server:
        return [_fail("codex MCP server", f"no [mcp_servers.veil] in {config}", fix)]
    argv = [str(server.get("command") or ""), *map(str, _items(server.get("args")))]
    names = [*CODEX_ENV, *map(str, _items(server.get("env_vars")))]
    environ = {n: env[n] for n in names if n in env}
    environ |= {str(k): str(v) for k, v in _obj(server.get("env")).items()}
    ok, out = mcp_starts(argv, environ, root)
    started = Check("codex MCP server", ok, f"`{shlex.join(argv)}` {out}", "" if ok else fix)
    return [started, _codex_trust(count, hooks_file, text, root, env, fix)]


def _codex_trust(
    count: int, hooks: Path, text: str, root: Path, env: Mapping[str, str], fix: str
) -> Check:
    """Codex trusts each of Veil's hooks (``codex app-server``'s ``hooks/list``)."""
    from veil.clients.codex_trust import TrustUnavailable, hook_hashes

    name, binary = "codex hooks", find_agent("codex", env)
    if count == 0:
        return _fail(name, f"none of Veil's hooks in {hooks}", fix)
    if binary is None:
        recorded = f"{len(codex.trusted(text))} recorded"
        return _warn(name, f"{count} in {hooks}; no codex here to confirm its trust ({recorded})")
    try:
        listed = hook_hashes(binary, hooks.parent, root, env)
    except TrustUnavailable as exc:
        return _warn(name, f"{count} in {hooks}; cannot ask Codex whether it trusts them: {exc}")
    status = {k: s for k, (_, s) in listed.items() if k.startswith(f"{hooks}:")}
    untrusted = sorted(k.split(":")[-3] for k, s in status.items() if s != "trusted")
    if status and not untrusted:
        return Check(name, True, f"{count} in {hooks}, trusted by Codex")
    what = f"Codex does not trust {', '.join(untrusted)}" if status else "Codex lists none"
    why = f"{count} in {hooks}; {what} (`codex exec` skips untrusted hooks)"
    return _fail(name, why, f"{fix} with codex on PATH (it records the trust), or review /hooks")


# ---- the store -----------------------------------------------------------------------------


def _cannot_write(directory: Path) -> str | None:
    """Why no file can be created in ``directory`` (tried, so it holds for root), or None."""
    try:
        with tempfile.TemporaryFile(dir=directory):
            return None
    except OSError as exc:
        return f"cannot create files in {directory}: {exc.strerror or exc}"


def check_store(root: Path) -> Check:
    """``.veil/context.db`` opens (:func:`veil.tape.open_store`), takes a write lock
    (``BEGIN IMMEDIATE; ROLLBACK``: nothing is written) and its directory takes new files
    (SQLite's journal); a store not created yet needs a directory it can be created in."""
    from veil.tape import open_store

    home, db = root / ".veil", root / ".veil" / "context.db"
    aside = f"mv {shlex.quote(str(db))} {shlex.quote(str(db) + '.broken')} (Veil starts anew)"
    if home.exists() and not home.is_dir():
        return _fail("store", f"{home} is not a directory", f"mv {home} {home}.old")
    if not db.exists():
        if why := _cannot_write(home if home.is_dir() else root):
            return _fail("store", why, f"chmod u+w {home if home.is_dir() else root}")
        return Check("store", True, f"{db} not created yet (the first session creates it)")
    if not db.is_file():
        return _fail("store", f"{db} is not a file: Veil can neither read nor write it", aside)
    try:
        open_store(db, busy_timeout_s=2.0).close()
        with closing(sqlite3.connect(db, timeout=2.0)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
        if why := _cannot_write(home):
            return _fail("store", why, f"chmod u+w {home}")
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc):
            return _warn("store", f"{db} is busy: {exc}", "run doctor again when it is free")
        return _fail("store", f"{db}: {exc}", aside)
    except Exception as exc:  # whatever keeps Veil from opening it is the finding
        return _fail("store", f"{db}: {exc}", aside)
    size = sum(p.stat().st_size for p in (db, db.with_name("context.db-wal")) if p.exists())
    return Check("store", True, f"{db} ({size / 2**20:.1f} MB), readable and writable")


# ---- the screen ----------------------------------------------------------------------------


def run_checks(cwd: Path, env: Mapping[str, str] = os.environ) -> list[Check]:
    """Every check, in order; a check that raises is reported as a failure of its own."""
    from veil.agent.project import project_root

    root = project_root(cwd)
    steps: list[tuple[str, Callable[[], list[Check]]]] = [
        ("veil on PATH", lambda: [check_veil_on_path(env)]),
        ("claude", lambda: [check_agent("claude", env)]),
        ("claude-code", lambda: claude_checks(root, cwd, env)),
        ("codex", lambda: [check_agent("codex", env)]),
        ("codex integration", lambda: codex_checks(root, env)),
        *(
            (name, lambda name=name: [check_agent(name, env)])
            for name in HOSTS
            if name not in ("claude", "codex")
        ),
        ("store", lambda: [check_store(root)]),
    ]
    checks: list[Check] = []
    for name, step in steps:
        try:
            checks += step()
        except Exception as exc:
            checks.append(_fail(name, f"the check failed: {type(exc).__name__}: {exc}"))
    return checks


def claude_checks(root: Path, cwd: Path, env: Mapping[str, str]) -> list[Check]:
    """Claude Code's hooks, MCP server and trust; a note when Veil is not installed there."""
    from veil.agent.project import git_root

    try:
        setup = claude_setup(root, env)
    except SettingsError as exc:
        return [_fail("claude-code settings", str(exc), "fix the file (Veil reads it as JSON)")]
    if not setup.hooks and setup.mcp is None:
        fix = f"{_veil(env)} install claude-code (`veil claude` works without it)"
        return [_note("claude-code integration", "Veil is not installed here (optional)", fix)]
    return [
        check_claude_hooks(setup, root, env),
        check_claude_mcp(setup, root, env),
        check_claude_trust(setup, cwd, git_root(cwd), env),
    ]


def run_doctor(cwd: Path, *, as_json: bool = False, out: TextIO = sys.stdout,
               env: Mapping[str, str] = os.environ) -> int:  # fmt: skip
    """Print the checks — a screen, or with ``as_json`` a JSON list of :class:`Check` objects
    — and return 1 when any check fails, else 0."""
    checks = run_checks(cwd, env)
    failed = sum(1 for c in checks if not c.ok and c.severity == "fail")
    if as_json:
        print(json.dumps([asdict(c) for c in checks], indent=2, ensure_ascii=False), file=out)
        return 1 if failed else 0
    for check in checks:
        mark = "·" if check.severity == "note" else "✓" if check.ok else MARKS[check.severity]
        print(f"{mark} {check.name} — {check.detail}", file=out)
        if check.fix and (not check.ok or check.severity == "note"):
            print(f"    {'to set up' if check.ok else 'fix'}: {check.fix}", file=out)
    warned = sum(1 for c in checks if not c.ok and c.severity == "warn")
    summary = f"{failed} problem(s) to fix" if failed else "nothing to fix"
    print(summary + (f", {warned} warning(s)" if warned else ""), file=out)
    return 1 if failed else 0
