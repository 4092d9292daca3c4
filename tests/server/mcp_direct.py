"""Drive a :class:`veil.server.mcp_protocol.McpServer` in-process, message by message.

The subprocess tests (``tests/server/test_commands.py``) talk to ``veil mcp`` with the ``mcp``
SDK's own client, so the wire format is checked against the reference implementation there;
the reliability suites only need the tool logic behind the protocol, many scopes at a time, so
they send the same JSON-RPC messages straight to :meth:`McpServer.handle`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from veil.server.mcp_protocol import McpServer


@dataclass(frozen=True)
class CallResult:
    is_error: bool
    structured_content: dict[str, Any] | None
    texts: list[str]


class DirectMcp:
    def __init__(self, server: McpServer) -> None:
        self.server = server
        self._id = 0
        init = self._request(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}},
        )
        assert init["protocolVersion"] == "2025-06-18"
        assert self.server.handle({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None

    def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        answer = self.server.handle(
            {"jsonrpc": "2.0", "id": self._id, "method": method, "params": params}
        )
        assert answer is not None and answer["id"] == self._id, answer
        assert "error" not in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    def call_tool(self, name: str, arguments: dict[str, Any]) -> CallResult:
        result = self._request("tools/call", {"name": name, "arguments": arguments})
        texts = [c["text"] for c in result["content"] if c.get("type") == "text"]
        return CallResult(bool(result.get("isError")), result.get("structuredContent"), texts)
