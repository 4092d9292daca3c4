"""One conversation's elided tool inputs, as the proxy keeps them between requests: which calls,
the bytes each is sent as, what they save, and the items holding the whole inputs.

The rules of what may be elided and how it reads are :mod:`veil.proxy.inputs`' (pure); this
module is their state and their I/O: a batch of elisions (:meth:`ElidedInputs.more`) runs when
the conversation is over its budget and no batch of results could meet it, and only when it gets
the request within the budget and pays for the cache it rewrites (the batch rule of
:mod:`veil.context.batching`); each input it elides becomes a ``message`` item out of the prompt
(:meth:`veil.context.ContextEngine.set_aside`, target ``input:<call id>``) whose pointer the
marker carries, so ``expand`` returns the whole input and a restarted proxy finds what it elided
(:meth:`ElidedInputs.again`) and sends the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from veil.context import ContextEngine
from veil.context.batching import Pressure, depth, model_requests
from veil.context.transcript import Addressed, Call
from veil.dialects import DIALECTS, InputAt
from veil.dialects.base import json_array
from veil.proxy.inputs import (
    Elision,
    apply,
    candidates,
    elision,
    first_elided,
    places,
    positions,
    whole_text,
)
from veil.proxy.wire import Request

INPUT_TARGET = "input:"
"""The target of an item holding an elided tool input, before its call's id."""
MIN_SAVING = 1_000
"""Tokens a batch of elisions must at least take out of every request: less is not worth a
rewrite of the provider's cache."""
SIZING_POINTER = "veil://warm/ci_" + "0" * 32
"""A pointer as long as an item's, to size an elision before its item exists."""


class ElidedInputs:
    """The inputs one conversation sends elided (used under the conversation's lock)."""

    def __init__(self, engine: ContextEngine, describe: Callable[[Call], Addressed]) -> None:
        self.engine = engine
        self.describe = describe
        self.inputs: dict[str, Elision] = {}
        """By call id."""
        self.saved = 0
        """Tokens the elided inputs take out of every request."""
        self.aside: dict[str, str] = {
            item.target[len(INPUT_TARGET) :]: item.stub_pointer
            for item in engine.items()
            if item.kind == "message" and item.target and item.target.startswith(INPUT_TARGET)
        }
        """Call id → the pointer of the item holding its whole input, for every input this
        conversation elided (read back from the store)."""
        self._sized: dict[str, tuple[Elision, int] | None] = {}
        """Call id → its input elided with a stand-in pointer and the tokens that saves (None:
        nothing to elide). A call's input never changes: while the conversation is over its
        budget every request weighs the same candidates again."""
        self._writes: dict[str, str | None] = {}
        """Call id → the file it writes (as ``describe`` says), remembered for the same reason."""

    def apply(self, body: bytes) -> tuple[bytes, int]:
        """``body`` with every input elided so far in place of the whole one, and how many
        were found (:func:`veil.proxy.inputs.apply`)."""
        return apply(body, list(self.inputs.values()))

    def waiting(self) -> list[str]:
        """The calls whose inputs this conversation elided before the proxy restarted and that
        are not found again yet (:meth:`again` looks for them in the next request)."""
        return [c for c in self.aside if c not in self.inputs]

    def again(self, request: Request) -> None:
        """Inputs this conversation elided before the proxy restarted (their items are in the
        store) are elided again, with the same pointers: the same bytes as before."""
        pending = self.waiting()
        if not pending:
            return
        ats = inputs_at(request)
        order = places(request.found)
        expand = self.engine.config.expand_tool
        for call_id in pending:
            at = ats.get(call_id)
            if at is not None and call_id in order:
                self._add(elision(at, order[call_id], self.aside[call_id], expand))

    def more(
        self,
        request: Request,
        body: bytes,
        *,
        sent: int,
        before: int,
        room: int,
        cold: bool,
        overflow: bool,
    ) -> list[Elision]:
        """The request (``body``, ``sent`` estimated tokens, ``before`` as the agent sent it,
        ``room`` its budget) is over its
        budget and no batch of results could meet it: a batch of old tool inputs elided, when
        one gets the request within its budget with room for the next requests' growth (down
        to the batch rule's depth when the candidates can), so that the next batch is not the
        next request, and pays for the cache
        it rewrites (the rule's break-even, :func:`veil.context.batching.depth`, over what
        follows its first elided input; a cold cache costs nothing to rewrite). The latest start
        that does (:func:`~veil.proxy.inputs.first_elided`); after the provider refused the
        request as too long, every candidate. A batch that cannot meet the budget or pay does
        not run, as no batch of results does. Returns the batch's elisions (already kept: the
        caller applies them to ``body``)."""
        ats = inputs_at(request)
        if not ats:
            return []
        engine = self.engine
        found = candidates(
            request.found, ats, self.inputs, self._describe, lambda at: self._size(at) is not None
        )
        sized: list[tuple[Elision, int, InputAt]] = []
        for place, at in found:
            size = self._size(at)
            if size is not None:
                sized.append((replace(size[0], order=place), size[1], at))
        at_byte = positions(body, [e for e, _, _ in sized])
        made = [(e, at, p) for (e, _, at), p in zip(sized, at_byte, strict=True) if p is not None]
        if not made:
            return []
        saving_of = {e.call_id: float(n) for e, n, _ in sized}
        savings = [saving_of[e.call_id] for e, _, _ in made]
        if overflow:
            start: int | None = 0
        else:
            requests = model_requests([f.role for f in request.found])
            rule = engine.config.batch
            goal = depth(Pressure(sent, room, requests, cold), rule)
            # what follows each candidate is rewritten: its share of the request's bytes
            suffixes = [sent * (len(body) - p) / len(body) for _, _, p in made]
            deep = sent - goal.fit
            # at least room for the next requests' growth (the conversation as the agent sends
            # it grows by its mean per request): else the next request batches again
            headroom = min(rule.headroom_requests * before / requests, room / 2)
            need = deep if sum(savings) >= deep else sent - room + headroom
            start = first_elided(savings, suffixes, need=need, factor=goal.factor)
        if start is None or sum(savings[start:]) < MIN_SAVING:
            return []
        expand = engine.config.expand_tool
        new: list[Elision] = []
        for e, at, _ in made[start:]:
            item = engine.set_aside(
                whole_text(at),
                target=INPUT_TARGET + at.call_id,
                reason="tool input elided: the results alone could not meet the budget",
            )
            self.aside[at.call_id] = item.stub_pointer
            done = elision(at, e.order, item.stub_pointer, expand)
            if done is not None and self._add(done):
                new.append(done)
        return new

    def _size(self, at: InputAt) -> tuple[Elision, int] | None:
        """``at``'s input elided with a stand-in pointer as long as an item's, and the tokens
        that saves; None when it has nothing to elide (remembered per call)."""
        if at.call_id not in self._sized:
            e = elision(at, (0, 0), SIZING_POINTER, None)
            self._sized[at.call_id] = None if e is None else (e, self._saving(e))
        return self._sized[at.call_id]

    def _describe(self, call: Call) -> Addressed:
        """What ``call`` writes, as ``describe`` says (remembered per call: the rest is not
        read here)."""
        if call.id not in self._writes:
            self._writes[call.id] = self.describe(call).writes
        return Addressed(writes=self._writes[call.id])

    def _add(self, e: Elision | None) -> bool:
        if e is None or e.call_id in self.inputs:
            return False
        self.inputs[e.call_id] = e
        self.saved += self._saving(e)
        return True

    def _saving(self, e: Elision) -> int:
        """Tokens ``e`` takes out of a request."""
        count = self.engine.count_tokens
        before = count(e.before.decode("utf-8", "replace"))
        return max(0, before - count(e.after.decode("utf-8", "replace")))


def inputs_at(request: Request) -> dict[str, InputAt]:
    """Where each tool call's input is in the request's body, by call id."""
    dialect = DIALECTS[request.api]
    items = json_array(request.body.get(dialect.messages_key))
    paired = dialect.call_inputs_in
    if paired is not None:
        return {at.call_id: at for index in range(len(items)) for at in paired(items, index)}
    return {at.call_id: at for item in items for at in dialect.call_inputs(item)}


__all__ = ["INPUT_TARGET", "MIN_SAVING", "ElidedInputs", "inputs_at"]
