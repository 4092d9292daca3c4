"""Entry point of the ``veil`` console script.

Subcommands are thin: they parse arguments, open what they need and call library code.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from veil import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="veil",
        description="Veil: a memory for LLM agents that never forgets silently.",
    )
    parser.add_argument("--version", action="version", version=f"veil {__version__}")
    parser.add_argument(
        "-p",
        "--print",
        dest="task",
        metavar="TASK",
        help="run TASK non-interactively and exit with a status",
    )
    parser.add_argument(
        "--model",
        help="provider:model (default $VEIL_MODEL), e.g. "
        "openai:gpt-4.1-mini, anthropic:claude-sonnet-4-5, ollama:qwen2.5:7b, "
        "scripted:FILE",
    )
    parser.add_argument(
        "--approve",
        choices=["ask", "auto", "deny"],
        default=None,
        help="writes and shell commands: ask (TUI default), auto, deny "
        "(print mode default: ask, which refuses without a terminal)",
    )
    parser.add_argument(
        "--trace",
        type=Path,
        metavar="OUT.jsonl",
        help="append every provider request and response as JSON lines",
    )
    parser.add_argument(
        "--window", type=int, metavar="TOKENS", help="override the model's context window"
    )
    parser.add_argument("--json", action="store_true", help="print the event stream as JSONL")
    parser.add_argument(
        "-c",
        "--continue",
        dest="resume",
        action="store_true",
        help="continue the most recent session of this project",
    )
    parser.add_argument("--session", metavar="ID", help="continue session ID")
    parser.add_argument(
        "--fork",
        action="store_true",
        help="with -c/--session: branch a new session from it instead",
    )
    parser.add_argument("--max-turns", type=int, default=50)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sessions = sub.add_parser("sessions", help="list this project's sessions")
    sessions.set_defaults(run=_run_sessions)

    demo = sub.add_parser("demo", help="an offline tour of the tape and the embedder")
    demo.set_defaults(run=_run_demo)

    admin = sub.add_parser("admin", help="maintenance of a store")
    admin_sub = admin.add_subparsers(dest="admin_command", metavar="ACTION", required=True)
    for name, help_text in (
        ("rebuild", "drop and recreate every projection from the tape"),
        ("check", "integrity check; projections compared with a rebuild (changes nothing)"),
    ):
        action = admin_sub.add_parser(name, help=help_text)
        action.add_argument(
            "--db", default=None, help="store URL or path (default: .veil/memory.db)"
        )
        action.add_argument(
            "--embedder",
            default="static",
            help="embedder spec: static (default), minilm, hash, ollama:MODEL",
        )
        action.set_defaults(run=_run_admin)
    return parser


def _run_sessions(args: argparse.Namespace) -> int:
    from veil.cli.listing import list_sessions

    return list_sessions(Path.cwd())


def _run_print(args: argparse.Namespace) -> int:
    from veil.cli.run import RunOptions, run_print

    return run_print(
        RunOptions(
            task=args.task,
            model=args.model,
            approve=args.approve or "ask",
            trace=args.trace,
            window=args.window,
            json=args.json,
            resume=args.resume,
            session=args.session,
            fork=args.fork,
            max_turns=args.max_turns,
        )
    )


def _run_tui(args: argparse.Namespace) -> int:
    from veil.tui.app import run_tui

    return run_tui(
        model=args.model,
        approve=args.approve or "ask",
        window=args.window,
        resume=args.resume,
        session=args.session,
    )


def _run_demo(args: argparse.Namespace) -> int:
    from veil.cli.demo import run_demo

    return run_demo()


def _run_admin(args: argparse.Namespace) -> int:
    from veil.cli.admin import run_check, run_rebuild

    if args.admin_command == "rebuild":
        return run_rebuild(args.db, args.embedder)
    return run_check(args.db, args.embedder)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    run = getattr(args, "run", None)
    if run is None:
        run = _run_print if args.task else _run_tui
    return int(run(args))


if __name__ == "__main__":
    sys.exit(main())
