"""Working memory for the conversations passing through the proxy: one context engine per
conversation, on the project's ``.veil/context.db``.

For each request (:meth:`Conversations.prepare`) the conversation's messages become the
context layer's entries (:class:`~veil.context.transcript.Transcript`: a result it has not seen
is captured, with what its call addressed from :mod:`veil.proxy.tools`; an expansion by Veil's
MCP ``expand`` tool is a restore), the request is measured as it would be sent, and only when
it is over the budget does the engine take a turn boundary — a batch of evictions down to about
half the budget — so that between two batches every request's prefix is byte-stable and the
provider's prompt cache keeps working. The results out of the prompt are then replaced by the
renderer's one-line stubs (:func:`veil.context.window.render`, without collapsing: every result
keeps its place and id), and nothing else in the request changes (:func:`~veil.proxy.wire.splice`).

The provider's reported usage calibrates the count (:meth:`Conversations.reported`), and each
request's figures — what it would have cost, what was sent, what the provider read from and
wrote to its cache — are recorded on the tape as ``proxy.request`` events.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from veil.clock import Clock, SystemClock
from veil.context import ContextConfig, ContextEngine
from veil.context.prefix import shared_prefix
from veil.context.transcript import Transcript
from veil.context.window import Entry, Part
from veil.embed import Embedder
from veil.proxy.events import REQUEST, RequestForwarded
from veil.proxy.tools import EXPAND_TOOLS, describe
from veil.proxy.wire import Request, Spliced, Splicer, dumps
from veil.tape import Store
from veil.tape.recorder import Recorder
from veil.tokens import estimate_tokens

EXPAND_HINT = "expand (Veil's MCP tool) with"
"""How a stub in a proxied request says to restore it: Claude Code names the tool
``mcp__veil__expand``, Codex ``expand`` in the ``mcp__veil`` namespace."""


TARGET_FILL = 0.7
"""A batch of evictions leaves the conversation at this share of its budget: room for many
requests before the next batch (each batch changes the prefix the provider caches)."""


@dataclass(frozen=True)
class Prepared:
    """A request as it is forwarded, and what it costs."""

    body: bytes
    conversation: str
    tokens_before: int
    """Estimated tokens of the request as the client sent it."""
    tokens_sent: int
    stubbed: int
    """Results sent as stubs (or excerpts)."""
    evicted: int
    """Items this request's turn boundary moved out of the prompt (0: no boundary)."""
    exact: bool
    seconds: float


class Conversation:
    """One conversation's engine and transcript (used under its lock)."""

    def __init__(self, engine: ContextEngine) -> None:
        self.engine = engine
        self.transcript = Transcript(
            engine, turns=False, expand_tools=EXPAND_TOOLS, describe=describe
        )
        self.lock = threading.Lock()
        self.held: set[str] = set()
        """Items pinned for one request: the ones the model just expanded."""
        self.counted: list[Entry] = []
        self.sums: list[int] = [0]
        """The last request's entries, and the tokens of the first ``i`` of them as the client
        sent them (a conversation only grows: the same entries are not counted again)."""
        self.parts: list[Part] = []
        self.stubs: list[tuple[int, int, str]] = []
        """The last rendering's parts, and (part index, result index, text) of every result
        not shown as sent, in order."""
        self.fixed: tuple[list[Any], int] = ([], 0)
        """The last request's system prompt and tool schemas, and their tokens."""
        self.splicer = Splicer()

    def tokens_of(self, entries: list[Entry]) -> int:
        """What ``entries`` cost as the client sent them (text and calls, nothing stubbed)."""
        same = shared_prefix(entries, self.counted)
        sums = self.sums[: same + 1]
        for entry in entries[same:]:
            sums.append(sums[-1] + self.engine.count_tokens(entry.text) + entry.extra_tokens)
        self.counted, self.sums = list(entries), sums
        return sums[-1]

    def stubbed(self, parts: Sequence[Part], result_of: Mapping[int, int]) -> dict[int, str]:
        """Result index → the text it is sent as, for every result not shown as sent (the
        parts the last rendering had are not looked at again)."""
        same = shared_prefix(parts, self.parts)
        stubs = self.stubs[: bisect.bisect_left(self.stubs, (same, -1, ""))]
        for index in range(same, len(parts)):
            part = parts[index]
            if part.entry is not None and part.kind != "shown" and part.entry in result_of:
                stubs.append((index, result_of[part.entry], part.text))
        self.parts, self.stubs = list(parts), stubs
        return {result: text for _, result, text in stubs}


class Conversations:
    """Every conversation the proxy has seen, by :func:`~veil.proxy.wire.conversation_key`."""

    def __init__(
        self,
        store: Store,
        *,
        scope: str,
        root: Path | None,
        window: int,
        clock: Clock | None = None,
        config: ContextConfig | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.scope = scope
        self.root = root
        self.clock: Clock = clock or SystemClock()
        self.config = replace(
            config or ContextConfig(),
            window_tokens=window,
            reserve_tokens=min(16_000, window // 8),
            target_fill=TARGET_FILL,
            expand_tool=EXPAND_HINT,
        )
        self._by_key: dict[str, Conversation] = {}
        self._lock = threading.Lock()
        self._recorder = Recorder(store, scope=scope, actor="veil-proxy", clock=self.clock)

    def known(self, request: Request) -> Conversation | None:
        """The conversation ``request`` continues, if the proxy has seen it: by its key, or
        (a ``count_tokens`` request carries no session) by its first message alone."""
        with self._lock:
            found = self._by_key.get(request.key)
            if found is not None:
                return found
            digest = request.key.rsplit(":", 1)[-1]
            matches = [c for k, c in self._by_key.items() if k.rsplit(":", 1)[-1] == digest]
            return matches[-1] if matches else None

    def conversation(self, request: Request) -> Conversation:
        with self._lock:
            known = self._by_key.get(request.key)
            if known is not None:
                return known
            session = "proxy-" + hashlib.sha256(request.key.encode()).hexdigest()[:16]
            engine = ContextEngine(
                self.store,
                session_id=session,
                scope=self.scope,
                config=self.config,
                clock=self.clock,
                project_root=self.root,
                embedder=self.embedder,
                deferred=True,
            )
            task = next((f.text for f in request.found if f.role == "user"), "")
            if task:
                engine.set_task(task[:4000])
            conversation = self._by_key[request.key] = Conversation(engine)
            return conversation

    def prepare(
        self,
        request: Request,
        raw: bytes,
        *,
        squeeze: float = 1.0,
        conversation: Conversation | None = None,
    ) -> Prepared:
        """The request to forward (see the module docstring). ``squeeze`` < 1: the provider
        refused the request as too long — a boundary at that share of the budget, now.
        ``conversation``: the one to use (default: the request's own, made if new)."""
        start = time.perf_counter()
        conversation = conversation or self.conversation(request)
        with conversation.lock:
            engine = conversation.engine
            entries = conversation.transcript.entries(request.found)
            for item_id in conversation.held:  # last request's expansions: scored as usual
                engine.unpin(item_id)
            # What the model has not read yet — the results after its last message, an
            # expansion it just asked for among them — stays in view for this request.
            conversation.held = {
                e.item
                for e in entries[_last_assistant(request) + 1 :]
                if e.role == "tool" and e.item
            }
            for item_id in conversation.held:
                engine.pin(item_id)
            fixed = self._fixed_tokens(request, conversation)
            engine.overhead_tokens = fixed
            rendered = engine.render(entries, collapse=False, tail=False)
            before = fixed + conversation.tokens_of(entries)
            evicted = 0
            if squeeze < 1.0 or rendered.tokens > engine.budget:
                # a batch: the budget lowered to TARGET_FILL of itself (or to ``squeeze`` after an
                # overflow), and the engine evicts down to its own target fill of that (the same
                # TARGET_FILL): about half the budget, so that many requests fit as they are and
                # the cached prefix holds between batches
                share = min(squeeze, TARGET_FILL)
                squeezed = fixed + int(engine.budget * (1.0 - share))
                boundary = engine.window(entries, fixed_tokens=squeezed, collapse=False, tail=False)
                rendered = boundary.rendered
                evicted = sum(1 for m in boundary.report.moves if m.to != "live")
            result_of = {r.entry: r.index for r in request.results}
            texts = conversation.stubbed(rendered.parts, result_of)
            spliced: Spliced = conversation.splicer.splice(request, raw, texts)
            sent = fixed + rendered.tokens
        engine.persist_in_background()
        return Prepared(
            spliced.body,
            engine.session_id,
            before,
            sent,
            len(texts),
            evicted,
            spliced.exact,
            time.perf_counter() - start,
        )

    def _fixed_tokens(self, request: Request, conversation: Conversation) -> int:
        """What the request carries besides its conversation: the system prompt and the tool
        schemas (counted again only when they change)."""
        body = request.body
        fixed: list[Any] = [body.get(k) for k in ("system", "tools", "instructions") if k in body]
        if fixed == conversation.fixed[0]:
            return conversation.fixed[1]
        tokens = estimate_tokens(dumps(fixed).decode()) if fixed else 0
        conversation.fixed = (fixed, tokens)
        return tokens

    def reported(self, prepared: Prepared, usage: Mapping[str, int], *, api: str) -> None:
        """The provider's usage for a forwarded request: calibrates the count and is recorded."""
        input_tokens = int(usage.get("input_tokens", 0))
        cache_read = int(usage.get("cache_read", 0))
        cache_write = int(usage.get("cache_write", 0))
        total = input_tokens + cache_read + cache_write if api == "anthropic" else input_tokens
        with self._lock:
            conversation = next(
                (c for c in self._by_key.values() if c.engine.session_id == prepared.conversation),
                None,
            )
        if conversation is not None and total > 0:
            with conversation.lock:
                conversation.engine.calibrate(total, prepared.tokens_sent)
        self.record(prepared, {"input_tokens": total, "cache_read": cache_read,
                               "cache_write": cache_write})  # fmt: skip

    def record(self, prepared: Prepared, usage: Mapping[str, int] | None = None) -> None:
        payload = RequestForwarded(
            conversation=prepared.conversation,
            tokens_before=prepared.tokens_before,
            tokens_sent=prepared.tokens_sent,
            stubbed=prepared.stubbed,
            evicted=prepared.evicted,
            exact=prepared.exact,
            overhead_ms=round(prepared.seconds * 1000, 3),
            usage=None if usage is None else {k: int(v) for k, v in usage.items()},
        )
        # the figures are a record, never a reason to fail a request
        with contextlib.suppress(Exception):
            self._recorder.record(REQUEST, payload)

    def close(self) -> None:
        with self._lock:
            for conversation in self._by_key.values():
                with conversation.lock:
                    conversation.engine.close()
            self._by_key.clear()


def _last_assistant(request: Request) -> int:
    found = request.found
    for index in range(len(found) - 1, -1, -1):
        if found[index].role == "assistant":
            return index
    return -1
