"""Every example runs."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EXTRACTION = {
    "facts": [
        {
            "subject": "user",
            "relation": "prefers",
            "object": "emacs",
            "statement": "The user prefers emacs.",
            "volatility": "durable",
            "claimant": "user",
            "supersedes": None,
        }
    ],
    "episodes": [],
}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps(
            {"choices": [{"message": {"role": "assistant", "content": json.dumps(EXTRACTION)}}]}
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_openai_provider_example(server: str) -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "openai_provider.py"), server, "m"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "The user prefers emacs." in result.stdout


def test_custom_loop_example() -> None:
    module = runpy.run_path(str(EXAMPLES / "custom_loop.py"))
    assert module["main"]() == "hello.py prints hello 200 times."
