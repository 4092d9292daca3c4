"""What the model sees: the one renderer of a request, for every surface. Pure.

``veil`` and the TUI (:class:`veil.agent.harness.VeilHarness`), the pydantic-ai history
processor, the Agents SDK session and the proxy all describe their transcript as
:class:`Entry` values — each naming the context item it belongs to — and call
:func:`render`; they only translate the :class:`Part` values back into their own message
format. Every rule of what the model sees is here:

- **As recorded while live.** An entry whose item is in the prompt shows its own text: what the
  model was given when it was new. (What Veil *stores* may be redacted; a live result is not
  rewritten, so the request prefix the provider caches does not change.)
- **Stubs.** An entry whose item left the prompt becomes a one-line stub with its ``veil://``
  pointer; an assistant turn keeps its tool calls (every call needs its result and the other
  way round) but not their arguments, which its item holds (a ``write`` of a whole file costs
  nothing once its turn is out); a turn that costs less than its stub stays. A result too
  large to fit even alone, which the model has not read yet, shows its head and tail
  (``item.excerpt``).
- **Shown once.** An item is in full in one place only: the entry that last brought it back
  (:attr:`Entry.restores`: the result of an expand or load tool, or a truncated result's full
  output asked for), else its first entry. Entries before that place keep the stub they showed
  while the item was out (the prefix stays byte-stable); entries after it say the item is in
  full above.
- **A valid conversation.** Every tool call gets exactly one result, right after the
  assistant entry that made it; a call without one gets a ``[veil: no result …]`` result, a
  result whose call is not pending becomes a note (without its text when it repeats an
  earlier result of the call word for word). No provider rejects what this returns,
  whatever was evicted, collapsed, expanded or interrupted.
- **Collapsed runs** (``collapse=True``): steps whose turn and every result are out of the
  prompt render as one note per run of consecutive such steps, naming their pointers — the
  request loses them as truncation would, but they stay addressable. The proxy renders
  without collapsing (every result keeps its place and id).
- **The tail.** The manifest and convergence notes go last (``tail``), so everything before
  them is a prefix that stays byte-identical from one request to the next unless an eviction
  rewrote it.

The token count of every part comes from the caller's ``count`` (the engine's calibrated
estimate); :attr:`Rendered.tokens` is what the request's conversation costs — the number the
budget is checked against.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, cast

from veil.context.items import ContextItem
from veil.context.prefix import shared_prefix
from veil.context.render import (
    STUB_TARGET_CHARS,
    range_note,
    shown_elsewhere,
    stub,
    turn_stub,
)

Role = Literal["system", "user", "assistant", "tool"]
PartKind = Literal[
    "shown",  # the entry's own text
    "stub",  # the item left the prompt: its one-line stub
    "excerpt",  # a result too large for the window: head and tail
    "elsewhere",  # the item is in full at an earlier place
    "collapsed",  # a note standing for a run of steps out of the prompt
    "orphan",  # a result whose call is not pending, as a note
    "missing",  # a result the renderer adds for a call that has none
    "tail",  # the manifest and notes at the end
]

MISSING_RESULT = "[veil: no result was recorded for this call (the run was interrupted)]"


@dataclass(frozen=True)
class Entry:
    """One transcript entry as the renderer sees it.

    ``item``: the context item the entry carries (a turn for user and assistant entries, the
    result's item for tool entries; None for what working memory does not track). ``calls``:
    the ids of the tool calls an assistant entry makes. ``call_id``: the call a tool entry
    answers. ``restores``: this result brought its item back into the prompt (an expansion).
    ``extra_tokens``: what the entry costs besides its text (an assistant entry's tool calls);
    ``stub_extra_tokens``: what those calls cost when the turn is a stub (their arguments are
    elided then: the turn item keeps them, its pointer restores them)."""

    role: Role
    text: str
    item: str | None = None
    calls: tuple[str, ...] = ()
    call_id: str | None = None
    restores: bool = False
    extra_tokens: int = 0
    stub_extra_tokens: int = 0


@dataclass(frozen=True)
class Part:
    """One piece of the request, in order. ``entry`` is the index of the entry it renders
    (None for a part the renderer added: a collapsed run's note, a missing result, the tail);
    an assistant part keeps its entry's calls. ``call_id`` is set on tool results."""

    kind: PartKind
    role: Role
    text: str
    tokens: int
    entry: int | None = None
    call_id: str | None = None


@dataclass(frozen=True)
class Rendered:
    """A request's conversation as the model will see it."""

    parts: tuple[Part, ...]
    tokens: int
    """Tokens of every part, the tail included."""
    tail_tokens: int

    def changed(self) -> dict[int, str]:
        """Entry index → its new text, for entries not shown as recorded."""
        return {p.entry: p.text for p in self.parts if p.entry is not None and p.kind != "shown"}

    def dropped(self, entries: int) -> set[int]:
        """Indexes (of ``entries`` entries) that are in no part: their step is in a collapsed
        run's note."""
        return set(range(entries)) - {p.entry for p in self.parts if p.entry is not None}


Count = Callable[[str], int]


def render(
    entries: Sequence[Entry],
    items: Mapping[str, ContextItem],
    *,
    count: Count,
    stub_chars: int = STUB_TARGET_CHARS,
    collapse: bool = True,
    tail: str = "",
    expand: str | None = None,
) -> Rendered:
    """The request's conversation (see the module docstring for the rules). ``items`` maps
    item ids to their current state; an entry whose item is not there is shown as recorded.
    ``expand``: the expand tool stubs name, as the model sees it (None: none; a stub gives
    its pointer and says to run the call again)."""
    renderer = Renderer(count, stub_chars=stub_chars, collapse=collapse, expand=expand)
    return renderer.render(entries, items, tail=tail)


class Renderer:
    """:func:`render` that remembers its last rendering, so that a request renders only what
    changed: the entries after the first one that differs from the last call's (by identity),
    or that carries an item whose look changed (``changed``: a tier, an excerpt, a size), or
    that starts the last step or collapsed run (which new results may extend). Everything
    before is the same parts as last time. The output equals :func:`render`'s (tested)."""

    def __init__(
        self,
        count: Count,
        *,
        stub_chars: int = STUB_TARGET_CHARS,
        collapse: bool = True,
        expand: str | None = None,
    ) -> None:
        self.count = count
        self.stub_chars = stub_chars
        self.expand = expand
        self.collapse = collapse
        self._entries: list[Entry] = []
        self._pieces: list[Part | _Step] = []
        self._starts: list[int] = []
        """The first entry of each piece."""
        self._in_run: list[bool] = []
        """Each piece: a step inside a collapsed run."""
        self._part_at: list[int] = []
        """Each piece: where its parts (or its run's note) begin in ``_parts``."""
        self._parts: list[Part] = []
        self._cum: list[int] = [0]
        """``_cum[i]``: the tokens of ``_parts[:i]``."""
        self._first: dict[str, int] = {}
        """Each item's first entry, in entry order."""
        self._restores: dict[str, list[int]] = {}
        """Each item's entries that brought it back, in order."""
        self._restored: list[tuple[int, str]] = []
        """Every (entry, item) that brought an item back, in entry order."""

    def render(
        self,
        entries: Sequence[Entry],
        items: Mapping[str, ContextItem],
        *,
        changed: Collection[str] | None = None,
        tail: str = "",
    ) -> Rendered:
        """The conversation; ``changed`` names the items whose look may have changed since
        the last call (None: anything may have: render it all)."""
        piece = self._reusable(entries, changed)
        start = self._starts[piece] if piece < len(self._starts) else len(self._entries)
        if piece == 0:
            start = 0
        self._reindex(entries, start)
        look = _Look(items, self.carrier, self.count, self.stub_chars, self.expand)
        pieces, starts = _pieces(entries, start, look)
        del self._pieces[piece:], self._starts[piece:], self._in_run[piece:]
        cut = self._part_at[piece] if piece < len(self._part_at) else len(self._parts)
        del self._part_at[piece:], self._parts[cut:], self._cum[cut + 1 :]
        for new, at in zip(pieces, starts, strict=True):
            self._pieces.append(new)
            self._starts.append(at)
        self._flatten_from(piece)
        self._entries = list(entries)
        parts = list(self._parts)
        tail_tokens = self.count(tail) if tail else 0
        if tail:
            parts.append(Part("tail", "system", tail, tail_tokens))
        return Rendered(tuple(parts), self._cum[-1] + tail_tokens, tail_tokens)

    def _reusable(self, entries: Sequence[Entry], changed: Collection[str] | None) -> int:
        """How many pieces of the last rendering stand as they are."""
        if changed is None or not self._pieces:
            return 0
        kept = len(self._entries)
        if len(entries) < kept:
            return 0
        same = shared_prefix(entries, self._entries)
        # An entry that brings an item back moves where the item is shown: its earlier entries
        # look different from then on.
        back = [e.item for e in entries[same:] if e.restores and e.item is not None]
        first = min((self._first[i] for i in (*changed, *back) if i in self._first), default=same)
        limit = min(same, first, self._starts[-1])
        piece = bisect_right(self._starts, limit) - 1
        while piece > 0 and self._in_run[piece - 1]:  # a run is rendered whole
            piece -= 1
        while piece > 0 and self._in_run[piece]:
            piece -= 1
        return max(0, piece)

    def _reindex(self, entries: Sequence[Entry], start: int) -> None:
        """Each item's first entry and the entries that brought it back, for ``entries`` from
        ``start`` on (what is recorded past ``start`` is forgotten first: both are kept in
        entry order, so that is a pop from the end)."""
        while self._first and next(reversed(self._first.values())) >= start:
            self._first.popitem()
        while self._restored and self._restored[-1][0] >= start:
            _, item = self._restored.pop()
            self._restores[item].pop()
        for index in range(start, len(entries)):
            entry = entries[index]
            if entry.item is None:
                continue
            self._first.setdefault(entry.item, index)
            if entry.restores:
                self._restored.append((index, entry.item))
                self._restores.setdefault(entry.item, []).append(index)

    def carrier(self, item: str) -> int | None:
        """The entry that shows ``item`` in full while it is live: the last that brought it
        back, else its first."""
        back = self._restores.get(item)
        return back[-1] if back else self._first.get(item)

    def _flatten_from(self, piece: int) -> None:
        """The parts of pieces from ``piece`` on; with ``collapse``, each run of consecutive
        steps out of the prompt becomes one note."""
        run: list[int] = []

        def add(part: Part) -> None:
            self._parts.append(part)
            self._cum.append(self._cum[-1] + part.tokens)

        def end_run() -> None:
            if run:
                note = _run_note([cast(_Step, self._pieces[i]) for i in run], self.expand)
                add(Part("collapsed", "system", note, self.count(note)))
                run.clear()

        for index in range(piece, len(self._pieces)):
            current = self._pieces[index]
            if isinstance(current, _Step) and self.collapse and current.out_of_prompt():
                if not run:
                    self._part_at.append(len(self._parts))
                else:
                    self._part_at.append(self._part_at[run[0]])
                run.append(index)
                self._in_run.append(True)
                continue
            end_run()
            self._part_at.append(len(self._parts))
            self._in_run.append(False)
            if isinstance(current, _Step):
                add(current.turn)
                for part in current.results:
                    add(part)
            else:
                add(current)
        end_run()


def _repeated(entries: Sequence[Entry], index: int) -> bool:
    """The result at ``index`` repeats, word for word, an earlier result of the same call (a
    client that sends a call's result twice: Gemini CLI 0.61 on ``--resume``): its note need
    not carry the text again, which the first result shows — or its stub restores."""
    entry = entries[index]
    return bool(entry.call_id) and any(
        e.role == "tool" and e.call_id == entry.call_id and e.text == entry.text
        for e in entries[:index]
    )


def _pieces(
    entries: Sequence[Entry], start: int, look: _Look
) -> tuple[list[Part | _Step], list[int]]:
    """The pieces of ``entries`` from ``start`` (a step, or a part), and where each starts."""
    out: list[Part | _Step] = []
    starts: list[int] = []
    step: _Step | None = None
    count = look.count
    for index in range(start, len(entries)):
        entry = entries[index]
        if entry.role == "tool":
            if step is not None and step.pending(entry.call_id):
                step.answer(look.result(index, entry), look.item(entry.item))
                continue
            step = _close(step, count)
            text = (
                f"[veil: a result of tool call {entry.call_id or '?'}, which is not pending "
                f"in this conversation]"
            )
            text += (
                " — the same as its result above"
                if _repeated(entries, index)
                else (f"\n{entry.text}")
            )
            out.append(Part("orphan", "system", text, count(text), index))
            starts.append(index)
            continue
        step = _close(step, count)
        part = look.turn(index, entry)
        starts.append(index)
        if entry.role == "assistant" and entry.calls:
            step = _Step(part, look.item(entry.item), list(dict.fromkeys(entry.calls)))
            out.append(step)
        else:
            out.append(part)
    _close(step, count)
    return out, starts


@dataclass(frozen=True)
class _Look:
    """How each entry looks, given the items' state and where each item is carried."""

    items: Mapping[str, ContextItem]
    carrier: Callable[[str], int | None]
    count: Count
    stub_chars: int
    expand: str | None

    def item(self, item_id: str | None) -> ContextItem | None:
        return self.items.get(item_id) if item_id is not None else None

    def turn(self, index: int, entry: Entry) -> Part:
        """A user, assistant or system entry: as recorded, or its turn's stub."""
        item = self.item(entry.item)
        shown = self._part("shown", entry, index, entry.text)
        if item is None or item.tier == "live":
            return shown
        text = turn_stub(item, self.expand)
        stub_tokens = self.count(text) + entry.stub_extra_tokens
        if stub_tokens >= shown.tokens:  # the turn costs less than its stub: as recorded
            return shown
        return Part("stub", entry.role, text, stub_tokens, index, entry.call_id)

    def result(self, index: int, entry: Entry) -> Part:
        """A tool result: as recorded, its stub or excerpt, or a pointer to where it is."""
        item = self.item(entry.item)
        if item is None:
            return self._part("shown", entry, index, entry.text)
        carrier = self.carrier(item.id)
        carried_here = carrier == index
        if item.tier != "live":
            if carried_here and item.excerpt:
                text = stub(item, self.stub_chars, self.expand)
                return self._part("excerpt", entry, index, text)
            text = stub(replace(item, excerpt=0), self.stub_chars, self.expand)
            return self._instead("stub", entry, index, text, _own(item, entry))
        if carried_here:
            return self._part("shown", entry, index, entry.text)
        if carrier is not None and index < carrier:
            # Shown as it was while the item was out: the prefix does not change.
            out = stub(replace(item, tier="warm", excerpt=0), self.stub_chars, self.expand)
            return self._instead("stub", entry, index, out, _own(item, entry))
        return self._instead("elsewhere", entry, index, shown_elsewhere(item))

    def _instead(self, kind: PartKind, entry: Entry, index: int, text: str, whole: int = 0) -> Part:
        """``text`` in place of the entry's own — unless it is not shorter than the result it
        stands for (``whole``: the item's content when the entry is the item's own result, whose
        text the client may have cleared itself after the stub went: it keeps getting the stub,
        so the prefix the provider cached holds): a result is never replaced by something
        longer.
        (A surface whose history keeps what the model was sent gives the stub itself as the
        entry's text: it is that part still.)"""
        if text != entry.text and len(text) >= max(len(entry.text), whole):
            return self._part("shown", entry, index, entry.text)
        return self._part(kind, entry, index, text)

    def _part(self, kind: PartKind, entry: Entry, index: int, text: str) -> Part:
        tokens = self.count(text) + entry.extra_tokens
        return Part(kind, entry.role, text, tokens, index, entry.call_id)


def _own(item: ContextItem, entry: Entry) -> int:
    """The item's length when ``entry`` is its own result (its call's), else 0."""
    own = item.tool_call_id is not None and item.tool_call_id == entry.call_id
    return len(item.content) if own else 0


@dataclass
class _Step:
    """An assistant entry with tool calls and the results that answer them."""

    turn: Part
    item: ContextItem | None
    calls: list[str]
    results: list[Part] = field(default_factory=lambda: [])
    items: list[ContextItem | None] = field(default_factory=lambda: [])
    """The item of each result."""

    def pending(self, call_id: str | None) -> bool:
        answered = {p.call_id for p in self.results}
        return call_id is not None and call_id in self.calls and call_id not in answered

    def answer(self, part: Part, item: ContextItem | None) -> None:
        self.results.append(part)
        self.items.append(item)

    def out_of_prompt(self) -> bool:
        """The turn and every result are out of the prompt (a missing result is nothing)."""
        kinds = {p.kind for p in self.results}
        return (
            self.item is not None
            and self.item.tier != "live"
            and "stub" in kinds
            and kinds <= {"stub", "missing"}
        )


def _close(step: _Step | None, count: Count) -> None:
    """The step ends: every call still without a result gets one."""
    if step is None:
        return None
    for call_id in step.calls:
        if step.pending(call_id):
            missing = Part("missing", "tool", MISSING_RESULT, count(MISSING_RESULT), None, call_id)
            step.answer(missing, None)
    return None


def _run_note(run: Sequence[_Step], tool: str | None) -> str:
    results: list[ContextItem] = []
    tokens = 0
    for step in run:
        assert step.item is not None
        tokens += step.item.tokens
        for part, item in zip(step.results, step.items, strict=True):
            if part.kind == "stub" and item is not None:
                results.append(item)
                tokens += item.tokens
    return range_note(results, tokens, len(run), tool)
