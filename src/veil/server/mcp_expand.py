"""``veil mcp --project``'s working memory: the project's stored items, for the ``expand`` verb
and recall's earlier results.

A result Veil moved out of a request — by the proxy in front of Claude Code or Codex
(``veil claude``, ``veil codex``), or by ``veil`` itself — is a one-line stub that names its
pointer. ``expand`` answers with the original result, byte for byte as it was kept (secrets
redacted, as everything Veil stores). The proxy sees the call in the next request and takes
it as a restore: the item counts as a regret for the eviction threshold, and the result is in
the prompt again — here, in the tool's answer.

Read-only: nothing here writes to the store; the scope is the server's binding.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from veil.context.projection import ContextProjection
from veil.context.resume import read_item
from veil.context.search import find
from veil.tape import Store, TapeError
from veil.verbs import Earlier, Restored

POINTER = re.compile(r"^veil://(?:warm|cold|live)/([A-Za-z0-9_\-]+)$")
MIN_SIMILARITY = 0.3


@dataclass
class ProjectWorkingMemory:
    """The project's working memory as stored (``.veil/context.db``), read-only."""

    store: Store
    scope: str
    vectors: bool = True
    """Whether the store was opened with an embedder (its items have vector indexes)."""
    expand_tool: str = "expand"
    _attached: list[bool] = field(default_factory=lambda: [])

    def _attach(self) -> None:
        if not self._attached:  # the items are the working memory's projection: read only
            try:
                self.store.attach(ContextProjection())
            except (TapeError, ValueError) as exc:
                raise LookupError(f"no working memory in this project yet ({exc})") from None
            self._attached.append(True)

    def search(self, query: str, *, limit: int) -> Sequence[Earlier]:
        try:
            self._attach()
            ids = find(
                self.store,
                scope=self.scope,
                query=query,
                limit=limit,
                vectors=self.vectors,
                min_similarity=MIN_SIMILARITY,
            )
        except (LookupError, TapeError, ValueError):
            return []  # recall's earlier results are a bonus: the facts still answer
        out: list[Earlier] = []
        for item_id in ids:
            item = read_item(self.store, scope=self.scope, item_id=item_id, session_id="mcp")
            if item is not None and item.tier != "live":
                out.append(Earlier(item.pointer, item.tool_name or item.kind, item.target or "",
                                   item.tokens))  # fmt: skip
        return out

    def expand(self, pointer: str) -> Restored:
        self._attach()
        match = POINTER.match(pointer)
        item_id = match.group(1) if match else pointer
        item = read_item(self.store, scope=self.scope, item_id=item_id, session_id="mcp")
        if item is None:
            raise LookupError(f"{pointer!r} names nothing in this project's working memory")
        return Restored(item.id, item.pointer, item.tool_name or item.kind, item.target or "",
                        item.tokens, item.content)  # fmt: skip

    load = expand
