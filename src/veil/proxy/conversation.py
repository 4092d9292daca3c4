"""One conversation the proxy keeps: its engine, its transcript, what its last request was
sent as — and whether a new request may go out ahead of Veil's bookkeeping.

**Ahead of the bookkeeping.** Between two batches a request is the last one's bytes, the same
stubs, and what is new at its end, and nothing Veil keeps changes what it is sent as: the new
results are unread (never evicted) and the conversation is under its budget (no batch). Such a
request needs no capture, scoring or rendering before it is forwarded, only the stubs already
sent spliced in again: :meth:`Conversation.ahead` says when that is so and gives the body; the
bookkeeping — the same :meth:`~veil.proxy.session.Conversations.prepare` every other request
gets — runs once the answer has been relayed (:meth:`~veil.proxy.session.Conversations.settle`),
while the agent runs its tools and its model thinks, and must come to the same bytes (it is
checked: a difference is logged and counted, never hidden).

A request goes ahead only when all of these hold, else it waits for the bookkeeping as before:
the conversation has been prepared before and was not over its budget; it is the same model
budget, system prompt and tools; the request starts with every message the last one had (only
messages were added); no new message calls Veil's expand or answers such a call (a restore
changes what the prompt shows), none is Veil's own stub; no elided input is waiting to be found
again; and what is new keeps the conversation :data:`AHEAD_MARGIN` of its budget below it, so
that the bookkeeping's own count, made afterwards, cannot find a batch due.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veil.context import ContextEngine
from veil.context.prefix import shared_prefix
from veil.context.transcript import Transcript
from veil.context.window import Entry, Part
from veil.proxy.elision import ElidedInputs
from veil.proxy.tools import EXPAND_TOOLS, describer
from veil.proxy.wire import Request, Result, Spliced, Splicer

if TYPE_CHECKING:
    from veil.proxy.prepared import Pending

AHEAD_MARGIN = 0.03
"""A request goes ahead of its bookkeeping only when the conversation, with what is new, stays
this share of its budget under it: the bookkeeping renders what is new and may measure a little
more than its plain count (a secret redacted in an item, a result in a second place)."""


@dataclass(frozen=True)
class Measured:
    """What the last bookkeeping measured of the conversation, for the next request's
    :meth:`Conversation.ahead`."""

    conversation: int
    """The conversation's tokens as it was sent (stubs and all), in estimated tokens."""
    fixed: int
    """The request's fixed part (system prompt and tools) as counted then."""
    saved: int
    """What the inputs sent elided saved then."""
    budget: int
    """The request budget then (the provider's tokens)."""


class Conversation:
    """One conversation's engine and transcript (used under its lock)."""

    def __init__(self, engine: ContextEngine, root: Path | None) -> None:
        self.engine = engine
        # what a call addresses, as the hooks say it: paths relative to the project's root
        self.transcript = Transcript(
            engine, turns=False, expand_tools=EXPAND_TOOLS, describe=describer(root)
        )
        self.lock = threading.Lock()
        self.last_request: float | None = None
        """When the last request was prepared (wall clock, seconds): a longer gap than the
        provider's cache lifetime means the cache is cold."""
        self.last_raw = b""
        self.last_sent = b""
        """The previous request as the agent sent it, and as it was (or would be) forwarded."""
        self.counts: tuple[int, int] = (0, 0)
        """The engine's expansions and returns as of the previous request."""
        self.counted: list[Entry] = []
        self.sums: list[int] = [0]
        """The last request's entries, and the tokens of the first ``i`` of them as the client
        sent them (a conversation only grows: the same entries are not counted again)."""
        self.parts: list[Part] = []
        self.stubs: list[tuple[int, int, str]] = []
        """The last rendering's parts, and (part index, result index, text) of every result
        not shown as sent, in order."""
        self.texts: Mapping[int, str] = {}
        """The same stubs by result index: one object while they do not change (the splicer
        then reuses its last output up to the new bytes without comparing them again)."""
        self.fixed: tuple[list[Any], int] = ([], 0)
        """The last request's system prompt and tool schemas, and their tokens."""
        self.splicer = Splicer()
        self.unmet = False
        """The last request was over its budget and no batch could meet it."""
        self.elided = ElidedInputs(engine, describer(root))
        """The old tool inputs it sends elided (:mod:`veil.proxy.elision`)."""
        self.measured: Measured | None = None
        """What the last bookkeeping measured (None: nothing yet, or over its budget)."""
        self.pending: Pending | None = None
        """A request forwarded ahead of its bookkeeping, not settled yet (the session's)."""

    def ahead(
        self, request: Request, raw: bytes, *, budget: int, fixed: int, compaction: bool
    ) -> tuple[Spliced, int, int] | None:
        """``request`` as it is forwarded ahead of its bookkeeping, what is new in it and the
        conversation as sent with it (estimated tokens), or None when it must wait for its
        bookkeeping (see the module docstring). ``budget`` and ``fixed``: its request budget and
        fixed part, as the bookkeeping counts them."""
        measured = self.measured
        if measured is None or compaction or self.unmet:
            return None
        elided = self.elided
        if (measured.budget, measured.fixed, measured.saved) != (budget, fixed, elided.saved):
            return None
        new = self.transcript.unseen(request.found)
        if new is None or elided.waiting() or self.transcript.expands(new):
            return None
        if any(m.item is not None or m.restores for m in new):
            return None
        grown = self.transcript.cost(new)
        room = self.engine.calibration.estimated(budget) - (fixed - elided.saved)
        if measured.conversation + grown > room - int(AHEAD_MARGIN * room):
            return None
        spliced = self.splicer.splice(request, raw, self.texts)
        body, _ = elided.apply(spliced.body)
        return replace(spliced, body=body), grown, measured.conversation + grown

    def tokens_of(self, entries: list[Entry]) -> int:
        """What ``entries`` cost as the client sent them (text and calls, nothing stubbed)."""
        same = shared_prefix(entries, self.counted)
        sums = self.sums[: same + 1]
        for entry in entries[same:]:
            sums.append(sums[-1] + self.engine.count_tokens(entry.text) + entry.extra_tokens)
        self.counted, self.sums = list(entries), sums
        return sums[-1]

    def stubbed(self, parts: Sequence[Part], results: Sequence[Result]) -> Mapping[int, str]:
        """Result index → the text it is sent as, for every result not shown as sent (the
        parts the last rendering had are not looked at again). ``results`` are in entry order:
        a part's result is found by bisection, not by indexing every result per request."""
        same = shared_prefix(parts, self.parts)
        stubs = self.stubs[: bisect.bisect_left(self.stubs, (same, -1, ""))]
        for index in range(same, len(parts)):
            part = parts[index]
            if part.entry is None or part.kind == "shown":
                continue
            at = bisect.bisect_left(results, part.entry, key=_entry_of)
            if at < len(results) and results[at].entry == part.entry:
                stubs.append((index, results[at].index, part.text))
        if stubs != self.stubs:
            self.texts = {result: text for _, result, text in stubs}
        self.parts, self.stubs = list(parts), stubs
        return self.texts


def _entry_of(result: Result) -> int:
    return result.entry
