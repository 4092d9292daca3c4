"""The OpenAI-compatible client against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from veil.llm import ModelNotConfigured, OpenAICompatible, complete_from_spec

SEEN: list[dict[str, Any]] = []


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        SEEN.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        reply = {"choices": [{"message": {"role": "assistant", "content": '{"facts": []}'}}]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

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


def test_request_carries_model_messages_schema_and_key(server: str) -> None:
    SEEN.clear()
    complete = OpenAICompatible("m1", server, api_key="k")
    out = complete([{"role": "user", "content": "hi"}], json_schema={"type": "object"})
    assert out == '{"facts": []}'
    (seen,) = SEEN
    assert seen["path"] == "/v1/chat/completions" and seen["auth"] == "Bearer k"
    assert seen["body"]["model"] == "m1"
    assert seen["body"]["response_format"]["json_schema"]["schema"] == {"type": "object"}


def test_unreachable_server_is_a_clear_error() -> None:
    complete = OpenAICompatible("m", "http://127.0.0.1:9/v1", timeout_s=2)
    with pytest.raises(RuntimeError, match="cannot reach"):
        complete([{"role": "user", "content": "hi"}])


def test_spec_errors_say_how_to_configure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VEIL_MODEL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelNotConfigured, match="VEIL_MODEL"):
        complete_from_spec()
    with pytest.raises(ModelNotConfigured, match="OPENAI_API_KEY"):
        complete_from_spec("openai:gpt-4.1-mini")
    monkeypatch.setenv("OLLAMA_HOST", "127.0.0.1:11434")
    assert complete_from_spec("ollama:qwen2.5:7b").base_url == "http://127.0.0.1:11434/v1"
