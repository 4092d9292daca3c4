"""The memory tools the model can call (names prefixed ``veil_``; see docs/tools.md).

Twelve when long-term memory is on. Only tools that can work are offered: without a long-term
memory (``Layers.memory`` is None) there is no ``veil_remember`` nor ``veil_history``, and
``veil_recall`` searches earlier context only; with a memory that has no extraction model (a
scripted run) there is no ``veil_remember``. Every parameter of every tool has a
``description`` in its JSON schema.

Each is a small :class:`MemoryTool` with a JSON schema and a function over :class:`Layers`,
the memory layers it needs: the context engine (manifest, load, pin, evict, expand, conflicts,
resolve, mark_turn), long-term memory (recall, remember, history) and the attempt log
(attempts). Errors (an unknown pointer, a missing model for extraction) become error results
the model reads; nothing here raises into the loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from veil.agent.tool import ToolContext, ToolResult
from veil.context import ContextEngine, TurnKind, UnknownItem
from veil.context.items import TURN_KINDS
from veil.convergence.record import AttemptLog
from veil.llm.messages import ToolSpec
from veil.memory import Fact, Memory

RECALL_MIN_SIMILARITY = 0.3
"""Earlier context found only by embedding similarity is listed by ``veil_recall`` when its
cosine with the query reaches this (text matches are always listed)."""


@dataclass
class Layers:
    """What the memory tools work on: the session's engine and attempt log, the project's
    long-term memory (None when off), and two logs the harness reads back after each call —
    items the model brought back (``expanded``) and facts recall showed it (``recalled``)."""

    engine: ContextEngine
    attempts: AttemptLog
    memory: Memory | None
    scope: str
    session_id: str
    expanded: list[tuple[str, bool]] = field(default_factory=lambda: [])
    """(item id, whether the call brought it into the prompt) for each expansion or load."""
    recalled: list[Fact] = field(default_factory=lambda: [])


Run = Callable[[Layers, dict[str, Any]], str]


@dataclass(frozen=True)
class MemoryTool:
    spec: ToolSpec
    layers: Layers
    fn: Run
    mutates: bool = False
    parallel_safe: bool = False

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            return ToolResult(self.fn(self.layers, arguments))
        except (UnknownItem, KeyError, ValueError, LookupError) as exc:
            return ToolResult(f"{self.spec.name}: {exc}", is_error=True)
        except Exception as exc:  # the model reads the failure; the loop goes on
            return ToolResult(
                f"{self.spec.name} failed: {type(exc).__name__}: {exc}", is_error=True
            )


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": required or [],
        "additionalProperties": False,
    }


def _str(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


_ITEM_ID = _str(
    "An item's id (ci_…) as the manifest or a stub shows it, or the id of the tool call whose "
    "result it is (call_…)."
)
_POINTER = _str("A pointer from a stub, veil://warm/… or veil://cold/…, or an item's id.")


def _recall(h: Layers, a: dict[str, Any]) -> str:
    query = str(a.get("query", ""))
    parts: list[str] = []
    if h.memory is not None:
        result = h.memory.recall(
            query, user_id=h.scope, token_budget=int(a.get("token_budget") or 800)
        )
        h.recalled.extend(result.facts)
        parts.append(result.text or "(long-term memory has nothing on this)")
    warm = (
        h.engine.search(query, limit=8, min_similarity=RECALL_MIN_SIMILARITY)
        if query.strip()
        else []
    )
    if warm:
        parts.append("Earlier context (not in the prompt; veil_expand a pointer to restore):")
        parts.extend(
            f"- {i.pointer} {i.tool_name or i.kind} {i.target or ''} ({i.tokens} tokens)"
            for i in warm
        )
    return "\n".join(parts) or "nothing found"


def _remember(h: Layers, a: dict[str, Any]) -> str:
    if h.memory is None:
        raise ValueError("long-term memory is not enabled for this session")
    report = h.memory.remember(
        str(a["text"]), user_id=h.scope, author="assistant", session_id=h.session_id
    )
    if report.error:
        return f"recorded the evidence, but extraction failed: {report.error}"
    return (
        f"remembered: {len(report.facts)} facts, {len(report.superseded)} superseded, "
        f"{len(report.reinforced)} reinforced, {len(report.quarantined)} quarantined, "
        f"{len(report.episodes)} episodes"
    )


def _history(h: Layers, a: dict[str, Any]) -> str:
    if h.memory is None:
        raise ValueError("long-term memory is not enabled for this session")
    facts = h.memory.history(h.scope, str(a["subject"]), str(a["relation"]))
    if not facts:
        return "no history for that subject and relation"
    return "\n".join(
        f"- {f.object} ({f.status}) from {f.valid_from.date()} to "
        f"{f.valid_to.date() if f.valid_to else 'now'}: {f.statement}"
        for f in facts
    )


def _manifest(h: Layers, a: dict[str, Any]) -> str:
    return h.engine.manifest()


def _load(h: Layers, a: dict[str, Any]) -> str:
    restored = h.engine.restores(str(a["pointer"]))
    h.engine.advance_clock()  # a tool call: its result is the item it brings back
    item = h.engine.load(str(a["pointer"]))
    h.expanded.append((item.id, restored))
    return f"loaded {item.id} ({item.tokens} tokens):\n{item.content}"


def _pin(h: Layers, a: dict[str, Any]) -> str:
    pinned = bool(a.get("pinned", True))
    item = h.engine.pin(str(a["id"]), pinned)
    return f"{'pinned' if pinned else 'unpinned'} {item.id}"


def _evict(h: Layers, a: dict[str, Any]) -> str:
    item = h.engine.evict(str(a["id"]))
    return f"evicted {item.id} to warm memory; {item.pointer} restores it"


def _expand(h: Layers, a: dict[str, Any]) -> str:
    restored = h.engine.restores(str(a["pointer"]))
    h.engine.advance_clock()  # a tool call: its result is the item it brings back
    item = h.engine.expand(str(a["pointer"]))
    h.expanded.append((item.id, restored))
    return item.content


def _attempts(h: Layers, a: dict[str, Any]) -> str:
    return attempts_report(h.attempts)


def attempts_report(log: AttemptLog) -> str:
    """The current goal's record as the model reads it: level, then the latest attempts."""
    if log.goal is None:
        return "no goal yet"
    found = log.attempts()
    if not found:
        return "no attempts recorded for this goal yet"
    assessment = log.assess()
    lines = [f"goal {log.goal.id}: level {assessment.level}; {len(found)} attempts"]
    lines.extend(
        f"- #{a.iteration} {a.action} {a.target}: {a.outcome}"
        f"{' ' + a.fingerprint if a.fingerprint else ''} ({a.session_id})"
        for a in found[-20:]
    )
    return "\n".join(lines)


def _conflicts(h: Layers, a: dict[str, Any]) -> str:
    found = h.engine.conflicts()
    if not found:
        return "no unresolved contradictions"
    return "\n".join(f"- {c.describe()}" for c in found)


def _resolve(h: Layers, a: dict[str, Any]) -> str:
    settled = h.engine.resolve(
        str(a["conflict_id"]), keep=str(a["keep"]), reason=str(a["reason"]), actor="model"
    )
    return f"resolved {settled.id}: kept {settled.kept}"


def _mark_turn(h: Layers, a: dict[str, Any]) -> str:
    kind = str(a["kind"])
    if kind not in TURN_KINDS:
        raise ValueError(f"kind must be one of {', '.join(TURN_KINDS)}")
    item = h.engine.mark_turn(str(a["id"]), kind)  # type: ignore[arg-type]
    turn_kind: TurnKind | None = item.turn_kind
    return f"{item.id} is now a {turn_kind} turn"


def memory_tools(layers: Layers) -> list[MemoryTool]:
    """The tools that can work over ``layers`` (see the module docstring)."""

    def tool(
        name: str, description: str, parameters: dict[str, Any], fn: Run, *, mutates: bool = False
    ) -> MemoryTool:
        return MemoryTool(ToolSpec(name, description, parameters), layers, fn, mutates)

    long_term = layers.memory is not None
    extracts = layers.memory is not None and layers.memory.complete is not None
    recall = tool(
        "veil_recall",
        "Search long-term memory and earlier (evicted) context."
        if long_term
        else "Search earlier (evicted) context.",
        _obj(
            {
                "query": _str("What to look for, in plain words."),
                "token_budget": {
                    "type": "integer",
                    "description": "At most this many tokens of long-term memory (default 800).",
                },
            }
            if long_term
            else {"query": _str("What to look for, in plain words.")},
            ["query"],
        ),
        _recall,
    )
    remember = tool(
        "veil_remember",
        "Remember a durable fact or decision about this project.",
        _obj({"text": _str("The fact or decision, as a full sentence.")}, ["text"]),
        _remember,
    )
    history = tool(
        "veil_history",
        "Every value a fact has had, oldest first, with validity windows.",
        _obj(
            {
                "subject": _str("Whose fact: 'user', or an entity's name (a tool, a file…)."),
                "relation": _str("Which fact, e.g. prefers, uses_tool, located_at."),
            },
            ["subject", "relation"],
        ),
        _history,
    )
    return [
        recall,
        *([remember] if extracts else []),
        *([history] if long_term else []),
        tool(
            "veil_manifest",
            "What is loaded in the context window now, with scores.",
            _obj({}),
            _manifest,
        ),
        tool(
            "veil_load",
            "Load an item (pointer or id) back into the context by hand.",
            _obj({"pointer": _POINTER}, ["pointer"]),
            _load,
        ),
        tool(
            "veil_pin",
            "Pin an item so it is never evicted (pinned=false unpins).",
            _obj(
                {
                    "id": _ITEM_ID,
                    "pinned": {
                        "type": "boolean",
                        "description": "true pins (the default), false unpins.",
                    },
                },
                ["id"],
            ),
            _pin,
        ),
        tool(
            "veil_evict",
            "Move an item out of the context to warm memory.",
            _obj({"id": _ITEM_ID}, ["id"]),
            _evict,
        ),
        tool(
            "veil_expand",
            "Restore an evicted item from its pointer (veil://warm/... or "
            "veil://cold/...), byte-identical.",
            _obj({"pointer": _POINTER}, ["pointer"]),
            _expand,
        ),
        tool(
            "veil_attempts",
            "What was already tried for the current goal, with outcomes and error fingerprints.",
            _obj({}),
            _attempts,
        ),
        tool(
            "veil_conflicts",
            "Unresolved contradictions between beliefs in the context.",
            _obj({}),
            _conflicts,
        ),
        tool(
            "veil_resolve",
            "Settle a contradiction: which item to keep and why.",
            _obj(
                {
                    "conflict_id": _str("The contradiction's id, as veil_conflicts lists it."),
                    "keep": _str("The id of the item that is right."),
                    "reason": _str("Why, in a sentence."),
                },
                ["conflict_id", "keep", "reason"],
            ),
            _resolve,
        ),
        tool(
            "veil_mark_turn",
            "Reclassify a turn (intent, correction, decision, action, status, exploration).",
            _obj(
                {
                    "id": _str("The turn's item id, as the manifest shows it."),
                    "kind": {
                        "type": "string",
                        "enum": list(TURN_KINDS),
                        "description": "What the turn is.",
                    },
                },
                ["id", "kind"],
            ),
            _mark_turn,
        ),
    ]
