"""The ``veil serve``, ``veil mcp`` and ``veil keys`` commands (``veil.cli.main`` dispatches here).

Each opens what it needs, runs, and closes it. Output contract: ``veil keys create`` prints the
new key alone on stdout (so ``KEY=$(veil keys create …)`` works) and everything else on stderr;
``veil mcp`` writes nothing but protocol messages on stdout. ``veil serve`` prints the address it
listens on (the real port when ``--port 0`` let the system choose) once it accepts connections,
then one access-log line per request on stderr (:class:`veil.server.app.AccessLog`: time,
method, path, status, milliseconds, key id — never a body, a query string or a key).

Without a model (no ``--model``, no ``$VEIL_MODEL``) both servers start and serve reads; their
``remember`` answers that no model is configured (HTTP 503, an MCP error result). A model that
*is* named but unusable — unknown provider, missing key, bad script file — is a start-up error:
one line on stderr, exit status 2, as are a bad ``--embedder`` and a missing extra.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from veil import __version__
from veil.embed import EmbedderUnavailable
from veil.llm.configure import ModelNotConfigured
from veil.memory import Memory
from veil.server.keys import Authority, KeyRequestError, KeyRing
from veil.tape import BackendUnavailable, Store, open_store, sqlite_path

DEFAULT_DB = str(Path(".veil") / "memory.db")


@dataclass(frozen=True)
class ServeOptions:
    db: str | None
    model: str | None
    host: str = "127.0.0.1"
    port: int = 8765
    embedder: str = "static"
    rate_per_s: float = 20.0
    burst: int = 40
    max_body_bytes: int = 1_000_000


STARTUP_ERRORS = (ModelNotConfigured, ValueError, BackendUnavailable, EmbedderUnavailable)
"""Predictable start-up mistakes: a named model that cannot be used, a bad script or embedder
spec, a missing extra. Each is reported as one line and exit status 2."""


def _open_memory(
    db: str | None, model: str | None, embedder_spec: str, env: Mapping[str, str] = os.environ
) -> Memory:
    """A Memory for a server. ``model`` (else ``$VEIL_MODEL``) gives its ``complete``; with
    neither it has none and can only read. Raises one of :data:`STARTUP_ERRORS`."""
    from veil.embed import embedder_from_spec
    from veil.llm.registry import extraction_complete_from_spec

    embedder = embedder_from_spec(embedder_spec)
    spec = model or env.get("VEIL_MODEL") or None
    complete = extraction_complete_from_spec(spec, env=env) if spec else None
    return Memory(db or DEFAULT_DB, complete=complete, embedder=embedder, actor="server")


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (``port`` 0: the system picks a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


M_ARENA_MAX = -8
"""glibc ``mallopt`` parameter number of ``M_ARENA_MAX``."""


def limit_malloc_arenas(arenas: int = 2) -> bool:
    """Cap glibc's malloc arenas for this process (no effect elsewhere; returns whether set).

    The server answers from a thread pool; glibc gives threads their own arenas (up to 8 per
    core), and memory freed in one arena is not reused by another, so RSS creeps up under a
    steady load. The 10-minute steady soak measured 2.5 MB/min of growth with bounded data;
    with 2 arenas 0.9 MB/min, flattening (docs/reliability.md). ``MALLOC_ARENA_MAX`` in the
    environment wins, as glibc documents."""
    import ctypes
    import ctypes.util
    import os

    if os.environ.get("MALLOC_ARENA_MAX") or not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(M_ARENA_MAX, arenas))
    except (OSError, AttributeError):  # musl and other libcs have no mallopt
        return False


def run_serve(options: ServeOptions) -> int:
    """Serve the HTTP API until interrupted. Without the ``server`` extra: one line naming
    the missing package and its install, status 1, nothing opened."""
    try:
        import uvicorn

        from veil.server.app import ServerSettings, create_app
    except ImportError as exc:
        from veil.extras import missing

        print(f"veil serve: {missing('server', 'veil serve', exc)}", file=sys.stderr)
        return 1

    limit_malloc_arenas()
    try:
        memory = _open_memory(options.db, options.model, options.embedder)
    except STARTUP_ERRORS as exc:
        print(f"veil serve: {exc}", file=sys.stderr)
        return 2
    try:
        keys = KeyRing(memory.store)
        settings = ServerSettings(
            max_body_bytes=options.max_body_bytes,
            rate_per_s=options.rate_per_s,
            burst=options.burst,
        )
        app = create_app(memory, keys, settings, access_log=_log_line)
        try:
            sock = _listen(options.host, options.port)
        except OSError as exc:
            print(
                f"veil serve: cannot listen on {options.host}:{options.port}: {exc}",
                file=sys.stderr,
            )
            return 2
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        note = "" if memory.complete else " (no model: remember answers 503; reads work)"
        print(
            f"veil serve: http://{shown}:{port} over {memory.store.dialect}{note}", file=sys.stderr
        )
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it shut down on
            pass
        finally:
            sock.close()
    finally:
        memory.close()
    return 0


def _log_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class McpOptions:
    """``veil mcp``'s command line. ``project`` (``--project [DIR]``) binds the server to a
    project: DIR, else ``$CLAUDE_PROJECT_DIR`` (set by Claude Code), else the git repository
    around the current directory; its scope is the project's (unless ``--scope``), its memory
    ``.veil/memory.db`` and its attempt record ``.veil/context.db`` (unless ``--db`` /
    ``--attempts-db``). Without ``project`` the scope is required and the attempt record is
    kept in the ``--db`` store unless ``--attempts-db`` names another."""

    db: str | None
    scope: str | None
    authority: Authority
    model: str | None
    embedder: str = "static"
    project: str | None = None
    attempts_db: str | None = None


@dataclass(frozen=True)
class McpTargets:
    """Where a ``veil mcp`` server reads and writes, resolved from :class:`McpOptions`."""

    scope: str
    db: str
    attempts_db: str | None
    """``None``: the attempt record lives in the memory store itself."""


def mcp_targets(options: McpOptions, env: Mapping[str, str] = os.environ) -> McpTargets:
    """Resolve the stores and the scope; ``ValueError`` with a one-line reason."""
    if options.project is None:
        if not options.scope:
            raise ValueError("--scope is required (or --project to serve this project's memory)")
        return McpTargets(options.scope, options.db or DEFAULT_DB, options.attempts_db)
    from veil.agent.project import project_root, project_scope, veil_dir

    start = options.project or env.get("CLAUDE_PROJECT_DIR") or str(Path.cwd())
    root = Path(start).expanduser()
    if not root.is_dir():
        raise ValueError(f"--project {start}: no such directory")
    root = project_root(root)
    scope = options.scope or project_scope(root)
    if options.db is None or options.attempts_db is None:
        home = veil_dir(root)
        db = options.db or str(home / "memory.db")
        attempts = options.attempts_db or f"sqlite:///{home / 'context.db'}?synchronous=normal"
    else:
        db, attempts = options.db, options.attempts_db
    return McpTargets(scope, db, attempts)


def run_mcp(options: McpOptions) -> int:
    """Serve MCP over stdio, bound to one scope and one authority.

    With ``--project`` (the server an agent runs for its session, and the one its hooks call)
    a store that cannot be opened — locked, corrupt, unreadable — does not stop the server: it
    says so in one line on stderr and serves what works (at least the ``hook`` tool, which
    then answers "no opinion"), so the agent's session and its hooks never wait on Veil."""
    from veil.convergence.record import AttemptLog
    from veil.server.mcp_protocol import McpServer, Tool
    from veil.server.mcp_server import Binding, build_server
    from veil.tape import new_id

    embedded = options.project is not None
    try:
        targets = mcp_targets(options)
        binding = Binding(targets.scope, options.authority)
    except ValueError as exc:  # a mistake in the arguments: say so
        print(f"veil mcp: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a .veil/ that cannot be made: the agent's hooks still answer
        print(f"veil mcp: {exc}", file=sys.stderr)
        if not embedded:
            return 2
        return _serve_hooks_only()
    memory: Memory | None = None
    attempts_store: Store | None = None
    try:
        memory = _open_memory(targets.db, options.model, options.embedder)
        attempts_store = (
            # with the memory's embedder: the context items (``expand``) have vector indexes
            open_store(targets.attempts_db, embedder=memory.embedder)
            if targets.attempts_db is not None
            else memory.store
        )
    except Exception as exc:
        if not embedded and not isinstance(exc, STARTUP_ERRORS):
            raise
        print(f"veil mcp: {_one_line(exc)}", file=sys.stderr)
        if not embedded:
            if memory is not None:
                memory.close()
            return 2
    if memory is not None and memory.complete is None:
        print(
            "veil mcp: no model configured: the remember tool answers with an error; "
            "recall, facts, history, confirm, dispute and the attempt tools work "
            "(set VEIL_MODEL or pass --model)",
            file=sys.stderr,
        )
    hooks = None
    extra: list[Tool] = []
    if embedded:  # the agents' hooks, answered warm (docs/claude-code.md)
        from veil.clients.hook_service import HookService
        from veil.server.mcp_hooks import hook_tool

        hooks = HookService()
        hooks.warm(Path.cwd())  # the stores and the embedder open before the first hook
        extra = [hook_tool(hooks)]
    working = None
    if embedded and attempts_store is not None:  # the project's context store: stubs' pointers
        from veil.server.mcp_expand import ProjectWorkingMemory

        working = ProjectWorkingMemory(attempts_store, targets.scope)
    try:
        if memory is None:
            print("veil mcp: serving the agents' hooks only", file=sys.stderr)
            McpServer("veil", __version__, extra).serve()
        else:
            log = (
                AttemptLog(attempts_store, targets.scope, new_id("mcp"), actor="mcp")
                if attempts_store is not None
                else None
            )
            build_server(memory, binding, log, extra, working).serve()
    finally:
        if hooks is not None:
            hooks.close()
        if attempts_store is not None and memory is not None and attempts_store is not memory.store:
            attempts_store.close()
        if memory is not None:
            memory.close()
    return 0


def _serve_hooks_only() -> int:
    from veil.clients.hook_service import HookService
    from veil.server.mcp_hooks import hook_tool
    from veil.server.mcp_protocol import McpServer

    hooks = HookService()
    try:
        McpServer("veil", __version__, [hook_tool(hooks)]).serve()
    finally:
        hooks.close()
    return 0


def _one_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


class KeysCommandError(Exception):
    """A ``veil keys`` mistake, reported as ``veil keys: <message>`` and exit status 2."""


def _open_keys(db: str | None, *, create: bool = False) -> tuple[Store, KeyRing]:
    """The store and its key ring. Only ``create`` may make a new SQLite file: listing or
    revoking in a store that does not exist is a mistake (a typo in ``--db``), not an empty
    list. Raises :class:`KeysCommandError` with a one-line message."""
    target = db or DEFAULT_DB
    path = sqlite_path(target)
    if not create and path is not None and not path.exists():
        raise KeysCommandError(f"no store at {target} (pass --db PATH_OR_URL)")
    try:
        store = open_store(target)
    except (BackendUnavailable, ValueError) as exc:
        raise KeysCommandError(str(exc)) from None
    return store, KeyRing(store)


def run_keys_create(
    db: str | None,
    scopes: Sequence[str],
    authority: Authority,
    admin: bool,
    label: str | None,
) -> int:
    """Print a new key alone on stdout; its id and grant go to stderr."""
    try:
        store, ring = _open_keys(db, create=True)
    except KeysCommandError as exc:
        print(f"veil keys: {exc}", file=sys.stderr)
        return 2
    try:
        new = ring.create(scopes, authority=authority, admin=admin, label=label)
    except KeyRequestError as exc:
        print(f"veil keys: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()
    key = new.key
    print(
        f"created key {key.key_id} (authority {key.authority}"
        f"{', admin' if key.admin else ''}) for scopes: {', '.join(sorted(key.scopes))}",
        file=sys.stderr,
    )
    print(new.token)
    return 0


KEYS_HEADER: tuple[str, ...] = ("KEY ID", "GRANT", "CREATED (UTC)", "LABEL", "SCOPES")


def run_keys_list(db: str | None) -> int:
    """A table on stdout, never a secret: the header :data:`KEYS_HEADER`, then one row per
    key, oldest first — id, grant (authority, ``admin``, ``revoked``), creation time, label
    (``-`` when none) and the scopes, space-separated, last. Columns are padded to line up."""
    try:
        store, ring = _open_keys(db)
    except KeysCommandError as exc:
        print(f"veil keys: {exc}", file=sys.stderr)
        return 2
    try:
        keys = ring.list()
    finally:
        store.close()
    rows: list[tuple[str, ...]] = [KEYS_HEADER]
    for key in keys:
        flags = [key.authority, *(["admin"] if key.admin else [])]
        if key.revoked:
            flags.append("revoked")
        created = f"{key.created_at:%Y-%m-%d %H:%M}"
        label = key.label or "-"
        rows.append((key.key_id, ",".join(flags), created, label, " ".join(sorted(key.scopes))))
    widths = [max(len(row[i]) for row in rows) for i in range(len(KEYS_HEADER) - 1)]
    for row in rows:
        padded = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  ".join([*padded, row[-1]]))
    return 0


def run_keys_revoke(db: str | None, key_id: str) -> int:
    try:
        store, ring = _open_keys(db)
    except KeysCommandError as exc:
        print(f"veil keys: {exc}", file=sys.stderr)
        return 2
    try:
        if not ring.revoke(key_id):
            print(f"veil keys: no live key {key_id!r}", file=sys.stderr)
            return 1
    finally:
        store.close()
    print(f"revoked {key_id}", file=sys.stderr)
    return 0
