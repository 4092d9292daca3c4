"""Working memory for the conversations passing through the proxy: one context engine per
conversation, on the project's ``.veil/context.db``.

For each request (:meth:`Conversations.prepare`) the conversation's messages become the
context layer's entries (:class:`~veil.context.transcript.Transcript`: a result it has not seen
is captured, with what its call addressed from :mod:`veil.proxy.tools`; an expansion by Veil's
MCP ``expand`` tool is a restore) and the engine takes the request's turn boundary
(:meth:`~veil.context.ContextEngine.window`): the request is measured as it would be sent, and
only when it is over the budget does a batch run — by score, deep enough to pay for the
provider's prompt cache it breaks, deeper when the cache has expired since the conversation's
last request (:mod:`veil.context.batching`) — so that between two batches every request's
prefix is byte-stable. The results after the last assistant message (the model has not read
them) are never touched. The results out of the prompt are then replaced by the renderer's
one-line stubs (without collapsing: every result keeps its place and id), each the same bytes
in every later request, and nothing else in the request changes
(:func:`~veil.proxy.wire.splice`).

When the conversation is over its budget and no batch of results can meet it, old tool
inputs may be elided instead (:mod:`veil.proxy.elision`, the rules :mod:`veil.proxy.inputs`'):
the engine counts every input whole, so what the elided ones save is taken out of what the
request carries besides the conversation.

The provider's reported usage calibrates the count (:meth:`Conversations.reported`), and each
request's figures — what it would have cost, what was sent, what the provider read from and
wrote to its cache — are recorded on the tape as ``proxy.request`` events.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from veil.clock import Clock, SystemClock
from veil.context import ContextConfig, ContextEngine
from veil.context.budget import after_overflow, request_budget
from veil.dialects import DIALECTS, Api
from veil.dialects.overflow import overflow_limits
from veil.embed import Embedder
from veil.proxy.conversation import Conversation, Measured
from veil.proxy.events import REQUEST
from veil.proxy.inputs import Elision, apply
from veil.proxy.prepared import Pending, Prepared, forwarded_event
from veil.proxy.wire import (
    Request,
    Spliced,
    common_prefix,
    dumps,
    expand_tool,
)
from veil.tape import Store
from veil.tape.recorder import Recorder
from veil.tokens import estimate_tokens

Budgets = Callable[[str], int]
"""A model's request budget (the whole request, in the provider's tokens), by its name."""
ExpandName = Callable[[Request], str | None]
"""The expand tool as a conversation's agent sees it (None: it has none), from its request."""


class Conversations:
    """Every conversation the proxy has seen, by :func:`~veil.proxy.wire.conversation_key`.

    The request budget: ``budget`` when given, else ``window`` less the reply's reserve
    (:func:`veil.context.budget.request_budget`), else ``budgets(model)`` for the model each
    request names; a provider that refuses a request as too long lowers it for that model
    (:meth:`overflowed`). ``expand``: how a stub names the expand tool (default: read from
    the request's tools, :func:`~veil.proxy.wire.expand_tool`)."""

    def __init__(
        self,
        store: Store,
        *,
        scope: str,
        root: Path | None,
        window: int | None,
        clock: Clock | None = None,
        config: ContextConfig | None = None,
        embedder: Embedder | None = None,
        budget: int | None = None,
        budgets: Budgets | None = None,
        expand: ExpandName | None = None,
        host: str | None = None,
        shadow: bool = False,
        compaction_markers: Sequence[str] = (),
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.scope = scope
        self.root = root
        self.clock: Clock = clock or SystemClock()
        self.config = config or ContextConfig()
        if budget is None and window is None and budgets is None:
            raise ValueError("Conversations needs a window, a budget or budgets by model")
        self.budget = budget
        self.window = window
        self.budgets = budgets
        self.expand: ExpandName = expand or _offered_expand
        self.host = host
        self.shadow = shadow
        """Measure only: every request is forwarded as the agent sent it."""
        self.compaction_markers = tuple(compaction_markers)
        """Texts by which the agent's own compaction request is known (its last user message)."""
        self._learned: dict[str, int] = {}
        """Per model: the budget an overflow error taught (lower than the table's)."""
        self._by_key: dict[str, Conversation] = {}
        self._lock = threading.Lock()
        self._recorder = Recorder(store, scope=scope, actor="veil-proxy", clock=self.clock)

    def budget_for(self, model: str) -> int:
        """The request budget of a request naming ``model`` (see the class docstring)."""
        if self.budget is not None:
            found = self.budget
        elif self.window is not None:
            found = request_budget(self.window)
        else:
            assert self.budgets is not None
            found = self.budgets(model)
        learned = self._learned.get(model)
        return min(found, learned) if learned is not None else found

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
            config = replace(
                self.config,
                budget_tokens=self.budget_for(request.model),
                expand_tool=self.expand(request),
                stub_chars=0,  # the call, arguments and all, is sent right before its stub
            )
            engine = ContextEngine(
                self.store,
                session_id=session,
                scope=self.scope,
                config=config,
                clock=self.clock,
                project_root=self.root,
                embedder=self.embedder,
                deferred=True,
            )
            task = next((f.text for f in request.found if f.role == "user"), "")
            if task:
                engine.set_task(task[:4000])
            conversation = self._by_key[request.key] = Conversation(engine, self.root)
            return conversation

    def prepare(
        self,
        request: Request,
        raw: bytes,
        *,
        overflow: bool = False,
        conversation: Conversation | None = None,
        persist: bool = True,
        ahead: bool = False,
    ) -> Prepared:
        """The request to forward (see the module docstring). ``overflow``: the provider refused
        this request as too long (:meth:`overflowed` lowered the budget): a batch now, which may
        clip a result the model has not read. ``conversation``: the one to use (default: the
        request's own, made if new). ``persist``: start writing the conversation's new events
        to the tape on the writer thread now; a caller that passes False calls
        :meth:`persist` itself once the request is on its way (the proxy server: the writes
        then run while the provider answers, not while the request is being sent — in one
        process they take turns with the relay for the interpreter).

        ``ahead``: when nothing Veil keeps changes what the request is sent as, it goes ahead of
        its bookkeeping (:meth:`veil.proxy.conversation.Conversation.ahead`): the returned
        request is ``pending`` — its body is final, its figures are estimates — and its
        bookkeeping runs at :meth:`settle` (the proxy server: once the answer is relayed), or
        before anything else reads or changes the conversation."""
        start = time.perf_counter()
        conversation = conversation or self.conversation(request)
        with conversation.lock:
            self._catch_up(conversation)
            now = self.clock.now().timestamp()
            if ahead and not overflow:
                early = self._ahead(conversation, request, raw, start=start, now=now)
                if early is not None:
                    return early
            return self._prepared(
                conversation, request, raw, overflow=overflow, persist=persist, start=start,
                now=now,
            )  # fmt: skip

    def _ahead(
        self, conversation: Conversation, request: Request, raw: bytes, *, start: float, now: float
    ) -> Prepared | None:
        """``request`` forwarded ahead of its bookkeeping, if it may be (under the lock)."""
        budget = self.budget_for(request.model)
        fixed = self._fixed_tokens(request, conversation)
        compaction = self._is_compaction(request)
        found = conversation.ahead(request, raw, budget=budget, fixed=fixed, compaction=compaction)
        if found is None:
            return None
        spliced, grown, sent = found
        pending = Pending(conversation, request, raw, now, spliced.body)
        conversation.pending = pending
        engine = conversation.engine
        prepared = Prepared(
            raw if self.shadow else spliced.body,
            engine.session_id,
            conversation.sums[-1] + grown + fixed,
            sent + fixed - conversation.elided.saved,
            len(conversation.stubs),
            0,
            spliced.exact,
            time.perf_counter() - start,
            budget=engine.request_budget,
            model=request.model,
            results=len(request.results),
            shadow=self.shadow,
            agent_session=request.session,
            inputs_elided=len(conversation.elided.inputs),
            ahead=True,
            pending=pending,
        )
        pending.seconds = prepared.seconds
        return prepared

    def settle(self, prepared: Prepared) -> Prepared:
        """``prepared`` with its bookkeeping done, if it went ahead of it (else as it is): its
        figures are then the bookkeeping's, its body what was sent. Raises what the
        bookkeeping failed with (the conversation's next request then waits for its bookkeeping)."""
        pending = prepared.pending
        if pending is None:
            return prepared
        with pending.conversation.lock:
            self._catch_up(pending.conversation)
        if pending.error is not None:
            raise pending.error
        return pending.result if pending.result is not None else prepared

    def _settled(self, prepared: Prepared) -> Prepared:
        """:meth:`settle`, or ``prepared`` as it is when its bookkeeping failed."""
        try:
            return self.settle(prepared)
        except Exception:
            return prepared

    def _catch_up(self, conversation: Conversation) -> None:
        """The bookkeeping of the request that went ahead of it, if any (under the lock): the
        same as any request's, at the time it arrived; never raises (what it failed with is
        kept for :meth:`settle`)."""
        pending = conversation.pending
        if pending is None:
            return
        conversation.pending = None
        try:
            full = self._prepared(
                conversation, pending.request, pending.raw, overflow=False, persist=True,
                start=time.perf_counter(), now=pending.now,
            )  # fmt: skip
        except Exception as exc:
            conversation.measured = None
            pending.error = exc
            return
        diverged = conversation.last_sent != pending.body  # as Veil sends it, shadow or not
        pending.result = replace(
            full,
            body=pending.raw if full.shadow else pending.body,
            seconds=pending.seconds,
            ahead=True,
            diverged=diverged,
        )

    def _prepared(
        self,
        conversation: Conversation,
        request: Request,
        raw: bytes,
        *,
        overflow: bool,
        persist: bool,
        start: float,
        now: float,
    ) -> Prepared:
        """The bookkeeping of ``request`` and the body it is forwarded as (under the lock)."""
        engine = conversation.engine
        budget = self.budget_for(request.model)
        if engine.config.budget_tokens != budget:
            engine.config = replace(engine.config, budget_tokens=budget)
        fixed = self._fixed_tokens(request, conversation)
        room = engine.calibration.estimated(budget)
        if fixed >= room:  # no room for any conversation: nothing Veil does would fit
            note = (
                f"{engine.session_id}: the request's fixed part (system prompt and tools, "
                f"~{fixed:,} tokens) is over its budget ({budget:,}, model "
                f"{request.model or '?'}); forwarded unchanged — raise --window"
            )
            conversation.measured = None
            return Prepared(
                raw, engine.session_id, fixed, fixed, 0, 0, True, 0.0,
                budget=budget, model=request.model, note=note,
            )  # fmt: skip
        elided = conversation.elided
        elided.again(request)
        saved = elided.saved
        entries = conversation.transcript.entries(request.found)
        last, conversation.last_request = conversation.last_request, now
        ttl = DIALECTS[request.api].cache_ttl(request.body, raw)
        cold = last is not None and now - last > ttl
        before = fixed + conversation.tokens_of(entries)
        # The entries count every call's input whole; the inputs sent elided take what they
        # save out of what the request carries besides the conversation.
        boundary = engine.window(
            entries, fixed_tokens=fixed - saved, collapse=False, tail=False, cold=cold,
            overflow=overflow,
        )  # fmt: skip
        rendered = boundary.rendered
        report = boundary.report
        sent = fixed + rendered.tokens - saved
        texts = conversation.stubbed(rendered.parts, request.results)
        spliced: Spliced = conversation.splicer.splice(request, raw, texts)
        body, inputs_elided = elided.apply(spliced.body)
        new: list[Elision] = []
        if (report.pressure and not report.batch) or overflow:
            new = elided.more(
                request, body, sent=sent, before=before, room=room, cold=cold,
                overflow=overflow,
            )  # fmt: skip
            sent -= elided.saved - saved
        body, more = apply(body, new)
        inputs_elided += more
        inputs_new = len(new)
        spliced = replace(spliced, body=body)
        agent_cached = _shared_tokens(raw, conversation.last_raw, before)
        sent_cached = _shared_tokens(spliced.body, conversation.last_sent, sent)
        conversation.last_raw, conversation.last_sent = raw, spliced.body
        counts = (engine.expansions, engine.returns)
        expands, rereads = (a - b for a, b in zip(counts, conversation.counts, strict=True))
        conversation.counts = counts
        note = None
        unmet = report.pressure and not report.batch and not inputs_new
        if unmet and not conversation.unmet:  # said when the conversation gets there
            note = (
                f"{engine.session_id}: over its budget ({sent:,} of {room:,} tokens, as Veil "
                "estimates them) with every result it may evict as its "
                "stub — the agent's text, its recent tool inputs and the results the model "
                "has not read exceed it; forwarded with nothing more evicted (no batch can "
                "meet the budget, or eliding old tool inputs would not pay for the cache it "
                "breaks yet: the agent's own compaction can)"
            )
        conversation.unmet = unmet
        conversation.measured = (
            None
            if report.pressure and not report.batch
            else Measured(report.live_tokens_after, fixed, elided.saved, budget)
        )
        if persist:
            engine.persist_in_background()
        return Prepared(
            raw if self.shadow else spliced.body,
            engine.session_id,
            before,
            sent,
            len(texts),
            sum(1 for m in report.moves if m.to != "live"),
            spliced.exact,
            time.perf_counter() - start,
            batch=report.batch or inputs_new > 0,
            cold=report.cold,
            unmet=unmet,
            budget=engine.request_budget,
            model=request.model,
            note=note,
            agent_cached=agent_cached,
            sent_cached=sent_cached,
            results=len(request.results),
            expands=expands,
            rereads=rereads,
            compaction=self._is_compaction(request),
            shadow=self.shadow,
            ttl="1h" if ttl >= 3600 else "5m",
            agent_session=request.session,
            inputs_elided=inputs_elided,
            inputs_new=inputs_new,
        )

    def _is_compaction(self, request: Request) -> bool:
        """The agent's own compaction request: its last user message carries one of the
        agent's compaction texts."""
        for found in reversed(request.found):
            if found.role == "assistant":
                return False
            if found.role == "user":
                return any(marker in found.text for marker in self.compaction_markers)
        return False

    def overflowed(self, prepared: Prepared, error: str) -> None:
        """The provider refused ``prepared`` as too long (``error`` is what it said): the
        model's budget becomes what that implies (:func:`veil.context.budget.after_overflow`),
        for this conversation and every later one on that model. A request that went ahead of
        its bookkeeping is settled first (its figures are then the bookkeeping's)."""
        prepared = self._settled(prepared)
        limit, reported = overflow_limits(error)
        budget = after_overflow(
            self.budget_for(prepared.model), reported or prepared.tokens_sent, limit
        )
        with self._lock:
            self._learned[prepared.model] = budget

    def _fixed_tokens(self, request: Request, conversation: Conversation) -> int:
        """What the request carries besides its conversation: the system prompt and the tool
        schemas (its dialect's :attr:`~veil.dialects.base.Dialect.fixed_keys`; counted again
        only when they change)."""
        body = request.body
        keys = DIALECTS[request.api].fixed_keys
        fixed: list[Any] = [body.get(k) for k in keys if k in body]
        if fixed == conversation.fixed[0]:
            return conversation.fixed[1]
        tokens = estimate_tokens(dumps(fixed).decode()) if fixed else 0
        conversation.fixed = (fixed, tokens)
        return tokens

    def persist(self, prepared: Prepared) -> None:
        """Start writing ``prepared``'s conversation's new events on its writer thread (see
        :meth:`prepare`'s ``persist``). Raises what an earlier write of the conversation failed
        with (its events are kept and written by the next one)."""
        conversation = self._of(prepared)
        if conversation is not None:
            with conversation.lock:
                conversation.engine.persist_in_background()

    def _of(self, prepared: Prepared) -> Conversation | None:
        with self._lock:
            return next(
                (c for c in self._by_key.values() if c.engine.session_id == prepared.conversation),
                None,
            )

    def reported(
        self,
        prepared: Prepared,
        usage: Mapping[str, int],
        *,
        api: str,
        billing: str | None = None,
    ) -> None:
        """The provider's usage for a forwarded request, as the dialect of ``api`` reads it
        (:data:`~veil.dialects.base.USAGE_FIGURES`): calibrates the count (not in shadow mode,
        where the request forwarded is not Veil's) and is recorded, ``input_tokens`` as every
        input token (:meth:`~veil.dialects.base.Dialect.prompt_tokens`). A request that went
        ahead of its bookkeeping is settled first."""
        prepared = self._settled(prepared)
        cache_read = int(usage.get("cache_read", 0))
        cache_write = int(usage.get("cache_write", 0))
        output = int(usage.get("output_tokens", 0))
        dialect = DIALECTS.get(cast(Api, api))
        total = dialect.prompt_tokens(usage) if dialect else int(usage.get("input_tokens", 0))
        conversation = self._of(prepared)
        if conversation is not None and total > 0:
            estimated = prepared.tokens_before if prepared.shadow else prepared.tokens_sent
            with conversation.lock:
                conversation.engine.calibrate(total, estimated)
        figures = {"input_tokens": total, "cache_read": cache_read, "cache_write": cache_write,
                   "output_tokens": output}  # fmt: skip
        self.record(prepared, figures, billing)

    def record(
        self,
        prepared: Prepared,
        usage: Mapping[str, int] | None = None,
        billing: str | None = None,
    ) -> None:
        """``prepared``'s figures on the tape as a ``proxy.request`` event, with the provider's
        ``usage`` when it reported it and how the agent pays (``billing``: ``api`` for a key,
        ``subscription`` for a login that is not billed per token). A request that went
        ahead of its bookkeeping is settled first."""
        prepared = self._settled(prepared)
        payload = forwarded_event(prepared, usage=usage, host=self.host, billing=billing)
        # the figures are a record, never a reason to fail a request; the provenance names the
        # conversation's session, so that `veil sessions rm` erases them with it
        recorder = replace(self._recorder, provenance={"session_id": prepared.conversation})
        with contextlib.suppress(Exception):
            recorder.record(REQUEST, payload)

    def close(self) -> None:
        with self._lock:
            for conversation in self._by_key.values():
                with conversation.lock:
                    self._catch_up(conversation)
                    conversation.engine.close()
            self._by_key.clear()


def _shared_tokens(now: bytes, before: bytes, tokens: int) -> int:
    """Estimated tokens of ``now``'s start that repeat ``before`` (``tokens`` in all): its
    shared bytes' share of the whole."""
    if not before or not now:
        return 0
    return int(tokens * common_prefix(now, before) / len(now))


def _offered_expand(request: Request) -> str | None:
    """The expand tool the request offers its model (the default of ``expand``)."""
    return expand_tool(request.api, request.body)


__all__ = ["Conversation", "Conversations", "Pending", "Prepared"]
"""``Prepared`` and ``Conversation`` live in :mod:`veil.proxy.prepared` and
:mod:`veil.proxy.conversation`; they are named here too, where evaluators have always found
them (SPEC §12)."""
