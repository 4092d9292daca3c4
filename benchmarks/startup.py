"""Start-up time of the commands people type: ``veil -p`` (one scripted turn), ``veil mcp``
(until it answers ``initialize``) and the TUI (until its first screen is drawn).

Run from the repository root::

    python -m benchmarks.startup            # 7 runs of each
    python -m benchmarks.startup --quick    # 2 runs of each

Every command runs as a fresh subprocess in a fresh temporary git repository, so nothing is
warm but the OS page cache (the first, discarded, run of each warms that). The floor is the
bare interpreter (``python -c pass``) measured in the same run, so the ratio column says how
much of a start-up is Veil's own. Targets (issue 14): ``veil -p`` under 1.5 s, ``veil mcp``
initialise under 1.5 s, the TUI's first screen under 2 s, on this machine (the report's table
says whether each held: :data:`benchmarks.lib.report.startup.TARGETS`).

Also recorded: which provider SDKs a scripted run imports (none should be: ``-X importtime``).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.lib.machine import describe, load_text
from benchmarks.lib.report.startup import render_section
from benchmarks.lib.results import save
from benchmarks.lib.timing import summary

SCRIPT = {"turns": [{"content": "Done."}]}


def git_repo(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
    }
    env["GIT_COMMITTER_EMAIL"] = "b@b"
    (root / "a.py").write_text("A = 1\n")
    for cmd in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "init"]):
        subprocess.run(cmd, cwd=root, env=env, check=True, capture_output=True)
    (root / "script.json").write_text(json.dumps(SCRIPT))
    return root


def veil(*args: str) -> list[str]:
    return [sys.executable, "-m", "veil.cli.main", *args]


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if not k.startswith("VEIL_")}
    return out | {"TERM": "xterm-256color", "COLUMNS": "100", "LINES": "30"}


def one_turn(root: Path, *python_flags: str) -> subprocess.CompletedProcess[str]:
    """``veil -p`` with a one-turn script, in ``root``."""
    argv = veil("-p", "say done", "--model", f"scripted:{root / 'script.json'}")
    return subprocess.run(
        [argv[0], *python_flags, *argv[1:]],
        cwd=root,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def time_print(root: Path) -> float:
    t0 = time.perf_counter()
    done = one_turn(root)
    seconds = time.perf_counter() - t0
    if done.returncode != 0 or "Done." not in done.stdout:
        raise RuntimeError(f"veil -p failed: {done.returncode}\n{done.stderr}")
    return seconds


def time_floor(root: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], cwd=root, check=True)
    return time.perf_counter() - t0


def time_version(root: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(veil("--version"), cwd=root, check=True, capture_output=True)
    return time.perf_counter() - t0


def time_mcp(root: Path) -> float:
    """Spawn ``veil mcp`` (no model: recall-only) and time the ``initialize`` answer."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        veil("mcp", "--db", str(root / ".veil" / "memory.db"), "--scope", "bench"),
        cwd=root,
        env=env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        },
    }
    try:
        proc.stdin.write((json.dumps(request) + "\n").encode())
        proc.stdin.flush()
        line = proc.stdout.readline()
        seconds = time.perf_counter() - t0
        if b'"result"' not in line:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise RuntimeError(f"veil mcp did not initialise: {line!r} {err}")
        return seconds
    finally:
        proc.kill()
        proc.wait()


def time_tui(root: Path) -> float:
    """Run the TUI on a pseudo-terminal and time it until the status line is on screen."""
    t0 = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: become the TUI
        os.chdir(root)
        argv = veil("--model", f"scripted:{root / 'script.json'}")
        os.execve(argv[0], argv, env())
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    seen = b""
    try:
        deadline = t0 + 60
        while time.perf_counter() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            seen += chunk
            if b"session" in seen and b"window" in seen:  # the status line is drawn
                return time.perf_counter() - t0
        raise RuntimeError(f"the TUI drew no status line: {seen[-500:]!r}")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)


def sdk_imports(root: Path) -> list[str]:
    """Provider SDK modules a one-turn scripted run imports."""
    done = one_turn(root, "-X", "importtime")
    found = {
        line.split("|")[-1].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    return sorted(found & {"openai", "anthropic"})


def measure(runs: int, tmp: Path) -> dict[str, Any]:
    cases: dict[str, Callable[[Path], float]] = {
        "python -c pass (floor)": time_floor,
        "veil --version": time_version,
        "veil -p (one scripted turn)": time_print,
        "veil mcp initialize": time_mcp,
        "TUI first screen": time_tui,
    }
    out: dict[str, Any] = {}
    for name, case in cases.items():
        samples: list[float] = []
        for i in range(runs + 1):
            root = git_repo(tmp / f"{name.split()[0]}-{len(out)}-{i}")
            seconds = case(root)
            if i:  # the first run warms the page cache
                samples.append(seconds)
        out[name] = summary(samples, ("median", "min", "max", "n"), digits=None)
        print(f"{name}: median {out[name]['median']:.2f} s", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    runs = 2 if args.quick else 7
    load_before = load_text()
    with tempfile.TemporaryDirectory(prefix="veil-startup-") as tmp:
        results = measure(runs, Path(tmp))
        sdks = sdk_imports(git_repo(Path(tmp) / "imports"))
    data = {
        "benchmark": "startup",
        "quick": args.quick,
        "runs": runs,
        "load_before": load_before,
        "machine": describe(),
        "results": results,
        "sdk_imports_scripted": sdks,
    }
    print(render_section(data))
    save(data, "startup", quick=args.quick, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
