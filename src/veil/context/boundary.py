"""The turn boundary: where working memory decides what the next request carries.

Once per request, :meth:`TurnBoundary.window` renders the conversation as the model will see it
(:mod:`veil.context.window`) and, only when it is over the budget, runs a batch: the three
eviction stages (:func:`veil.context.pressure.evict`) down to the depth the cache-aware batch
rule asks (:mod:`veil.context.batching`), then renders again. Either way the AIMD threshold
moves. The rendering is the truth: when a batch's rendering costs more than the working set
planned for (an item's stub in two places, results with no item, missing results), the
difference corrects the plan and window pressure runs again, at most twice, before the request
goes out. The results after the conversation's last assistant message are unread: nothing ever
moves them (only an overflow retry clips one too large to fit).

:class:`TurnBoundary` is the part of :class:`~veil.context.engine.ContextEngine` that does it,
over the session's :class:`~veil.context.working_memory.WorkingMemory`: every move goes through
its :meth:`~veil.context.working_memory.WorkingMemory.move`. It keeps what only the boundary
needs: where the last boundary was, the requests and batches counted, the renderer and the
manifest as of the last batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from veil.context import events
from veil.context.batching import Pressure, model_requests
from veil.context.batching import depth as batch_depth
from veil.context.config import ContextConfig
from veil.context.eviction import Bools, Depth, Move, Plan
from veil.context.items import ContextItem, Tier
from veil.context.pressure import evict
from veil.context.threshold import on_tick
from veil.context.window import Entry, Rendered, Renderer
from veil.context.working_memory import WorkingMemory
from veil.tokens import TokenMemo

TailMode = Literal["manifest", "notes", "none"]


def _tail_mode(tail: bool | TailMode) -> TailMode:
    if tail is True:
        return "manifest"
    if tail is False:
        return "none"
    return tail


@dataclass(frozen=True)
class EvictionReport:
    tick: int
    moves: tuple[Move, ...]
    threshold_before: float
    threshold_after: float
    live_tokens_before: int
    live_tokens_after: int
    budget: int
    pressure: bool
    batch: bool = False
    """A batch ran: the prompt changed (stages 1 and 2 ran, down to the batch rule's depth)."""
    cold: bool = False
    """It ran on a cold cache (the provider's cache of the conversation had expired)."""


@dataclass(frozen=True)
class Boundary:
    """A turn boundary as :meth:`TurnBoundary.window` ran it: what moved, and the request's
    conversation as the model will see it (``rendered.tokens`` in estimated tokens; the
    report's ``live_tokens_after`` is the same count without the tail)."""

    report: EvictionReport
    rendered: Rendered


class TurnBoundary:
    """Stepping and rendering over ``memory`` (see the module docstring). ``deferred``: a
    boundary leaves its events buffered for
    :meth:`~veil.context.working_memory.WorkingMemory.persist_in_background` instead of
    flushing them."""

    def __init__(self, memory: WorkingMemory, *, deferred: bool = False) -> None:
        self.memory = memory
        self.deferred = deferred
        self._boundary_tick = 0
        """The tick of the last step."""
        self._step_boundary = 0
        """The boundary before the last step: results captured after it were unread there."""
        self._unread = np.zeros(0, dtype=np.bool_)
        """The rows of the results unread at the current boundary."""
        self._requests = 0
        """Requests of the conversation so far (turn boundaries, or its assistant messages)."""
        self.batches = 0
        """Batches of evictions run so far."""
        self._manifest_text: tuple[int, str] | None = None
        """The manifest as of the last batch (and the open contradictions it counted)."""
        self._count = TokenMemo(memory.count_tokens)
        """The renderer's counter: the same counts, remembered for texts seen again."""
        self._renderer: Renderer | None = None
        self._rendered_config: ContextConfig | None = None
        """The configuration the renderer was made for (a new one: render everything)."""
        self._tail_tokens = 0

    def step(self, *, overhead_tokens: int | None = None, overflow: bool = False) -> EvictionReport:
        """A turn boundary over the working set alone (a caller that sends a transcript uses
        :meth:`window`, which knows what the request holds): a batch when the live items are
        over the budget, else nothing the prompt shows changes. Results captured since the
        previous boundary are unread. ``overflow``: the provider refused the request as too
        long — a batch now, which may clip an unread result too large to fit. Persisted unless
        deferred.

        ``overhead_tokens`` is what the next request costs besides the items (system prompt,
        manifest, tool schemas); the items' budget is the window minus the reserve minus it.
        Without it the last value given is kept."""
        memory = self.memory
        if overhead_tokens is not None:
            memory.overhead_tokens = max(0, int(overhead_tokens))
        if self._boundary_tick != memory.tick:  # a step again at the same tick: same unread
            self._step_boundary = self._boundary_tick
        self._requests += 1
        c = memory.working_set.cols
        unread = c.flag("result") & (c.view("created_tick") > self._step_boundary)
        live = memory.working_set.live_tokens()
        pressure = Pressure(live, memory.budget, self._requests, refused=overflow)
        return self._boundary(pressure, unread, batch=overflow or pressure.over, clip=overflow)

    def _boundary(
        self, pressure: Pressure, unread: Bools, *, batch: bool, clip: bool
    ) -> EvictionReport:
        """The turn boundary's decisions: a batch down to the batch rule's depth (or none:
        stage 3 alone, which changes no stub), then T moves."""
        memory = self.memory
        config = memory.config
        before = memory.threshold_state.value
        self._unread = unread
        depth = batch_depth(pressure, config.batch) if batch else None
        moves, result = self._evict(
            first=True, batch=batch, depth=depth, clip_to=memory.budget if clip else None
        )
        self._boundary_tick = memory.tick
        # A batch that moved nothing (no batch can meet the budget) changed nothing the prompt
        # shows: not a batch, and the manifest stays as it was.
        over = batch and result.pressure
        batch = batch and any(m.stage != 3 for m in moves)
        if batch:
            self.batches += 1
            self._manifest_text = None
            self.prompt_manifest()  # as of this batch, whichever surface asks for it
        live_after = memory.working_set.live_tokens()
        fill = live_after / memory.budget
        memory.threshold_state = on_tick(
            memory.threshold_state,
            tick=memory.tick,
            fill=fill,
            target_fill=config.target_fill,
            pressure=over,
            config=config.threshold,
        )
        memory.emit(events.STATE, memory.state())
        if not self.deferred:
            memory.flush()
        return EvictionReport(
            memory.tick,
            tuple(moves),
            before,
            memory.threshold_state.value,
            result.live_tokens_before,
            live_after,
            memory.budget,
            over,
            batch,
            pressure.cold,
        )

    def _evict(
        self, *, first: bool, batch: bool, depth: Depth | None, clip_to: int | None = None
    ) -> tuple[list[Move], Plan]:
        """Plan against the working set as it is now and apply the moves: the boundary's
        (``first``: the three stages, in a batch down to ``depth``), or again after a rendering
        measured more than planned — then stage 2 alone down to the budget, with the same
        results unread, and T unchanged."""
        memory = self.memory
        return evict(
            memory.working_set,
            batch=batch,
            first_pass=first,
            tick=memory.tick,
            now=memory.clock.now(),
            threshold=memory.threshold_state.value,
            budget=memory.budget,
            depth=depth,
            unread=self._unread_rows(),
            clip_to=clip_to,
            apply=self._apply,
            move=self._pressure_move,
            count_tokens=memory.count_tokens,
        )

    def _unread_rows(self) -> Bools:
        """The results the model has not read, as rows (new items since: none of them)."""
        unread = self._unread
        size = self.memory.working_set.cols.size
        if len(unread) < size:
            grown = np.zeros(size, dtype=np.bool_)
            grown[: len(unread)] = unread
            unread = grown
        return unread[:size]

    def _apply(self, move: Move) -> None:
        memory = self.memory
        memory.move(
            memory.working_set.items[move.id], move.to, stage=move.stage, reason=move.reason
        )

    def _pressure_move(self, item: ContextItem, tier: Tier, reason: str, chars: int) -> None:
        self.memory.move(item, tier, stage=2, reason=reason, excerpt=chars)

    def window(
        self,
        entries: Sequence[Entry],
        *,
        fixed_tokens: int,
        collapse: bool = True,
        notes: Sequence[str] = (),
        tail: bool | TailMode = True,
        cold: bool = False,
        overflow: bool = False,
    ) -> Boundary:
        """One turn boundary of a conversation, and ``entries`` rendered as the model will see
        them (:mod:`veil.context.window`). ``fixed_tokens`` is what the request carries besides
        the conversation (system prompt, tool schemas). ``tail``: what ends the request —
        ``"manifest"`` (or True) the manifest and ``notes`` once there is something to say,
        ``"notes"`` the notes alone (the harness sends the manifest in the system prompt,
        :meth:`prompt_manifest`), ``"none"`` (or False) nothing.

        The conversation is rendered as it is; only when it is over the budget does a batch
        run (:mod:`veil.context.batching`: deep enough to pay for the cache it breaks; deeper
        when the provider's cache is ``cold``), so between two batches every request is the
        last one's bytes plus what is new. The results after the conversation's last assistant
        message are unread: never evicted. ``overflow``: the provider refused the last request
        as too long — a batch now, and unread results too large to fit keep their head and tail.

        The rendering is the truth: when a batch's rendering costs more than the working set
        planned for (an item's stub in two places, results with no item, missing results), the
        difference corrects the plan and stage 2 runs again, at most twice; what was measured
        last is the memory's ``live_tokens``."""
        memory = self.memory
        mode = _tail_mode(tail)
        memory.overhead_tokens = fixed_tokens + self._tail_tokens
        roles = [e.role for e in entries]
        requests = model_requests(roles)
        last_assistant = (
            len(roles) - 1 - roles[::-1].index("assistant") if "assistant" in roles else -1
        )
        self._requests = requests
        unread_ids = {e.item for e in entries[last_assistant + 1 :] if e.role == "tool" and e.item}
        unread = memory.working_set.rows_of(unread_ids)
        rendered = self._render(entries, collapse=collapse, notes=notes, tail=mode)
        memory.overhead_tokens = fixed_tokens + rendered.tail_tokens
        conversation = rendered.tokens - rendered.tail_tokens
        pressure = Pressure(conversation, memory.budget, requests, cold, refused=overflow)
        batch = pressure.over or overflow
        report = self._boundary(pressure, unread, batch=batch, clip=overflow)
        moves = list(report.moves)
        if report.batch:
            rendered = self._render(entries, collapse=collapse, notes=notes, tail=mode)
            for _ in range(2):
                memory.overhead_tokens = fixed_tokens + rendered.tail_tokens
                if rendered.tokens - rendered.tail_tokens <= memory.budget:
                    break
                again = Depth.down_to(memory.budget, must_fit=overflow)
                more, _ = self._evict(first=False, batch=True, depth=again)
                if not more:
                    break
                moves.extend(more)
                rendered = self._render(entries, collapse=collapse, notes=notes, tail=mode)
        self._boundary_tick = memory.tick
        self._step_boundary = memory.tick
        memory.overhead_tokens = fixed_tokens + rendered.tail_tokens
        conversation = rendered.tokens - rendered.tail_tokens
        report = replace(
            report,
            moves=tuple(moves),
            live_tokens_before=pressure.tokens,
            live_tokens_after=conversation,
            budget=memory.budget,
        )
        return Boundary(report, rendered)

    def render(
        self, entries: Sequence[Entry], *, collapse: bool = True, tail: bool | TailMode = True
    ) -> Rendered:
        """``entries`` as the model would see them now, without a turn boundary: no step, no
        move."""
        return self._render(entries, collapse=collapse, notes=(), tail=_tail_mode(tail))

    def _render(
        self, entries: Sequence[Entry], *, collapse: bool, notes: Sequence[str], tail: TailMode
    ) -> Rendered:
        """Render with the renderer kept from the last time (a new one when the configuration
        or ``collapse`` changed), re-rendering from the first entry whose item's look changed;
        the difference from the working set's estimate corrects its next plan."""
        memory = self.memory
        config = memory.config
        text = self.tail(notes, manifest=tail == "manifest") if tail != "none" else ""
        renderer = self._renderer
        changed: set[str] | None = memory.take_looks_changed()
        if renderer is None or renderer.collapse != collapse or self._rendered_config is not config:
            renderer = Renderer(
                self._count,
                stub_chars=config.stub_chars,
                collapse=collapse,
                expand=config.expand_tool,
            )
            self._renderer = renderer
            self._rendered_config = config
            changed = None
        rendered = renderer.render(entries, memory.working_set.items, changed=changed, tail=text)
        self._tail_tokens = rendered.tail_tokens
        ws = memory.working_set
        ws.correction = rendered.tokens - rendered.tail_tokens - ws.raw_tokens()
        return rendered

    def tail(self, notes: Sequence[str] = (), *, manifest: bool = True) -> str:
        """What ends a request: the ``notes`` (the convergence note) and, with ``manifest``,
        the manifest as of the last batch (:meth:`prompt_manifest`) — once there is something
        to say. Before that it would only repeat the conversation, cost tokens every turn, and
        small models take a trailing note for a pattern to continue."""
        notes = [n for n in notes if n]
        shown = self.prompt_manifest() if manifest else ""
        return "\n".join([*([shown] if shown else []), *notes])

    def prompt_manifest(self) -> str:
        """The manifest as a request carries it: as of the last batch (a manifest that changed
        at every request would be a part of the prompt the provider can never cache), and only
        once an item has left the prompt or a contradiction is open."""
        memory = self.memory
        evicted = not bool(memory.working_set.cols.flag("live").all())
        conflicts = memory.conflicts(unresolved_only=True)
        if not (evicted or conflicts):
            return ""
        key = len(conflicts)
        if self._manifest_text is None or self._manifest_text[0] != key:
            self._manifest_text = (key, memory.manifest())
        return self._manifest_text[1]


__all__ = ["Boundary", "EvictionReport", "TurnBoundary"]
