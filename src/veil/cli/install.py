"""``veil install claude-code|codex [--uninstall]``: register Veil with a coding agent.

``claude-code`` writes Veil's hooks (:data:`veil.clients.settings.HOOKS`), the permissions of
its MCP tools (the read-only ones allowed, the ``hook`` tool denied to the model) and the
``veil mcp`` server:

- ``--project`` (default), with ``veil`` on ``PATH`` (a command that works on every clone):
  the committed ``.claude/settings.json`` (hooks, permissions) and ``.mcp.json`` (the
  server); the approval of that server (``enabledMcpjsonServers``), a person's own choice, in
  ``.claude/settings.local.json``;
- ``--project`` without ``veil`` on ``PATH`` (the command is this machine's path to it):
  nothing in the committed files — hooks and permissions in ``.claude/settings.local.json``,
  the server in ``~/.claude.json`` as a local-scope server of the project;
- ``--user``: ``~/.claude/settings.json`` and ``~/.claude.json``, for every project
  (``$CLAUDE_CONFIG_DIR`` replaces ``~/.claude`` and then holds ``.claude.json``).

``.claude/settings.local.json`` is added to the repository's ``.git/info/exclude`` (never to
a committed ``.gitignore``) when git would not ignore it already.

``codex`` adds ``[mcp_servers.veil]`` to ``$CODEX_HOME/config.toml`` (``~/.codex``) and Veil's
hooks to ``$CODEX_HOME/hooks.json``, and records Codex's trust of those hooks (asked of the
``codex`` binary, :mod:`veil.clients.codex_trust`; without it the hooks are installed and
Codex asks the person to review them).

Both merge: other settings keep their meaning and order, a second install changes nothing,
and ``--uninstall`` gives every file back byte for byte — or removes it if the install created
it — unless it changed since, in which case only Veil's entries are taken out
(:mod:`veil.clients.install_record`). A file Veil cannot read (not JSON/TOML, an unexpected
shape, a foreign ``veil`` entry) is reported in one line on stderr with status 2 and nothing
is written.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from veil.clients import settings
from veil.clients.install_record import InstallRecord, Unmerge, apply, read_bytes, undo
from veil.clients.settings import HOOKS, SettingsError, claude_dir, claude_json

Where = Literal["project", "user"]
EXCLUDE_NOTE = "# added by `veil install claude-code` (personal Claude Code settings)"
LOCAL_SETTINGS = ".claude/settings.local.json"


@dataclass(frozen=True)
class InstallOptions:
    agent: Literal["claude-code", "codex"]
    where: Where = "project"
    uninstall: bool = False
    authority: Literal["user", "assistant", "tool"] = "user"
    command: str | None = None
    cwd: Path | None = None


def veil_command(override: str | None = None) -> list[str]:
    """How the agent starts Veil: ``override`` split like a shell would, else ``veil`` when the
    ``veil`` found on ``PATH`` is the running one, else the running script by its absolute
    path, else ``<this python> -m veil.cli.main``."""
    if override:
        words = shlex.split(override)
        if not words:
            raise SettingsError("--command is empty")
        return words
    running = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    on_path = shutil.which("veil")
    if running is not None and running.name in ("veil", "veil.exe"):
        if on_path and Path(on_path).resolve() == running.resolve():
            return ["veil"]
        return [str(running.resolve())]
    if on_path:
        return ["veil"]
    return [sys.executable, "-m", "veil.cli.main"]


def portable(veil: list[str]) -> bool:
    """Whether the command works on another machine (no absolute path in it)."""
    return not any(Path(word).is_absolute() for word in veil)


def run_install(options: InstallOptions, env: Mapping[str, str] = os.environ) -> int:
    try:
        lines = _install(options, env)
    except SettingsError as exc:
        print(f"veil install: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"veil install: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    for line in lines:
        print(line)
    return 0


def _install(options: InstallOptions, env: Mapping[str, str]) -> list[str]:
    record = InstallRecord.default(env)
    if options.agent == "codex":
        return _codex(options, env, record)
    return _claude_code(options, env, record)


# ---- JSON files ----------------------------------------------------------------------------


JsonChange = Callable[[dict[str, Any], str], dict[str, Any]]


def _json_edit(path: Path, *changes: JsonChange) -> bytes | None:
    """``path``'s bytes after ``changes`` (the current bytes when nothing changes)."""
    current = read_bytes(path)
    before = settings.parse_json(current, str(path)) if current is not None else {}
    after = before
    for change in changes:
        after = change(after, str(path))
    if after == before:
        return current
    return settings.dump_json(after)


def _json_unmerge(path: Path, *changes: JsonChange, owned: bool = False) -> Unmerge:
    """Take Veil's entries out; ``owned``: a file with nothing else left is removed."""

    def unmerge(data: bytes) -> bytes | None:
        before = settings.parse_json(data, str(path))
        after = before
        for change in changes:
            after = change(after, str(path))
        if after == before:
            return data
        if owned and not _has_content(after):
            return None
        return settings.dump_json(after)

    return unmerge


def _has_content(value: object) -> bool:
    """Whether a parsed JSON value holds anything but empty objects and lists."""
    if isinstance(value, dict):
        return any(_has_content(v) for v in cast(dict[str, object], value).values())
    if isinstance(value, list):
        return bool(cast(list[object], value))
    return True


def _unhook(config: dict[str, Any], where: str) -> dict[str, Any]:
    return settings.remove_permissions(settings.remove_hooks(config, where), where)


# ---- Claude Code ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaudeFiles:
    root: Path | None
    shared: Path  # settings.json (the project's, committed; or the user's)
    local: Path | None  # the project's settings.local.json
    mcp_json: Path | None  # the project's .mcp.json
    claude_json: Path  # ~/.claude.json
    exclude: Path | None  # the repository's info/exclude


def _claude_files(options: InstallOptions, env: Mapping[str, str]) -> ClaudeFiles:
    if options.where == "user":
        return ClaudeFiles(
            None, claude_dir(env) / "settings.json", None, None, claude_json(env), None
        )
    from veil.agent.project import project_root

    root = project_root(options.cwd or Path.cwd())
    return ClaudeFiles(
        root,
        root / ".claude" / "settings.json",
        root / LOCAL_SETTINGS,
        root / ".mcp.json",
        claude_json(env),
        _git_exclude(root),
    )


def _claude_code(
    options: InstallOptions, env: Mapping[str, str], record: InstallRecord
) -> list[str]:
    files = _claude_files(options, env)
    root = str(files.root) if files.root else None
    if options.uninstall:
        targets: dict[Path, Unmerge] = {
            files.shared: _json_unmerge(files.shared, _unhook, owned=True),
            files.claude_json: _json_unmerge(
                files.claude_json,
                lambda c, w: (
                    settings.remove_local_mcp(c, root, w) if root else settings.remove_mcp(c, w)
                ),
            ),
        }
        if files.local is not None and files.mcp_json is not None:
            targets[files.local] = _json_unmerge(files.local, _unhook, owned=True)
            targets[files.mcp_json] = _json_unmerge(files.mcp_json, settings.remove_mcp, owned=True)
        if files.exclude is not None:
            targets[files.exclude] = _exclude_unmerge
        changed = undo(record, targets)
        if not changed:
            return ["nothing of Veil's in Claude Code's settings here"]
        return [f"restored {path}" for path in changed]

    veil = veil_command(options.command)
    hooks: list[JsonChange] = [
        lambda c, w: settings.merge_hooks(c, veil, w),
        settings.merge_permissions,
    ]
    mcp_args = ["--project", "--authority", options.authority]
    entry = settings.mcp_entry(veil, mcp_args)
    changes: dict[Path, bytes | None] = {}
    if root is None:  # --user
        changes[files.shared] = _json_edit(files.shared, *hooks)
        changes[files.claude_json] = _json_edit(
            files.claude_json, lambda c, w: settings.merge_mcp(c, entry, w)
        )
        where = "for every project"
    else:
        assert files.local is not None and files.mcp_json is not None
        if portable(veil):
            changes[files.shared] = _json_edit(files.shared, *hooks)
            changes[files.mcp_json] = _json_edit(
                files.mcp_json, lambda c, w: settings.merge_mcp(c, entry, w)
            )
            changes[files.local] = _json_edit(files.local, _unhook, settings.merge_approval)
            changes[files.claude_json] = _json_edit(
                files.claude_json, lambda c, w: settings.remove_local_mcp(c, root, w)
            )
            where = f"in {files.shared} and {files.mcp_json} (commit them: the command is `veil`)"
        else:
            for path, unmerge in (  # an earlier portable install is taken back
                (files.shared, _json_unmerge(files.shared, _unhook, owned=True)),
                (files.mcp_json, _json_unmerge(files.mcp_json, settings.remove_mcp, owned=True)),
            ):
                changes[path] = record.restoration(path, read_bytes(path), unmerge)
            changes[files.local] = _json_edit(files.local, *hooks)
            changes[files.claude_json] = _json_edit(
                files.claude_json, lambda c, w: settings.merge_local_mcp(c, root, entry, w)
            )
            where = (
                f"in {files.local} and {files.claude_json} (this machine only: `veil` is not "
                "on PATH, so nothing went into the files you commit)"
            )
        if files.exclude is not None and _needs_exclude(files.root, files.local, changes):
            changes[files.exclude] = _exclude_edit(files.exclude)
    changed = apply(record, {p: b for p, b in changes.items() if b != read_bytes(p)})
    events = ", ".join(spec.event for spec in HOOKS)
    return [
        f"{'installed' if changed else 'already installed:'} Veil's hooks ({events}), "
        f"the MCP server {settings.MCP_NAME!r} (authority {options.authority}) and its "
        f"permissions {where}",
        *(f"  wrote {path}" for path in changed),
        f"command: {shlex.join(veil)}",
        *(
            []
            if root is None
            else [
                "Claude Code reads .claude/ and .mcp.json only in a trusted workspace: run "
                "`claude` here once and accept its trust dialog (`veil doctor` checks it)."
            ]
        ),
        "Restart Claude Code here; /hooks and /mcp list what was installed.",
    ]


def _git_exclude(root: Path) -> Path | None:
    git = root / ".git"
    if git.is_dir():
        return git / "info" / "exclude"
    if git.is_file():  # a worktree or submodule: ask git where its info/ is
        try:
            out = subprocess.run(
                ["git", "rev-parse", "--git-path", "info/exclude"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
        return (root / out).resolve() if out else None
    return None


def _needs_exclude(root: Path | None, local: Path, changes: Mapping[Path, bytes | None]) -> bool:
    """Whether the install writes ``settings.local.json`` where git does not ignore it yet."""
    if root is None or changes.get(local) is None or read_bytes(local) is not None:
        return False
    try:
        ignored = subprocess.run(
            ["git", "check-ignore", "-q", "--no-index", LOCAL_SETTINGS],
            cwd=root,
            capture_output=True,
            timeout=10,
            check=False,
        ).returncode
    except (OSError, subprocess.SubprocessError):
        return True
    return ignored != 0


def _exclude_edit(path: Path) -> bytes:
    current = read_bytes(path) or b""
    lines = current.decode("utf-8", "replace").splitlines()
    if f"/{LOCAL_SETTINGS}" in lines:
        return current
    glue = b"" if not current or current.endswith(b"\n") else b"\n"
    return current + glue + f"{EXCLUDE_NOTE}\n/{LOCAL_SETTINGS}\n".encode()


def _exclude_unmerge(data: bytes) -> bytes | None:
    text = data.decode("utf-8", "replace")
    block = f"{EXCLUDE_NOTE}\n/{LOCAL_SETTINGS}\n"
    return text.replace(block, "").encode() if block in text else data


# ---- Codex ---------------------------------------------------------------------------------


def _codex(options: InstallOptions, env: Mapping[str, str], record: InstallRecord) -> list[str]:
    from veil.clients import codex

    config, hooks_file = codex.config_path(env), codex.hooks_path(env)
    if options.uninstall:

        def unmerge_config(data: bytes) -> bytes | None:
            text = data.decode("utf-8")
            out = codex.uninstall(text, str(config))
            return data if out == text else (out.encode() if out.strip() else None)

        changed = undo(
            record,
            {
                config: unmerge_config,
                hooks_file: _json_unmerge(hooks_file, settings.remove_hooks, owned=True),
            },
        )
        if not changed:
            return [f"nothing of Veil's in {config} or {hooks_file}"]
        return [f"restored {path}" for path in changed]

    veil = veil_command(options.command)
    args = ["--project", "--authority", options.authority]
    current = (read_bytes(config) or b"").decode("utf-8")
    new_hooks = _json_edit(hooks_file, lambda c, w: settings.merge_hooks(c, veil, w, agent="codex"))
    kept = codex.trusted(current)  # re-checked below; kept so that a re-install is a no-op
    new_config = codex.install(current, codex.block(veil, args, kept), str(config)).encode()
    changed = apply(record, {hooks_file: new_hooks, config: new_config})
    lines = [
        f"{'installed' if changed else 'already installed:'} Veil's MCP server and hooks for "
        f"Codex (authority {options.authority})",
        *(f"  wrote {path}" for path in changed),
        f"command: {shlex.join(veil)}",
    ]
    lines.extend(_codex_trust(options, env, record, veil, args, config, hooks_file))
    lines.append("Restart Codex; /mcp lists the server, /hooks the hooks.")
    return lines


def _codex_trust(
    options: InstallOptions,
    env: Mapping[str, str],
    record: InstallRecord,
    veil: list[str],
    args: list[str],
    config: Path,
    hooks_file: Path,
) -> list[str]:
    """Record Codex's trust of Veil's hooks (see :mod:`veil.clients.codex_trust`)."""
    from veil.clients import codex
    from veil.clients.codex_trust import TrustUnavailable, veil_hashes

    binary = env.get("VEIL_CODEX") or shutil.which("codex", path=env.get("PATH"))
    if not binary:
        return [
            "codex is not on PATH, so its trust of the hooks is not recorded: Codex skips "
            "untrusted hooks in `codex exec` and asks you to review them in the TUI (/hooks); "
            "or run `veil install codex` again with codex on PATH"
        ]
    try:
        hashes = veil_hashes(binary, hooks_file, options.cwd or Path.cwd(), env)
    except TrustUnavailable as exc:
        return [f"could not record Codex's trust of the hooks ({exc}); review them in /hooks"]
    current = (read_bytes(config) or b"").decode("utf-8")
    trusted = codex.install(current, codex.block(veil, args, hashes), str(config)).encode()
    apply(record, {config: trusted})
    return [f"trusted Veil's {len(hashes)} hooks in {config} (as `codex` reports their hashes)"]
