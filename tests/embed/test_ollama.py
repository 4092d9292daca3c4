"""OllamaEmbedder against a tiny real HTTP server speaking Ollama's /api/embed."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import numpy as np
import pytest

from veil.embed import Embedder, EmbedderUnavailable, HashEmbedder, OllamaEmbedder
from veil.embed.ollama import ollama_url_from_env
from veil.testing import EmbedderContract

FAKE_DIM = 8
_hash = HashEmbedder(dim=FAKE_DIM)


class FakeOllama(BaseHTTPRequestHandler):
    """Answers POST /api/embed for model "fake" with unnormalised (x3) hash vectors."""

    requests: ClassVar[list[dict[str, object]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeOllama.requests.append(body)
        if self.path != "/api/embed":
            self._reply(404, {"error": "not found"})
        elif body.get("model") != "fake":
            self._reply(404, {"error": f'model "{body.get("model")}" not found, try pulling it'})
        else:
            vectors = (_hash.embed(body["input"]) * 3.0).tolist()
            self._reply(200, {"model": "fake", "embeddings": vectors})

    def _reply(self, status: int, payload: object) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeOllama)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class TestOllamaEmbedder(EmbedderContract):
    blank = "zero"  # the fake answers zero rows for blank text: normalising must keep them so
    spec = "ollama:fake"

    @pytest.fixture(autouse=True)
    def _server(self, server_url: str) -> None:
        self.url = server_url

    def make_embedder(self) -> OllamaEmbedder:
        return OllamaEmbedder(model="fake", base_url=self.url, timeout=5, batch_size=2)

    def spec_env(self) -> dict[str, str]:
        return {"VEIL_OLLAMA_URL": self.url}


def test_embeds_normalises_and_learns_dim(server_url: str) -> None:
    FakeOllama.requests.clear()
    emb = OllamaEmbedder(model="fake", base_url=server_url, timeout=5, batch_size=2)
    assert emb.name == "ollama:fake"
    v = emb.embed(["I love dogs", "cats", "tax return"])
    np.testing.assert_allclose(v, _hash.embed(["I love dogs", "cats", "tax return"]), atol=1e-6)
    assert emb.dim == FAKE_DIM
    assert [r["input"] for r in FakeOllama.requests] == [["I love dogs", "cats"], ["tax return"]]
    # On Python 3.11 isinstance() on a runtime-checkable protocol evaluates properties, so it
    # would probe the server for `dim`; after a first call it is free.
    assert isinstance(emb, Embedder)
    assert len(FakeOllama.requests) == 2


def test_dim_probe_and_empty_input(server_url: str) -> None:
    FakeOllama.requests.clear()
    emb = OllamaEmbedder(model="fake", base_url=server_url, timeout=5)
    assert emb.embed([]).shape == (0, FAKE_DIM)
    assert len(FakeOllama.requests) == 1
    assert OllamaEmbedder(model="fake", base_url=server_url, dim=8).dim == 8
    assert len(FakeOllama.requests) == 1


def test_unknown_model_is_a_clear_error(server_url: str) -> None:
    emb = OllamaEmbedder(model="missing-model", base_url=server_url, timeout=5)
    with pytest.raises(EmbedderUnavailable, match=r"ollama pull missing-model") as info:
        emb.embed(["x"])
    assert "HTTP 404" in str(info.value) and server_url in str(info.value)


def test_nothing_listening_is_a_clear_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    emb = OllamaEmbedder(base_url=url, timeout=5)
    with pytest.raises(EmbedderUnavailable) as info:
        emb.embed(["hello"])
    message = str(info.value)
    assert f"{url}/api/embed" in message
    assert "ollama serve" in message and "ollama pull nomic-embed-text" in message


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "http://127.0.0.1:11434"),
        ({"OLLAMA_HOST": "0.0.0.0"}, "http://0.0.0.0:11434"),
        ({"OLLAMA_HOST": "gpu-box:9999"}, "http://gpu-box:9999"),
        ({"OLLAMA_HOST": "https://o.example.com/"}, "https://o.example.com:11434"),
        (
            {"OLLAMA_HOST": "x:1", "VEIL_OLLAMA_URL": "http://10.0.0.2:11434"},
            "http://10.0.0.2:11434",
        ),
    ],
)
def test_url_from_env(env: dict[str, str], expected: str) -> None:
    assert ollama_url_from_env(env) == expected
