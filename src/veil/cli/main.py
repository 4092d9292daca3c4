"""Entry point of the ``veil`` console script.

Subcommands are thin: they parse arguments, open what they need and call library code.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from veil import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="veil",
        description="Veil: a memory for LLM agents that never forgets silently.",
    )
    parser.add_argument("--version", action="version", version=f"veil {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

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
        parser.print_help()
        return 0
    return int(run(args))


if __name__ == "__main__":
    sys.exit(main())
