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
  pointer; an assistant turn keeps its tool calls (only its text is replaced). A result too
  large to fit even alone, which the model has not read yet, shows its head and tail
  (``item.excerpt``).
- **Shown once.** An item is in full in one place only: the entry that last brought it back
  (:attr:`Entry.restores`: a ``veil_expand``/``veil_load`` result, or a truncated result's full
  output asked for), else its first entry. Entries before that place keep the stub they showed
  while the item was out (the prefix stays byte-stable); entries after it say the item is in
  full above.
- **A valid conversation.** Every tool call gets exactly one result, right after the
  assistant entry that made it; a call without one gets a ``[veil: no result …]`` result, a
  result whose call is not pending becomes a note. No provider rejects what this returns,
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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from veil.context.items import ContextItem
from veil.context.render import range_note, shown_elsewhere, stub, turn_stub

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
    ``extra_tokens``: what the entry costs besides its text (an assistant entry's tool-call
    arguments), which the renderer never rewrites."""

    role: Role
    text: str
    item: str | None = None
    calls: tuple[str, ...] = ()
    call_id: str | None = None
    restores: bool = False
    extra_tokens: int = 0


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


def carriers(entries: Sequence[Entry]) -> dict[str, int]:
    """For each item, the entry that shows it in full while it is live: the last entry that
    restored it, else the first entry that carries it."""
    out: dict[str, int] = {}
    for index, entry in enumerate(entries):
        if entry.item is not None and (entry.item not in out or entry.restores):
            out[entry.item] = index
    return out


Count = Callable[[str], int]


def render(
    entries: Sequence[Entry],
    items: Mapping[str, ContextItem],
    *,
    count: Count,
    stub_chars: int = 160,
    collapse: bool = True,
    tail: str = "",
) -> Rendered:
    """The request's conversation (see the module docstring for the rules). ``items`` maps
    item ids to their current state; an entry whose item is not there is shown as recorded."""
    look = _Look(items, carriers(entries), count, stub_chars)
    out: list[Part | _Step] = []
    step: _Step | None = None
    for index, entry in enumerate(entries):
        if entry.role == "tool":
            if step is not None and step.pending(entry.call_id):
                step.answer(look.result(index, entry), look.item(entry.item))
                continue
            step = _close(step, count)
            text = (
                f"[veil: a result of tool call {entry.call_id or '?'}, which is not pending "
                f"in this conversation]\n{entry.text}"
            )
            out.append(Part("orphan", "system", text, count(text), index))
            continue
        step = _close(step, count)
        part = look.turn(index, entry)
        if entry.role == "assistant" and entry.calls:
            step = _Step(part, look.item(entry.item), list(dict.fromkeys(entry.calls)))
            out.append(step)
        else:
            out.append(part)
    _close(step, count)
    parts = _flatten(out, count, collapse=collapse)
    tail_tokens = count(tail) if tail else 0
    if tail:
        parts.append(Part("tail", "system", tail, tail_tokens))
    return Rendered(tuple(parts), sum(p.tokens for p in parts), tail_tokens)


@dataclass(frozen=True)
class _Look:
    """How each entry looks, given the items' state and where each item is carried."""

    items: Mapping[str, ContextItem]
    carrier: Mapping[str, int]
    count: Count
    stub_chars: int

    def item(self, item_id: str | None) -> ContextItem | None:
        return self.items.get(item_id) if item_id is not None else None

    def turn(self, index: int, entry: Entry) -> Part:
        """A user, assistant or system entry: as recorded, or its turn's stub."""
        item = self.item(entry.item)
        if item is None or item.tier == "live":
            return self._part("shown", entry, index, entry.text)
        text = turn_stub(item)
        if self.count(text) >= self.count(entry.text):  # the text is shorter than its stub
            return self._part("shown", entry, index, entry.text)
        return self._part("stub", entry, index, text)

    def result(self, index: int, entry: Entry) -> Part:
        """A tool result: as recorded, its stub or excerpt, or a pointer to where it is."""
        item = self.item(entry.item)
        if item is None:
            return self._part("shown", entry, index, entry.text)
        carried_here = self.carrier.get(item.id) == index
        if item.tier != "live":
            if carried_here and item.excerpt:
                return self._part("excerpt", entry, index, stub(item, self.stub_chars))
            return self._part("stub", entry, index, stub(item, self.stub_chars))
        if carried_here:
            return self._part("shown", entry, index, entry.text)
        if index < self.carrier.get(item.id, index):
            # Shown as it was while the item was out: the prefix does not change.
            out = stub(replace(item, tier="warm", excerpt=0), self.stub_chars)
            return self._part("stub", entry, index, out)
        return self._part("elsewhere", entry, index, shown_elsewhere(item))

    def _part(self, kind: PartKind, entry: Entry, index: int, text: str) -> Part:
        tokens = self.count(text) + entry.extra_tokens
        return Part(kind, entry.role, text, tokens, index, entry.call_id)


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


def _flatten(out: Sequence[Part | _Step], count: Count, *, collapse: bool) -> list[Part]:
    """The parts in order; with ``collapse``, each run of consecutive steps out of the prompt
    becomes one note (the steps' results are listed with their pointers)."""
    parts: list[Part] = []
    run: list[_Step] = []

    def end_run() -> None:
        if run:
            note = _run_note(run)
            parts.append(Part("collapsed", "system", note, count(note)))
            run.clear()

    for piece in out:
        if isinstance(piece, _Step):
            if collapse and piece.out_of_prompt():
                run.append(piece)
                continue
            end_run()
            parts.append(piece.turn)
            parts.extend(piece.results)
            continue
        end_run()
        parts.append(piece)
    end_run()
    return parts


def _run_note(run: Sequence[_Step]) -> str:
    results: list[ContextItem] = []
    tokens = 0
    for step in run:
        assert step.item is not None
        tokens += step.item.tokens
        for part, item in zip(step.results, step.items, strict=True):
            if part.kind == "stub" and item is not None:
                results.append(item)
                tokens += item.tokens
    return range_note(results, tokens, len(run))
