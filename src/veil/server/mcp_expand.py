"""``veil mcp --project``'s ``expand`` tool: a ``veil://`` pointer back to what it stands for.

A result Veil moved out of a request — by the proxy in front of Claude Code or Codex
(``veil claude``, ``veil codex``), or by ``veil`` itself — is a one-line stub that names its
pointer. This tool answers with the original result, byte for byte as it was kept (secrets
redacted, as everything Veil stores). The proxy sees the call in the next request and takes
it as a restore: the item counts as a regret for the eviction threshold, and the result is in
the prompt again — here, in this tool's answer.

Read-only: it changes nothing in the store; the scope is the server's binding.
"""

from __future__ import annotations

import re

from veil.context.projection import ContextProjection
from veil.context.resume import read_item
from veil.server.mcp_protocol import JSONObject, Tool, ToolFailed, object_schema
from veil.tape import Store, TapeError

POINTER = re.compile(r"^veil://(?:warm|cold|live)/([A-Za-z0-9_\-]+)$")

DESCRIPTION = (
    "Restore a result Veil moved out of the conversation: pass the veil:// pointer a "
    "'[veil: … moved to warm memory; …]' stub shows, and get the original output back, "
    "exactly as it was. Use it when you need what a stub stands for instead of running the "
    "tool again."
)


def expand_tool(store: Store, scope: str) -> Tool:
    attached: list[bool] = []

    def expand(arguments: JSONObject) -> JSONObject:
        if not attached:  # the items are the working memory's projection: read, never written
            try:
                store.attach(ContextProjection())
            except (TapeError, ValueError) as exc:
                raise ToolFailed(f"no working memory in this project yet ({exc})") from None
            attached.append(True)
        pointer = str(arguments.get("pointer") or "").strip()
        match = POINTER.match(pointer)
        item_id = match.group(1) if match else pointer
        if not item_id:
            raise ToolFailed("pointer is empty: pass the veil://… pointer a stub shows")
        item = read_item(store, scope=scope, item_id=item_id, session_id="mcp")
        if item is None:
            raise ToolFailed(f"{pointer!r} names nothing in this project's working memory")
        return {
            "pointer": item.pointer,
            "tool": item.tool_name or item.kind,
            "target": item.target or "",
            "tokens": item.tokens,
            "content": item.content,
        }

    schema = object_schema(
        {"pointer": {"type": "string", "description": "The veil://… pointer from a stub."}},
        ["pointer"],
    )
    return Tool(
        "expand",
        DESCRIPTION,
        schema,
        expand,
        read_only=True,
        as_text=lambda out: str(out["content"]),
    )
