"""Fakes and contract tests shipped with Veil, for its own tests and for yours.

Everything here sits at the LLM boundary or stands in for time: :class:`ScriptedModel` is a
``complete`` callable that replays canned responses, :class:`FakeClock` is a clock you move by
hand, :class:`HashEmbedder` is a deterministic embedder with no weights.

The contract suites: :class:`StoreContract` is the test suite every store backend must pass
(subclass it and implement ``make_store``); :class:`ProviderContract` the one every streaming
provider must pass, over real HTTP to a :class:`WireServer` on 127.0.0.1 that serves the replies
its :class:`WireFormat` writes (subclass it, implement ``make_provider`` and set the format);
:class:`EmbedderContract` the one every embedder must pass (implement ``make_embedder``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from veil.clock import FakeClock
from veil.embed.contract import EmbedderContract
from veil.embed.hashing import HashEmbedder
from veil.llm.contract import (
    CannedCall,
    ProviderContract,
    Reply,
    Seen,
    Sleeps,
    WireFormat,
    WireServer,
    json_reply,
    sse_reply,
)
from veil.llm.scripted import ScriptedModel, ScriptExhausted
from veil.tape.contract import NotesProjection, StoreContract, note_event

__all__ = [
    "CannedCall",
    "EmbedderContract",
    "FakeClock",
    "HashEmbedder",
    "NotesProjection",
    "ProviderContract",
    "Reply",
    "ScriptExhausted",
    "ScriptedModel",
    "ScriptedOpenAIServer",
    "Seen",
    "Sleeps",
    "StoreContract",
    "WireFormat",
    "WireServer",
    "json_reply",
    "note_event",
    "sse_reply",
]


# ---- a scripted model behind a real OpenAI-compatible HTTP server --------------------------


class ScriptedOpenAIServer:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint on 127.0.0.1 that replays a
    script of assistant turns (the ``scripted:FILE`` format: ``{"turns": [{"content": …,
    "tool_calls": [{"name": …, "arguments": {…}}]}]}``), streaming or not, whatever the
    request. Lets tests and bug reports drive the real OpenAI provider and SDK end to end::

        with ScriptedOpenAIServer(script) as server:
            env = {"VEIL_BASE_URL": server.base_url}   # --model openai-compatible:scripted

    Every request body received is kept in :attr:`requests`. When the script runs out the
    server answers 400 with a clear message.
    """

    def __init__(self, script: Mapping[str, Any]) -> None:
        self.turns: list[dict[str, Any]] = list(script.get("turns", []))
        self.requests: list[dict[str, Any]] = []
        self._server: Any = None
        self._thread: Any = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ScriptedOpenAIServer:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                outer.requests.append(body)
                index = len(outer.requests) - 1
                if index >= len(outer.turns):
                    self._send(
                        400,
                        {
                            "error": {
                                "message": f"the script has {len(outer.turns)} "
                                f"turns; this is request {index + 1}"
                            }
                        },
                    )
                    return
                turn = outer.turns[index]
                calls = [
                    {
                        "id": f"call_{index + 1}_{i}",
                        "type": "function",
                        "function": {
                            "name": c["name"],
                            "arguments": json.dumps(c.get("arguments", {})),
                        },
                    }
                    for i, c in enumerate(turn.get("tool_calls", []), start=1)
                ]
                message: dict[str, Any] = {
                    "role": "assistant",
                    "content": turn.get("content") or "",
                }
                if calls:
                    message["tool_calls"] = calls
                finish = "tool_calls" if calls else "stop"
                usage = {
                    "prompt_tokens": len(json.dumps(body)) // 4,
                    "completion_tokens": 10,
                    "total_tokens": len(json.dumps(body)) // 4 + 10,
                }
                if not body.get("stream"):
                    self._send(
                        200,
                        {
                            "id": f"chatcmpl-{index}",
                            "object": "chat.completion",
                            "created": 0,
                            "model": body.get("model", "scripted"),
                            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                            "usage": usage,
                        },
                    )
                    return
                chunks: list[dict[str, Any]] = [
                    {"role": "assistant", "content": message["content"]}
                ]
                for i, call in enumerate(calls):
                    chunks.append({"tool_calls": [{"index": i, **call}]})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                base = {
                    "id": f"chatcmpl-{index}",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": body.get("model", "scripted"),
                }
                for delta in chunks:
                    self._event(
                        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
                    )
                self._event(
                    {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
                )
                self._event({**base, "choices": [], "usage": usage})
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _event(self, data: dict[str, Any]) -> None:
                self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())

            def _send(self, status: int, data: dict[str, Any]) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
