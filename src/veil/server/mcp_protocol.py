"""A small MCP server over stdio: JSON-RPC 2.0, one message per line, the tools capability.

Why not the ``mcp`` SDK's server: importing it costs about a second (its protocol models),
which made ``veil mcp`` take almost two seconds to answer ``initialize``; an MCP client
(Claude Code, Codex, Cursor) starts the server at every session. What Veil needs of the
protocol is small and stable — the handshake revisions 2024-11-05 to 2025-11-25 — and is all
here: ``initialize`` (the client's revision when it is one of ours, else our newest),
``notifications/initialized`` and other notifications (ignored), ``ping``, ``tools/list`` and
``tools/call``; ``resources/list`` and ``prompts/list`` answer empty lists for clients that ask
anyway. Anything else is JSON-RPC ``-32601``. The tests drive it with the SDK's own client, so
the wire format is checked against the reference implementation.

Tool calls: the arguments are validated against the tool's input schema first (an unknown or
mistyped argument is an error result naming it, never silently dropped); a handler returns a
JSON object (sent as ``structuredContent`` and as text) or raises :class:`ToolFailed`, which
becomes an error result (``isError: true``) the model reads. An unknown tool is the protocol
error ``-32602``, as the specification says.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO, cast

from veil.llm.tool_schema import validate_arguments

PROTOCOL_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""The handshake revisions this server speaks, newest first."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

JSONObject = dict[str, Any]
Handler = Callable[[JSONObject], JSONObject]


class ToolFailed(Exception):
    """A tool could not do what was asked; the message is the error result the model reads."""


@dataclass(frozen=True)
class Tool:
    """One tool: its name, a description written for a model, a JSON schema of its arguments
    (every property described) and the handler that runs it."""

    name: str
    description: str
    input_schema: JSONObject
    handler: Handler
    read_only: bool = False
    as_text: Callable[[JSONObject], str] | None = None
    """How the result reads as text for the model (default: its JSON)."""

    def listing(self) -> JSONObject:
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "annotations": {"readOnlyHint": self.read_only},
        }


@dataclass
class McpServer:
    """Answers MCP messages; :meth:`handle` is the whole protocol, :meth:`serve` the stdio
    loop around it."""

    name: str
    version: str
    tools: Sequence[Tool]
    instructions: str = ""
    protocol_version: str | None = field(default=None, init=False)

    def handle(self, message: object) -> JSONObject | None:
        """The response to one JSON-RPC message (None for a notification)."""
        if not isinstance(message, dict):
            return _error(None, INVALID_REQUEST, "a JSON-RPC message is an object")
        msg = cast(JSONObject, message)
        request_id = msg.get("id")
        method = msg.get("method")
        if not isinstance(method, str):
            if "result" in msg or "error" in msg:
                return None  # a response to a request we never send: ignore
            return _error(request_id, INVALID_REQUEST, "no method")
        if "id" not in msg:
            return None  # notifications/initialized, notifications/cancelled, …
        params: object = msg.get("params") or {}
        if not isinstance(params, dict):
            return _error(request_id, INVALID_PARAMS, "params must be an object")
        try:
            result = self._dispatch(method, cast(JSONObject, params))
        except _RpcError as exc:
            return _error(request_id, exc.code, str(exc))
        except Exception as exc:  # a bug in a handler: the client gets an error, we go on
            return _error(request_id, INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def _dispatch(self, method: str, params: JSONObject) -> JSONObject:
        if method == "initialize":
            asked = params.get("protocolVersion")
            chosen = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
            self.protocol_version = str(chosen)
            result: JSONObject = {
                "protocolVersion": chosen,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": self.name, "version": self.version},
            }
            if self.instructions:
                result["instructions"] = self.instructions
            return result
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": [t.listing() for t in self.tools]}
        if method == "tools/call":
            return self._call(params)
        if method == "resources/list":
            return {"resources": []}
        if method == "prompts/list":
            return {"prompts": []}
        raise _RpcError(METHOD_NOT_FOUND, f"method {method!r} is not supported")

    def _call(self, params: JSONObject) -> JSONObject:
        name = params.get("name")
        tool = next((t for t in self.tools if t.name == name), None)
        if tool is None:
            known = ", ".join(t.name for t in self.tools)
            raise _RpcError(INVALID_PARAMS, f"unknown tool {name!r} (tools: {known})")
        arguments: object = params.get("arguments") or {}
        problems = validate_arguments(tool.input_schema, arguments)
        if problems:
            return _tool_error(f"invalid arguments for {tool.name}: {'; '.join(problems)}")
        try:
            out = tool.handler(cast(JSONObject, arguments))
        except ToolFailed as exc:
            return _tool_error(str(exc))
        if tool.as_text is not None:  # the text is the answer (clients prefer structured)
            return {"content": [{"type": "text", "text": tool.as_text(out)}], "isError": False}
        return {
            "content": [{"type": "text", "text": json.dumps(out, ensure_ascii=False)}],
            "structuredContent": out,
            "isError": False,
        }

    def serve(self, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> None:
        """Read messages line by line until the client closes stdin; write one response line
        per request. Nothing else is written to ``stdout``."""
        for line in stdin:
            if not line.strip():
                continue
            try:
                message: object = json.loads(line)
            except json.JSONDecodeError as exc:
                self._write(stdout, _error(None, PARSE_ERROR, f"not JSON: {exc}"))
                continue
            if isinstance(message, list):  # a batch (2025-03-26)
                answers = [self.handle(m) for m in cast(list[object], message)]
                batch = [a for a in answers if a is not None]
                if batch:
                    self._write(stdout, batch)
                continue
            answer = self.handle(message)
            if answer is not None:
                self._write(stdout, answer)

    @staticmethod
    def _write(stdout: TextIO, payload: JSONObject | list[JSONObject]) -> None:
        stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
        stdout.flush()


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _error(request_id: object, code: int, message: str) -> JSONObject:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _tool_error(message: str) -> JSONObject:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def object_schema(properties: Mapping[str, JSONObject], required: Sequence[str] = ()) -> JSONObject:
    """An input schema: the given properties (each with a ``description``), no others."""
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }
