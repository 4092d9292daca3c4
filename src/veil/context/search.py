"""Search over working memory's warm and cold items: what makes a demoted item searchable, and
the query.

Live items are in the prompt and not indexed. A demoted item becomes searchable lazily: the
engine queues it (:class:`IndexQueue`) and appends its ``context.indexed`` event a few per step
(``index_per_step``), so a burst of evictions never stalls one tool call; a search drains the
queue first. The query (:func:`find`) is full text first, then vector neighbours above a floor.
"""

from __future__ import annotations

from veil.context.items import ContextItem
from veil.context.projection import ITEMS_TEXT, ITEMS_VEC
from veil.tape import Store

SEARCH_CHARS = 20_000
"""Only the head of a very large item is indexed for full text."""


class IndexQueue:
    """Demoted items not yet searchable, in the order they left the prompt."""

    def __init__(self) -> None:
        self._pending: dict[str, None] = {}

    def demoted(self, item_id: str) -> None:
        self._pending[item_id] = None

    def restored(self, item_id: str) -> None:
        """Back in the prompt: no longer to be indexed."""
        self._pending.pop(item_id, None)

    def take(self, limit: int | None) -> list[str]:
        """Up to ``limit`` of the oldest waiting items (all when None), removed from the queue."""
        taken = list(self._pending)[:limit]
        for item_id in taken:
            del self._pending[item_id]
        return taken


def search_text(item: ContextItem) -> str:
    """What an item is found by: its call and target, then the head of its content."""
    return f"{item.tool_name or item.kind} {item.target or ''}\n{item.content[:SEARCH_CHARS]}"


def find(
    store: Store,
    *,
    scope: str,
    query: str,
    limit: int,
    vectors: bool,
    min_similarity: float,
) -> list[str]:
    """Ids of warm and cold items matching ``query``: full-text matches first, then (with
    ``vectors``) nearest neighbours whose cosine is at least ``min_similarity`` — a neighbour is
    always *some* item; the floor keeps unrelated ones out. Each id once, at most ``limit``."""
    hits = [h.doc_id for h in store.search_text(ITEMS_TEXT, scope=scope, query=query, limit=limit)]
    if vectors:
        hits += [
            h.doc_id
            for h in store.search_vector(ITEMS_VEC, scope=scope, query=query, limit=limit)
            if h.score >= min_similarity
        ]
    return list(dict.fromkeys(hits))
