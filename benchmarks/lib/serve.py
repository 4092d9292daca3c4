"""A real ``veil serve`` subprocess on loopback, with a scripted (instant) extraction model.

Used by the load test (``benchmarks.server_load``) and the soak (``benchmarks.soak``): the server
is the one a deployment runs (uvicorn, one worker), rate limiting off, every ``remember``
answered by a canned extraction of two facts and an episode.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

SCOPE = "user:bench"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def extraction(i: int) -> dict[str, Any]:
    """The ``i``-th canned extraction: a contact's job, a tool the user uses, an episode."""
    return {
        "facts": [
            {
                "subject": f"Contact {i % 500}",
                "relation": "works_as",
                "object": f"role {i % 37}",
                "statement": f"Contact {i % 500} works as role {i % 37}.",
                "claimant": "user",
            },
            {
                "subject": "user",
                "relation": "uses_tool",
                "object": f"tool {i % 41}",
                "statement": f"The user uses tool {i % 41}.",
                "claimant": "user",
            },
        ],
        "episodes": [
            {"kind": "interaction", "text": f"Talked about contact {i % 500}.", "due": None}
        ],
    }


def veil(*args: str, env: dict[str, str]) -> str:
    """``veil ARGS`` as a subprocess of this interpreter; its stdout, stripped."""
    done = subprocess.run(
        [sys.executable, "-m", "veil.cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    return done.stdout.strip()


def start_server(
    db: str, script: Path, turns: int, *, admin: bool = False
) -> tuple[subprocess.Popen[str], str, str]:
    """A key for ``SCOPE`` (an admin key, which may erase the scope, when ``admin``) and a real
    ``veil serve`` on a free loopback port, ready to answer (``scripted:`` extraction with
    ``turns`` canned replies, rate limiting off). Returns the process, its base URL and the
    key; the caller terminates the process."""
    script.write_text(
        json.dumps({"turns": [{"content": json.dumps(extraction(i))} for i in range(turns)]})
    )
    key = veil(
        "keys",
        "create",
        "--db",
        db,
        "--scope",
        SCOPE,
        *(["--admin"] if admin else []),
        env={**os.environ},
    )
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "veil.cli.main",
            "serve",
            "--db",
            db,
            "--model",
            f"scripted:{script}",
            "--port",
            str(port),
            "--rate",
            "0",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{base}/v1/health", timeout=1).status_code == 200:
                return server, base, key
        except httpx.HTTPError:
            time.sleep(0.1)
    server.terminate()
    raise RuntimeError("veil serve did not start within 30 s")
