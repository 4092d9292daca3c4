"""Entry point of the ``veil`` console script.

Subcommands are thin: they parse arguments, open what they need and call library code.
Predictable mistakes (a bad option value, a missing file, an unknown session) end with one line
on stderr and a non-zero status; an unexpected failure too, with the traceback only under
``--debug``. Usage errors exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from veil.agent.runtime import RunOptions


def _run_sessions(args: argparse.Namespace) -> int:
    from veil.cli.listing import list_sessions, show_session

    if args.action in ("rm", "show") and not args.id:
        print(
            f"veil sessions {args.action}: which session? veil sessions {args.action} ID",
            file=sys.stderr,
        )
        return 2
    if args.action == "rm":
        from veil.cli.purge import run_sessions_rm

        return run_sessions_rm(args.id, Path.cwd(), out=sys.stdout, err=sys.stderr)
    if args.action == "show":
        return show_session(args.id, Path.cwd(), full=args.full, out=sys.stdout, err=sys.stderr)
    if args.id:
        print(f"veil sessions list takes no ID (veil sessions show {args.id})", file=sys.stderr)
        return 2
    return list_sessions(Path.cwd())


def _run_options(args: argparse.Namespace) -> RunOptions:
    from veil.agent.runtime import RunOptions

    return RunOptions(
        model=args.model,
        approve=args.approve or "ask",
        window=args.window,
        resume=args.resume,
        session=args.session,
        fork=args.fork,
        max_turns=args.max_turns,
        trace=args.trace,
        profile=args.profile,
    )


def _run_print(args: argparse.Namespace) -> int:
    from veil.cli.run import run_print

    status = run_print(_run_options(args), args.task, as_json=args.json)
    _retain()
    return status


def _retain() -> None:
    """Retention (:mod:`veil.agent.retention`) once the session is over: the answer is out,
    so its cost is never in the way."""
    from veil.agent.project import project_root
    from veil.cli.purge import retain

    receipt = retain(project_root(Path.cwd()))
    if receipt is not None and receipt.events:
        print(
            f"veil: retention removed {receipt.events} event(s) of old sessions "
            f"(receipt {receipt.id}; .veil/config.toml [retention])",
            file=sys.stderr,
        )


def _run_tui(args: argparse.Namespace) -> int:
    try:
        from veil.tui.app import run_tui
    except ImportError as exc:
        from veil.extras import missing

        print(f"veil: {missing('tui', 'the interactive TUI', exc)} — or run one task with "
              "`veil -p TASK`", file=sys.stderr)  # fmt: skip
        return 1

    status = run_tui(_run_options(args))
    _retain()
    return status


def _run_local(args: argparse.Namespace) -> int:
    from veil.cli import local_model

    if args.local_command == "setup":
        return local_model.setup()
    if args.local_command == "serve":
        return local_model.serve(args.port, args.ctx_size)
    for key, value in local_model.environment().items():
        print(f"export {key}={value}")
    return 0


def _run_demo(args: argparse.Namespace) -> int:
    from veil.cli.demo import run_demo

    return run_demo()


def _run_admin(args: argparse.Namespace) -> int:
    from veil.cli.admin import run_check, run_rebuild

    if args.admin_command in ("purge", "vacuum"):
        from veil.cli.purge import run_purge, run_vacuum

        if args.admin_command == "vacuum":
            return run_vacuum(args.db, Path.cwd(), out=sys.stdout, err=sys.stderr)
        return run_purge(
            db=args.db,
            session=args.session,
            before=args.before,
            match=args.match,
            yes=args.yes,
            cwd=Path.cwd(),
            stdin=sys.stdin,
            out=sys.stdout,
            err=sys.stderr,
        )
    if args.admin_command == "rebuild":
        return run_rebuild(args.db, args.embedder)
    return run_check(args.db, args.embedder)


def _run_serve(args: argparse.Namespace) -> int:
    from veil.server.commands import ServeOptions, run_serve

    return run_serve(
        ServeOptions(
            db=args.db,
            model=args.server_model or args.model,
            host=args.host,
            port=args.port,
            embedder=args.embedder,
            rate_per_s=args.rate,
            burst=args.burst,
            max_body_bytes=args.max_body,
        )
    )


def _run_mcp(args: argparse.Namespace) -> int:
    from veil.server.commands import McpOptions, run_mcp

    return run_mcp(
        McpOptions(
            db=args.db,
            scope=args.scope,
            authority=args.authority,
            model=args.server_model or args.model,
            embedder=args.embedder,
            project=args.project,
            attempts_db=args.attempts_db,
        )
    )


def _run_memory(args: argparse.Namespace) -> int:
    from veil.cli.memory import run_memory

    return run_memory(args)


def _run_hook(args: argparse.Namespace) -> int:
    from veil.cli.hook import run_hook

    return run_hook(args.client, args.event, debug=args.debug)


def _run_proxy(args: argparse.Namespace) -> int:
    from veil.cli.proxy import ProxyOptions, run_proxy_command

    rest = list(getattr(args, "agent_args", None) or [])
    if rest[:1] == ["--"]:
        rest = rest[1:]
    return run_proxy_command(
        ProxyOptions(
            agent=args.agent,
            window=args.window,
            port=getattr(args, "port", 0),
            upstream=args.upstream,
            agent_args=tuple(rest),
            shadow=args.shadow,
        )
    )


def _run_stats(args: argparse.Namespace) -> int:
    from veil.cli.stats import run_stats

    return run_stats(
        Path.cwd(),
        session=args.session,
        since=args.since,
        as_json=args.json,
        out=sys.stdout,
        err=sys.stderr,
    )


def _run_replay(args: argparse.Namespace) -> int:
    from veil.cli.replay import run_replay

    return run_replay(args.paths, as_json_output=args.json, plot=args.plot, window=args.window,
                      out=sys.stdout, err=sys.stderr)  # fmt: skip


def _run_install(args: argparse.Namespace) -> int:
    from veil.cli.install import InstallOptions, run_install

    if args.agent == "codex" and args.where == "project":
        print(
            "veil install: codex reads MCP servers from $CODEX_HOME/config.toml "
            "(~/.codex/config.toml); there is no --project install",
            file=sys.stderr,
        )
        return 2
    return run_install(
        InstallOptions(
            agent=args.agent,
            where=args.where or "project",
            uninstall=args.uninstall,
            authority=args.authority,
            command=args.command,
        )
    )


def _run_doctor(args: argparse.Namespace) -> int:
    from veil.cli.doctor import run_doctor

    return run_doctor(Path.cwd(), as_json=args.json)


def _run_keys(args: argparse.Namespace) -> int:
    from veil.server.commands import run_keys_create, run_keys_list, run_keys_revoke

    if args.keys_command == "create":
        return run_keys_create(args.db, args.scope, args.authority, args.admin, args.label)
    if args.keys_command == "list":
        return run_keys_list(args.db)
    return run_keys_revoke(args.db, args.key_id)


RUNNERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "memory": _run_memory,
    "admin": _run_admin,
    "demo": _run_demo,
    "doctor": _run_doctor,
    "stats": _run_stats,
    "replay": _run_replay,
    "hook": _run_hook,
    "install": _run_install,
    "keys": _run_keys,
    "local": _run_local,
    "mcp": _run_mcp,
    "proxy": _run_proxy,
    "serve": _run_serve,
    "sessions": _run_sessions,
}
"""Each subcommand's runner, by the name its parser sets as ``run`` (:mod:`veil.cli.parser`)."""


def _hook_invocation(argv: list[str]) -> bool:
    """``[--debug] hook …`` (without ``--help``): a hook must exit 0 whatever its arguments,
    so it is not left to argparse, which exits 2 — Claude Code's "block" — on a mistake."""
    rest = argv[1:] if argv[:1] == ["--debug"] else argv
    return rest[:1] == ["hook"] and not {"-h", "--help"} & set(rest)


def _hook(argv: list[str]) -> int:
    from veil.cli.hook import run_hook

    debug = argv[:1] == ["--debug"]
    words = argv[2:] if debug else argv[1:]
    client = words[0] if words else None
    event = words[1] if len(words) > 1 else None
    if len(words) > 2:
        print(f"veil hook: ignoring extra arguments {words[2:]}", file=sys.stderr)
    code = run_hook(client, event, debug=debug)
    # a one-shot process: exit now, without waiting for an abandoned handler (a locked store)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _usage_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with an agent invocation before anything is opened, or None."""
    if args.task is not None and not args.task.strip():
        return "the task is empty: veil -p 'what to do'"
    if args.fork and not (args.resume or args.session):
        return "--fork needs -c/--continue or --session ID to branch from"
    if args.trace is not None:
        if args.trace.is_dir():
            return f"--trace {args.trace} is a directory: name the file to append to"
        if not args.trace.parent.is_dir():
            return f"--trace {args.trace}: no directory {args.trace.parent} to write it in"
    if args.task is None and not (_isatty(sys.stdin) and _isatty(sys.stdout)):
        return (
            "the interactive TUI needs a terminal on stdin and stdout; "
            "run one task non-interactively with veil -p TASK"
        )
    return None


def _isatty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):
        return False


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if _hook_invocation(given):
        return _hook(given)
    from veil.cli.parser import build_parser

    parser = build_parser()
    args = parser.parse_args(given)
    named: str | None = getattr(args, "run", None)
    run = RUNNERS[named] if named is not None else None
    if run is None and args.task == "-":  # veil -p - : the task is on stdin
        if _isatty(sys.stdin):
            print("veil: -p - reads the task from stdin: pipe it in (echo TASK | veil -p -)",
                  file=sys.stderr)  # fmt: skip
            return 2
        args.task = sys.stdin.read()
    if run is None:
        problem = _usage_problem(args)
        if problem is not None:
            print(f"veil: {problem}", file=sys.stderr)
            return 2
        run = _run_print if args.task is not None else _run_tui
    try:
        return int(run(args))
    except BrokenPipeError:  # `veil sessions | head`: the reader has what it wanted
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a process the pipe killed (128 + SIGPIPE)
    except KeyboardInterrupt:
        print("veil: interrupted", file=sys.stderr)
        return 130
    except SystemExit:
        raise
    except Exception as exc:
        if args.debug:
            raise
        print(f"veil: {_explain(exc)}", file=sys.stderr)
        return 1


def _explain(exc: BaseException) -> str:
    """One line for a failure: an unreadable store's own message (it names the file and the
    fix); else what went wrong, in the words of the error, and that ``--debug`` shows more."""
    from veil.tape import StoreUnreadable

    text = str(exc).strip().splitlines()
    message = text[0] if text else ""
    if isinstance(exc, StoreUnreadable):
        return message
    if isinstance(exc, OSError) and exc.filename:
        message = f"{exc.strerror or message}: {exc.filename}"
    elif message:
        message = f"{type(exc).__name__}: {message}"
    else:
        message = type(exc).__name__
    return f"{message} (--debug shows the traceback)"


if __name__ == "__main__":
    sys.exit(main())
