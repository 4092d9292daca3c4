"""Which context item each message of a conversation is: the one place that decides it.

A surface describes its conversation as :class:`Found` messages; :meth:`Transcript.entries`
gives the renderer's :class:`~veil.context.window.Entry` for each, capturing what working
memory has not seen yet:

- A message whose item the surface knows (``Found.item``: the harness names each result's item
  when it captures it) is that item.
- A user or assistant message (with ``turns``) is the turn item recorded for its place in the
  conversation (target ``turn:<index>``) when that item still holds its text; otherwise a new
  turn is captured (a framework that popped a message and added another in its place).
- A tool result is the item holding its call's result (the k-th result carrying a call id is
  the k-th item captured for it: models that reuse call ids are served), else it is captured
  now, what it addressed described by ``describe`` (the proxy knows Claude Code's and Codex's
  tools) or by the call's arguments.
- The result of an expansion tool (``expand_tools``: their names as the caller's model sees
  them; this layer knows none) is the item its pointer names. Whether it
  brought the item back is known when the expansion ran through :meth:`Transcript.expand`; an
  expansion Veil did not run (an MCP server of the agent's) is applied when its result is new —
  after the conversation's last assistant message — and taken as having restored otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from veil.context.engine import ContextEngine, UnknownItem
from veil.context.items import ContextItem
from veil.context.prefix import shared_prefix
from veil.context.turns import CallKind
from veil.context.window import Entry, Role


@dataclass(frozen=True)
class Call:
    """A tool call an assistant message makes."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=lambda: {})
    acts: bool = False
    """The call changes something (an edit, a command), as far as the surface knows."""


@dataclass(frozen=True)
class Addressed:
    """What a call addressed, as the surface knows its tool (see the engine's capture)."""

    target: str | None = None
    reads: str | None = None
    partial: bool = False
    writes: str | None = None


@dataclass(frozen=True)
class Found:
    """One message of a conversation as a surface found it."""

    role: Role
    text: str
    calls: tuple[Call, ...] = ()
    call_id: str | None = None
    is_error: bool = False
    item: str | None = None
    """The item, when the surface knows it."""
    restores: bool = False
    """With ``item``: this result brought its item back into the prompt."""
    extra_tokens: int = 0
    """Tokens of what the message carries besides its text and its calls (a model's
    reasoning items, say); the calls are counted here, the same way for every surface."""
    tracked: bool = True
    """False: a result working memory does not keep (a framework's retry prompt, a denied
    call): it is shown as found and counted."""


def calls_text(calls: Sequence[Call]) -> str:
    """Tool calls as one text (name and arguments): what they cost in a request is counted
    from it, for every surface alike."""
    return "\n".join(
        f"{c.name}({json.dumps(dict(c.arguments), ensure_ascii=False)})" for c in calls
    )


def elide(calls: Sequence[Call]) -> tuple[Call, ...]:
    """The calls as a stubbed turn carries them: names and ids, no arguments."""
    return tuple(Call(c.id, c.name, {}, c.acts) for c in calls)


def turn_text(text: str, calls: Sequence[Call]) -> str:
    """An assistant turn as its item holds it: its text and its calls' arguments (a file
    written through a tool call costs its tokens in every request)."""
    if not calls:
        return text
    listed = calls_text(calls)
    return f"{text}\n{listed}" if text else listed


Describe = Callable[[Call], Addressed]


def _holds(item: ContextItem, text: str, found: str) -> bool:
    """Whether a turn item is the message found at its place: it holds the message's text,
    or the message is the item's own stub (a framework that keeps what the model was sent)."""
    return item.content == text or (found.startswith("[veil: ") and item.id in found)


class Transcript:
    def __init__(
        self,
        engine: ContextEngine,
        *,
        turns: bool = True,
        expand_tools: Collection[str] = (),
        describe: Describe | None = None,
    ) -> None:
        self.engine = engine
        self.turns = turns
        self.expand_tools = frozenset(expand_tools)
        self.describe = describe
        self._turn_items: dict[int, str] = {
            int(i.target.split(":", 1)[1]): i.id
            for i in engine.items()
            if i.kind == "turn" and i.target and i.target.startswith("turn:")
        }
        self._checked: dict[int, tuple[tuple[str, tuple[str, ...]], str]] = {}
        """Index → (the message's text and call ids, its item) once its item was checked."""
        self._expansions: dict[str, tuple[str, bool]] = {}
        """Expansion call id → (the item it names, whether it brought it back)."""
        self._found: list[Found] = []
        self._entries: list[Entry] = []
        """The conversation as last seen, and its entries."""
        self._calls: dict[str, tuple[Call, int]] = {}
        """Each call id → the call and the index of the message that made it."""
        self._seen: dict[str, int] = {}
        """Each call id → how many results carrying it were seen."""
        self._last_assistant = -1

    def turn_item(self, index: int) -> str | None:
        """The turn item of the message at ``index``, once captured."""
        return self._turn_items.get(index)

    def entries(self, found: Sequence[Found]) -> list[Entry]:
        """The renderer's entries for ``found`` (see the module docstring).

        A conversation only grows: the entries of the messages found last time (the same
        objects, or equal ones) are the same :class:`Entry` objects, and only what is new is
        looked at — which also lets the renderer reuse what it rendered for them. A change
        earlier in the conversation (a framework that popped a message) starts over."""
        kept = self._found
        same = shared_prefix(found, kept)
        if same < len(kept):
            self._found, self._entries = [], []
            self._calls.clear()
            self._seen.clear()
            self._last_assistant = -1
        start = len(self._found)
        for index in range(start, len(found)):
            if found[index].role == "assistant":
                self._last_assistant = index
        for index in range(start, len(found)):
            message = found[index]
            self._found.append(message)
            self._entries.append(self._entry(index, message))
        return list(self._entries)

    def unseen(self, found: Sequence[Found]) -> Sequence[Found] | None:
        """The messages of ``found`` after those :meth:`entries` saw last time, or None when
        ``found`` does not start with them (the conversation changed earlier)."""
        kept = self._found
        if len(found) < len(kept) or shared_prefix(found, kept) < len(kept):
            return None
        return found[len(kept) :]

    def expands(self, messages: Sequence[Found]) -> bool:
        """Whether any of ``messages`` calls an expansion tool or answers such a call."""
        for message in messages:
            if any(c.name in self.expand_tools for c in message.calls):
                return True
            made = self._calls.get(message.call_id or "") if message.role == "tool" else None
            if made is not None and made[0].name in self.expand_tools:
                return True
        return False

    def _entry(self, index: int, message: Found) -> Entry:
        if message.role != "tool":
            item = message.item
            if item is None and self.turns and message.role in ("user", "assistant"):
                item = self.turn(index, message)
            elif not self.turns and message.role == "assistant" and message.text:
                self.engine.referenced(message.text)  # no turn item, but what it names counts
            for call in message.calls:
                self._calls[call.id] = (call, index)
            ids = tuple(c.id for c in message.calls)
            extra = self._extra_tokens(message)
            elided = message.extra_tokens + self._calls_tokens(elide(message.calls))
            return Entry(
                message.role, message.text, item, ids, extra_tokens=extra, stub_extra_tokens=elided
            )
        item, restores = message.item, message.restores
        if item is None and message.tracked:
            made = self._calls.get(message.call_id or "")
            new = index > self._last_assistant
            item, restores = self._result(message, made, self._seen, new=new)
        return Entry("tool", message.text, item, call_id=message.call_id, restores=restores)

    def cost(self, messages: Sequence[Found]) -> int:
        """What ``messages`` cost as the client sent them: each one's text, and for a user or
        assistant message what it carries besides and its calls — the count of their entries
        (:meth:`entries`), without capturing anything."""
        count = self.engine.count_tokens
        return sum(
            count(m.text) + (0 if m.role == "tool" else self._extra_tokens(m)) for m in messages
        )

    def _extra_tokens(self, message: Found) -> int:
        return message.extra_tokens + self._calls_tokens(message.calls)

    def _calls_tokens(self, calls: Sequence[Call]) -> int:
        return self.engine.count_tokens(calls_text(calls)) if calls else 0

    def expand(self, pointer: str, *, call_id: str | None = None) -> str:
        """An expansion tool run by Veil: the item's full content, byte-identical, and the item
        back in the prompt (a regret for the engine). Raises :class:`UnknownItem`."""
        restored = self.engine.restores(pointer)
        self.engine.advance_clock()  # a tool call: its result is the item it brings back
        item = self.engine.expand(pointer)
        self.engine.flush()
        if call_id:
            self._expansions[call_id] = (item.id, restored)
        return item.content

    def turn(self, index: int, message: Found) -> str:
        """The turn item of a user or assistant message at ``index``: the one recorded there
        when it still holds the message's text, else a new one."""
        key = (message.text, tuple(c.id for c in message.calls))
        checked = self._checked.get(index)
        if checked is not None and checked[0] == key:
            return checked[1]
        text = message.text
        if message.role == "assistant":
            text = turn_text(message.text, message.calls)
        text = self.engine.redact(text)  # what the turn item holds
        known = self._turn_items.get(index)
        if known is None or not _holds(self.engine.item(known), text, message.text):
            kinds: tuple[CallKind, ...] = tuple("act" if c.acts else "look" for c in message.calls)
            item = self.engine.capture_turn(message.role, text, calls=kinds, target=f"turn:{index}")
            known = self._turn_items[index] = item.id
        self._checked[index] = (key, known)
        return known

    def _result(
        self, message: Found, made: tuple[Call, int] | None, seen: dict[str, int], *, new: bool
    ) -> tuple[str | None, bool]:
        call_id = message.call_id or ""
        call = made[0] if made else None
        if call is not None and call.name in self.expand_tools:
            return self._expansion(call, new=new and not message.is_error)
        k = seen.get(call_id, 0)
        seen[call_id] = k + 1
        earlier = self.engine.items_for_call(call_id) if call_id else []
        if k < len(earlier):
            return earlier[k].id, False
        what = (
            self.describe(call) if self.describe is not None and call is not None else Addressed()
        )
        item = self.engine.capture_tool_result(
            tool_call_id=call_id,
            tool_name=call.name if call is not None else "tool",
            output=message.text,
            is_error=message.is_error,
            arguments=dict(call.arguments) if call is not None else {},
            target=what.target,
            reads=what.reads,
            partial=what.partial,
            writes=what.writes,
            parent=self._turn_items.get(made[1]) if made is not None and self.turns else None,
        )
        return item.id, False

    def _expansion(self, call: Call, *, new: bool) -> tuple[str | None, bool]:
        known = self._expansions.get(call.id)
        if known is not None:
            return known
        pointer = str(call.arguments.get("pointer") or "")
        try:
            if new:  # an expansion Veil did not run, just done: it happened
                restored = self.engine.restores(pointer)
                self.engine.advance_clock()
                item = self.engine.expand(pointer)
            else:
                item, restored = self.engine.resolve_pointer(pointer), True
        except UnknownItem:
            return None, False
        self._expansions[call.id] = (item.id, restored)
        return item.id, restored
