"""``veil proxy``, ``veil claude`` and ``veil codex``: Veil's working memory inside the agents
people use, through a local proxy in front of their model provider (:mod:`veil.proxy`).

- ``veil proxy [--port P] [--upstream URL] [--window N]`` serves until interrupted and prints
  the base URL to give the agent.
- ``veil claude|codex|… [--window N] [-- AGENT_ARGS…]`` starts the proxy on a free port for
  this run (upstream: where the agent would go without Veil), then the real agent as a child
  pointed at it, with Veil's ``expand`` for its model (how, per host: :mod:`veil.launch`;
  nothing of the user's configuration is written). The terminal is the child's; its exit
  status is ours; the proxy stops with it.

Every conversation's working memory lives in the project's ``.veil/context.db``; what the
proxy logs (one line per kind of failure) goes to ``.veil/proxy.log`` under ``veil claude`` and
``veil codex`` (the terminal is the agent's), to stderr under ``veil proxy``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

ANTHROPIC_API = "https://api.anthropic.com"


@dataclass(frozen=True)
class ProxyOptions:
    agent: str
    """A host's command (a key of :data:`veil.launch.LAUNCHERS`) or ``proxy``."""
    window: int | None = None
    port: int = 0
    upstream: str | None = None
    agent_args: tuple[str, ...] = ()
    cwd: Path | None = None
    shadow: bool = False
    """Measure only: every request goes upstream as the agent sent it; Veil's policy runs on
    the side and the figures say what it would have sent."""


def run_proxy_command(options: ProxyOptions, env: Mapping[str, str] = os.environ) -> int:
    from veil.cli.install import veil_command
    from veil.launch import LAUNCHERS, Launch, binary
    from veil.proxy.server import Upstream

    cwd = options.cwd or Path.cwd()
    launcher = LAUNCHERS.get(options.agent)
    try:
        if launcher is not None:
            agent_binary = binary(launcher, env)
            upstream_url = options.upstream or launcher.upstream_for(env, options.agent_args)
        else:
            agent_binary = ""
            upstream_url = options.upstream or env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_API
        upstream = Upstream.parse(upstream_url)
    except (ValueError, FileNotFoundError) as exc:
        print(f"veil {options.agent}: {exc}", file=sys.stderr)
        return 2
    problem = window_problem(options)
    if problem:
        print(f"veil {options.agent}: {problem}", file=sys.stderr)
        return 2
    from veil.agent.project import project_root, project_scope, veil_dir

    root = project_root(cwd)
    home = veil_dir(root)
    log_path = home / "proxy.log"
    log_stream: TextIO = (
        sys.stderr if options.agent == "proxy" else open(log_path, "a", encoding="utf-8")  # noqa: SIM115
    )
    server, conversations = _start(upstream, root, project_scope(root), options, env, log_stream)
    head = conversations.store.head()
    try:
        from veil.proxy.server import client_base

        base = client_base(server.port, upstream)
        if options.agent == "proxy":
            print(
                f"veil proxy: http://127.0.0.1:{server.port} → {upstream_url} "
                f"({budget_words(options)}{', shadow mode: measure only' if options.shadow else ''}"
                f", working memory in {home / 'context.db'})\n"
                f"  Claude Code: ANTHROPIC_BASE_URL={base} claude\n"
                f'  Codex: a model provider with base_url = "{base}"',
                flush=True,
            )
            stop = threading.Event()
            signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
            with contextlib.suppress(KeyboardInterrupt):
                while not stop.wait(3600):
                    pass
            return 0
        print(start_line(options, server.port, upstream_url, log_path, root, env), file=sys.stderr)
        assert launcher is not None
        scratch = Path(tempfile.mkdtemp(prefix=f"veil-{options.agent}-"))
        try:
            veil = tuple(veil_command(None))
            launch = Launch(agent_binary, base, root, options.agent_args, env, veil, scratch)
            try:
                started = launcher.start(launch)
            except (ValueError, OSError) as exc:  # the agent's own settings cannot be read
                print(f"veil {options.agent}: {exc}", file=sys.stderr)
                return 2
            status = _run_child(started.command, started.env, cwd)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        server.wait_idle(EXIT_GRACE)
        _exit_summary(options.agent, conversations, head, root)
        return status
    finally:
        server.shutdown()
        server.server_close()
        conversations.close()
        conversations.store.close()
        if log_stream is not sys.stderr:
            log_stream.close()


EXIT_GRACE = 5.0
"""Seconds the exit summary waits for the last request's usage to be recorded."""


def start_line(
    options: ProxyOptions,
    port: int,
    upstream: str,
    log_path: Path,
    root: Path,
    env: Mapping[str, str],
) -> str:
    """The one line ``veil claude``/``veil codex`` print before the agent starts."""
    from veil.launch import LAUNCHERS

    launcher = LAUNCHERS[options.agent]
    host = launcher.host
    if options.window is not None:
        budget = budget_words(options)
    else:
        from veil.llm.catalog import CATALOG

        settings = launcher.settings(env)
        model = host.model_of(options.agent_args, settings)
        info = CATALOG.lookup(model)
        known = info.context_window if info is not None else 200_000
        window = host.window(model, known, settings)
        budget = (
            f"budget {host.budget(model, settings, CATALOG):,} tokens for {model} "
            f"(window {window:,}; just below where {host.title} compacts)"
        )
    shadow = (
        "; SHADOW mode: requests go as the agent sends them, Veil only measures"
        if (options.shadow)
        else ""
    )
    try:
        where = log_path.relative_to(root)
    except ValueError:
        where = log_path
    return (
        f"veil {options.agent}: Veil's proxy http://127.0.0.1:{port} → {upstream}; {budget}"
        f"{shadow}; log {where}; at exit a summary (veil stats: every run)"
    )


def _exit_summary(agent: str, conversations: Any, head: int, root: Path) -> None:
    """What Veil did in this run, after the agent's own output (never fails the run)."""
    from veil.cli.stats import project_catalog, summary
    from veil.llm.catalog import PRICES_DATE
    from veil.proxy.ledger import read

    try:
        catalog = project_catalog(root / ".veil")
        found = read(conversations.store, conversations.scope, after=head, catalog=catalog)
        lines = summary(found, command=agent, prices_date=PRICES_DATE)
    except Exception as exc:  # the summary is a report: the run's status stands
        lines = [f"veil {agent}: no summary ({exc})"]
    print("\n".join(lines), file=sys.stderr, flush=True)


def window_problem(options: ProxyOptions) -> str | None:
    """Why ``--window`` cannot work for the agent (None: it can): a window whose budget is
    below what the agent sends before any message leaves no room for a conversation."""
    from veil.context.budget import request_budget
    from veil.hosts import HOSTS

    host = HOSTS.get(options.agent)
    if options.window is None or host is None:
        return None
    if request_budget(options.window) > host.fixed_tokens:
        return None
    least = host.fixed_tokens + 1
    while request_budget(least) <= host.fixed_tokens + MIN_CONVERSATION:
        least += 1_000
    return (
        f"--window {options.window:,} leaves no room for the conversation: {host.title} sends "
        f"about {host.fixed_tokens:,} tokens before any message (its system prompt and tools); "
        f"use --window {least:,} or more, or leave --window out"
    )


MIN_CONVERSATION = 8_000
"""Tokens of conversation a window must leave beside the agent's fixed part."""


def budget_words(options: ProxyOptions) -> str:
    """The budget the proxy keeps, in words (for the start line)."""
    from veil.context.budget import request_budget

    if options.window is not None:
        return f"budget {request_budget(options.window):,} tokens from --window {options.window:,}"
    return "budget from each request's model: just below where the agent would compact"


def budgets(options: ProxyOptions, env: Mapping[str, str]) -> Any:
    """The request budget of a model, for the agent being run: its host's rule (just below
    where it compacts, never into a long-context price tier) or, for a bare ``veil proxy``, the
    model's window less the reply's reserve."""
    from veil.context.budget import request_budget
    from veil.launch import LAUNCHERS
    from veil.llm.catalog import CATALOG, DEFAULT_CONTEXT_WINDOW

    launcher = LAUNCHERS.get(options.agent)
    host = launcher.host if launcher is not None else None
    settings = launcher.settings(env) if launcher is not None else dict(env)

    def budget(model: str) -> int:
        if host is not None:
            return host.budget(model, settings, CATALOG)
        info = CATALOG.lookup(model)
        window = info.context_window if info is not None else DEFAULT_CONTEXT_WINDOW
        budget = request_budget(window)
        if info is not None and info.long_context_above is not None:
            budget = min(budget, info.long_context_above)
        return budget

    return budget


def _start(
    upstream: Any,
    root: Path,
    scope: str,
    options: ProxyOptions,
    env: Mapping[str, str],
    log_stream: TextIO,
) -> tuple[Any, Any]:
    from veil.embed import default_embedder
    from veil.hosts import HOSTS
    from veil.proxy.server import Log, ProxyServer
    from veil.proxy.session import Conversations
    from veil.tape import open_store

    embedder = default_embedder()
    store = open_store(
        f"sqlite:///{root / '.veil' / 'context.db'}?synchronous=normal", embedder=embedder
    )
    host = HOSTS.get(options.agent)
    markers = (
        host.compaction_markers
        if host is not None
        else tuple(m for h in HOSTS.values() for m in h.compaction_markers)
    )
    conversations = Conversations(
        store,
        scope=scope,
        root=root,
        window=options.window,
        embedder=embedder,
        budgets=None if options.window is not None else budgets(options, env),
        expand=None if host is None else (lambda _request: host.expand_tool),
        host=None if host is None else host.name,
        shadow=options.shadow,
        compaction_markers=markers,
    )
    server = ProxyServer(upstream, conversations, port=options.port, log=Log(log_stream))
    server.serve_in_background()
    return server, conversations


def _run_child(command: Sequence[str], env: Mapping[str, str], cwd: Path) -> int:
    """Run the agent with our terminal; Ctrl-C goes to it (not to us) while it runs.

    The proxy is a thread of this process: if ``veil`` dies (killed, out of memory), the agent
    would be left retrying a dead port. On Linux the kernel sends the agent SIGTERM when
    ``veil`` dies (``PR_SET_PDEATHSIG``), so the agent ends as on any SIGTERM — Claude Code and
    Codex keep their session files, and ``veil claude -- --resume ID`` goes on through a new
    proxy. Elsewhere the agent keeps running and fails on its next request."""
    # A handler that does nothing, not SIG_IGN: an ignored signal stays ignored across exec, so
    # the agent would start deaf to Ctrl-C; a caught one is reset to the default there.
    previous = signal.signal(signal.SIGINT, lambda _signum, _frame: None)
    try:
        arm = _die_with_parent()  # calls one C function looked up before the fork
        child = subprocess.Popen(list(command), env=dict(env), cwd=cwd, preexec_fn=arm)  # noqa: PLW1509
        return child.wait()
    finally:
        signal.signal(signal.SIGINT, previous)


def _die_with_parent() -> Callable[[], None] | None:
    """For the agent's process, between fork and exec: SIGTERM when this process dies. The
    C function is looked up here, before the fork; the child only calls it (nothing that
    could need a lock another thread of ours held at the fork)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    set_pdeathsig = 1  # PR_SET_PDEATHSIG

    def arm() -> None:
        prctl(set_pdeathsig, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # veil died before the line above: end now
            os._exit(1)

    return arm
