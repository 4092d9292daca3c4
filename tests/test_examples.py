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


def run_example(name: str, store: Path) -> list[str]:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), str(store)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_pydantic_ai_example_shrinks_what_the_model_receives(tmp_path: Path) -> None:
    lines = run_example("pydantic_ai_history.py", tmp_path)
    requests = [line for line in lines if line.startswith("request ")]
    sent = [int(line.split(", ")[1].split(" tokens")[0].replace(",", "")) for line in requests]
    full = [int(line.split("(")[1].split(" in full")[0].replace(",", "")) for line in requests]
    assert len(requests) == 14 and sent[-1] < full[-1] / 3
    assert "veil_expand gave back log 1 in full: True" in lines
    assert any(line.startswith("the model sees log 1 as: [veil: read_log 1 — ") for line in lines)
    assert lines[-1] == "Every worker finished; log 1 is clean."


def test_openai_agents_example_keeps_items_across_sessions(tmp_path: Path) -> None:
    lines = run_example("openai_agents_session.py", tmp_path)
    runs = [line for line in lines if line.startswith("run ")]
    sent = int(runs[-1].split(" had ")[1].split(" characters")[0].replace(",", ""))
    kept = int(runs[-1].split("everything: ")[1].rstrip(")").replace(",", ""))
    assert len(runs) == 10 and sent < kept / 2
    assert "veil_expand gave back the log in full: True" in lines
    assert lines[-1] == "a new session object on the same store holds 44 items"
