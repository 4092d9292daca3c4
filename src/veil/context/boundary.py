"""The turn boundary: where working memory decides what the next request carries.

Once per turn, before a request goes out, :meth:`TurnBoundary.step` scores every item, runs
the three eviction stages (:func:`veil.context.pressure.evict`) and moves the AIMD threshold;
:meth:`TurnBoundary.window` steps and then renders the conversation as the model will see it
(:mod:`veil.context.window`). The rendering is the truth: when it costs more than the working
set planned for (an item's stub in two places, results with no item, missing results), the
difference corrects the plan and window pressure runs again, at most twice, before the request
goes out. Results captured since the previous step are unread at this one, whether it runs once
or again at the same tick.

:class:`TurnBoundary` is a layer of :class:`~veil.context.engine.ContextEngine` over
:class:`~veil.context.working_memory.WorkingMemory`; every move goes through its ``_move``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from veil.context import events
from veil.context.eviction import Move, Plan
from veil.context.items import ContextItem, Tier
from veil.context.pressure import evict
from veil.context.threshold import on_tick
from veil.context.window import Entry, Rendered, Renderer
from veil.context.working_memory import WorkingMemory


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


@dataclass(frozen=True)
class Boundary:
    """A turn boundary as :meth:`ContextEngine.window` ran it: what moved, and the request's
    conversation as the model will see it (``rendered.tokens`` in estimated tokens; the
    report's ``live_tokens_after`` is the same count without the tail)."""

    report: EvictionReport
    rendered: Rendered


class TurnBoundary(WorkingMemory):
    """Stepping and rendering (see the module docstring)."""

    def step(self, *, overhead_tokens: int | None = None) -> EvictionReport:
        """The turn boundary: score everything, run the three stages, move T. Persisted.

        ``overhead_tokens`` is what the next request costs besides the items (system prompt,
        manifest, tool schemas); the items' budget is the window minus the reserve minus it.
        Without it the last value given is kept. A caller that sends a transcript uses
        :meth:`window`, which steps and renders."""
        if overhead_tokens is not None:
            self.overhead_tokens = max(0, int(overhead_tokens))
        before = self._threshold.value
        if self._boundary_tick != self.tick:  # a step again at the same tick: same unread
            self._step_boundary = self._boundary_tick
        moves, result = self._evict(stages=True)
        self._boundary_tick = self.tick
        live_after = self._set.live_tokens()
        fill = live_after / self.budget
        self._threshold = on_tick(
            self._threshold,
            tick=self.tick,
            fill=fill,
            target_fill=self.config.target_fill,
            pressure=result.pressure,
            config=self.config.threshold,
        )
        self._emit(events.STATE, self._state())
        if not self.deferred:
            self.flush()
        return EvictionReport(
            self.tick,
            tuple(moves),
            before,
            self._threshold.value,
            result.live_tokens_before,
            live_after,
            self.budget,
            result.pressure,
        )

    def _evict(self, *, stages: bool) -> tuple[list[Move], Plan]:
        """Plan against the working set as it is now and apply the moves: the three stages
        (``stages``), or again after a rendering measured more than planned — then with the
        same results unread as at the step, and T unchanged."""
        return evict(
            self._set,
            stages=stages,
            tick=self.tick,
            boundary_tick=self._step_boundary,
            now=self.clock.now(),
            threshold=self._threshold.value,
            budget=self.budget,
            unread_limit=self.unread_limit,
            apply=self._apply,
            move=self._pressure_move,
            count_tokens=self.count_tokens,
        )

    def _apply(self, move: Move) -> None:
        self._move(self._set.items[move.id], move.to, stage=move.stage, reason=move.reason)

    def _pressure_move(self, item: ContextItem, tier: Tier, reason: str, chars: int) -> None:
        self._move(item, tier, stage=2, reason=reason, excerpt=chars)

    def window(
        self,
        entries: Sequence[Entry],
        *,
        fixed_tokens: int,
        collapse: bool = True,
        notes: Sequence[str] = (),
        tail: bool = True,
    ) -> Boundary:
        """One turn boundary of a conversation: :meth:`step`, then render ``entries`` as the
        model will see them (:mod:`veil.context.window`). ``fixed_tokens`` is what the request
        carries besides the conversation (system prompt, tool schemas). With ``tail`` the
        manifest and ``notes`` end the request once there is something to say.

        The rendering is the truth: when it costs more than the working set planned for (an
        item's stub in two places, results with no item, missing results), the difference
        corrects the plan and stage 2 runs again, at most twice; what was measured last is
        :attr:`live_tokens`."""
        report = self.step(overhead_tokens=fixed_tokens + self._tail_tokens)
        moves = list(report.moves)
        rendered = self._render(entries, collapse=collapse, notes=notes, tail=tail)
        for _ in range(2):
            self.overhead_tokens = fixed_tokens + rendered.tail_tokens
            if rendered.tokens - rendered.tail_tokens <= self.budget:
                break
            more, _ = self._evict(stages=False)
            if not more:
                break
            moves.extend(more)
            rendered = self._render(entries, collapse=collapse, notes=notes, tail=tail)
        self.overhead_tokens = fixed_tokens + rendered.tail_tokens
        conversation = rendered.tokens - rendered.tail_tokens
        report = replace(
            report, moves=tuple(moves), live_tokens_after=conversation, budget=self.budget
        )
        return Boundary(report, rendered)

    def render(
        self, entries: Sequence[Entry], *, collapse: bool = True, tail: bool = True
    ) -> Rendered:
        """``entries`` as the model would see them now, without a turn boundary: no step, no
        move (the proxy checks a request against its budget before deciding to evict)."""
        return self._render(entries, collapse=collapse, notes=(), tail=tail)

    def _render(
        self, entries: Sequence[Entry], *, collapse: bool, notes: Sequence[str], tail: bool
    ) -> Rendered:
        """Render with the renderer kept from the last time (a new one when the configuration
        or ``collapse`` changed), re-rendering from the first entry whose item's look changed;
        the difference from the working set's estimate corrects its next plan."""
        text = self.tail(notes) if tail else ""
        renderer = self._renderer
        if renderer is None or renderer.collapse != collapse:
            renderer = Renderer(
                self._count,
                stub_chars=self.config.stub_chars,
                collapse=collapse,
                expand=self.config.expand_tool,
            )
            self._renderer = renderer
            changed: set[str] | None = None
        else:
            changed = self._looks_changed
        rendered = renderer.render(entries, self._set.items, changed=changed, tail=text)
        self._looks_changed = set()
        self._tail_tokens = rendered.tail_tokens
        self._set.correction = rendered.tokens - rendered.tail_tokens - self._set.raw_tokens()
        return rendered

    def tail(self, notes: Sequence[str] = ()) -> str:
        """What ends a request: the manifest with ``notes`` (the convergence note) — once there
        is something to say (an item left the prompt, a contradiction or a note exists).
        Before that it would only repeat the conversation, cost tokens every turn, and small
        models take a trailing note for a pattern to continue."""
        notes = [n for n in notes if n]
        evicted = not bool(self._set.cols.flag("live").all())
        if not (notes or evicted or self._book.list(unresolved_only=True)):
            return ""
        return self.manifest(notes=notes)

    def _state(self) -> events.State:
        """The ``context.state`` event: what a resumed session takes back besides its items
        (:func:`veil.context.resume.read_session`)."""
        return events.State(
            session_id=self.session_id,
            tick=self.tick,
            threshold=self._threshold.value,
            last_regret_tick=self._threshold.last_regret_tick,
            task=self._task_text[:2000],
            turns=self._set.turns,
            ratio=self.calibration.ratio,
            samples=self.calibration.samples,
        )


__all__ = ["Boundary", "EvictionReport", "TurnBoundary"]
