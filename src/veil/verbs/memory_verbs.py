"""The long-term memory's verbs: remember, recall, facts, history, confirm, dispute.

Each is defined here once — its description, its arguments with their defaults, and the text a
model reads of its result; the agent's tools, ``veil mcp``, the HTTP API, ``veil memory`` and
both framework adapters offer it from this definition (docs/architecture.md, "Verbs").
The memory layer is imported when a verb runs, never when this module is: building ``veil``'s
command line stays quick.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated

from veil.verbs.signature import NON_EMPTY, Range
from veil.verbs.verb import Binding, Earlier, Services, verb

if TYPE_CHECKING:
    from veil.memory import Fact, Memory, Recall, WriteReport

RECALL_TOKEN_BUDGET = 1000
"""The one default budget of recall, on every surface (and ``Memory.recall``'s own)."""
MAX_TOKEN_BUDGET = 100_000
MAX_FACTS = 200
EARLIER_LIMIT = 8
"""How many earlier results recall lists at most."""


@dataclass(frozen=True)
class RecallAnswer:
    """What recall found: the long-term memory's answer (None without one) and earlier
    results of the working memory, with the tool that restores them."""

    recall: Recall | None
    earlier: tuple[Earlier, ...] = ()
    expand_tool: str = ""


@dataclass(frozen=True)
class FactList:
    """The newest ``limit`` facts of ``total`` that matched."""

    facts: tuple[Fact, ...]
    total: int

    @property
    def truncated(self) -> bool:
        return len(self.facts) < self.total


def _memory(on: Services) -> Memory:
    if on.memory is None:
        raise LookupError("long-term memory is not enabled here")
    return on.memory


def _remember_text(report: WriteReport) -> str:
    if report.error:
        return f"the text is kept as evidence, but nothing was extracted: {report.error}"
    counts = {k: n for k, n in report.counts().items() if n}
    if not counts:
        return "nothing new to remember in that"
    words = [
        f"{n} {k[:-1] if n == 1 and k in ('facts', 'episodes') else k}" for k, n in counts.items()
    ]
    return "remembered: " + ", ".join(words)


async def _aremember(
    on: Services, who: Binding, *, text: str, at: datetime | None = None
) -> WriteReport:
    return await _memory(on).aremember(
        text, user_id=who.user_id, author=who.author, at=at, session_id=who.session_id
    )


@verb(needs=("model",), read_only=False, text=_remember_text, twin=_aremember)
def remember(
    on: Services, who: Binding, *, text: Annotated[str, NON_EMPTY], at: datetime | None = None
) -> WriteReport:
    """Remember a durable fact, preference or decision, as evidence: a new value of something
    known supersedes the old one, which stays in history.

    Args:
        text: What was said or observed, as a full sentence with who and what.
        at: When it was said, if not now (ISO-8601 with offset).
    """
    return _memory(on).remember(
        text, user_id=who.user_id, author=who.author, at=at, session_id=who.session_id
    )


def _recall_text(answer: RecallAnswer) -> str:
    parts: list[str] = []
    if answer.recall is not None:
        parts.append(answer.recall.text or "(long-term memory has nothing on this)")
    if answer.earlier:
        parts.append(
            f"Earlier tool results (not in the context; {answer.expand_tool} restores one):"
        )
        parts.extend(
            f"- {e.pointer} {e.tool} {e.target} ({e.tokens} tokens)" for e in answer.earlier
        )
    return "\n".join(parts) or "nothing found"


def _earlier(on: Services, query: str) -> tuple[tuple[Earlier, ...], str]:
    if on.working is None or not query.strip():
        return (), ""
    return tuple(on.working.search(query, limit=EARLIER_LIMIT)), on.working.expand_tool


async def _arecall(
    on: Services,
    who: Binding,
    *,
    query: str,
    token_budget: int = RECALL_TOKEN_BUDGET,
    as_of: datetime | None = None,
) -> RecallAnswer:
    found = None
    if on.memory is not None:
        found = await on.memory.arecall(
            query, user_id=who.user_id, token_budget=token_budget, as_of=as_of
        )
    earlier, tool = _earlier(on, query)
    return RecallAnswer(found, earlier, tool)


@verb(needs=("memory", "working"), read_only=True, text=_recall_text, twin=_arecall)
def recall(
    on: Services,
    who: Binding,
    *,
    query: str,
    token_budget: Annotated[int, Range(0, MAX_TOKEN_BUDGET)] = RECALL_TOKEN_BUDGET,
    as_of: datetime | None = None,
) -> RecallAnswer:
    """Search long-term memory (current facts, episodes, unverified claims) and earlier tool
    results moved out of the context (with pointers to restore them). Never calls a model.

    Args:
        query: What to look for, in plain words (empty: the session-start briefing).
        token_budget: At most this many tokens of long-term memory.
        as_of: Answer with what was true then (ISO-8601 with offset).
    """
    found = None
    if on.memory is not None:
        found = on.memory.recall(query, user_id=who.user_id, token_budget=token_budget, as_of=as_of)
    earlier, tool = _earlier(on, query)
    return RecallAnswer(found, earlier, tool)


def _fact_line(f: Fact) -> str:
    until = f.valid_to.date() if f.valid_to else "now"
    return (
        f"- {f.object} ({f.status}) from {f.valid_from.date()} to {until}: {f.statement} [{f.id}]"
    )


def _facts_text(found: FactList) -> str:
    if not found.facts:
        return "no facts"
    lines = [_fact_line(f) for f in found.facts]
    if found.truncated:
        lines.append(f"(the newest {len(found.facts)} of {found.total})")
    return "\n".join(lines)


@verb(needs=("memory",), read_only=True, text=_facts_text)
def facts(
    on: Services,
    who: Binding,
    *,
    subject: str | None = None,
    relation: str | None = None,
    include_history: bool = False,
    limit: Annotated[int, Range(1, MAX_FACTS)] = MAX_FACTS,
) -> FactList:
    """List the facts the memory holds, newest last (for a question, recall ranks better).

    Args:
        subject: Only facts about this subject: 'user', or an entity's name.
        relation: Only this relation, e.g. prefers, uses_tool, located_at.
        include_history: Also list superseded and disputed values.
        limit: At most this many facts, the newest.
    """
    found = _memory(on).facts(
        who.user_id, include_history=include_history, subject=subject, relation=relation
    )
    return FactList(tuple(found[-limit:]), len(found))


def _history_text(found: Sequence[Fact]) -> str:
    if not found:
        return "no history for that subject and relation"
    return "\n".join(_fact_line(f) for f in found)


@verb(needs=("memory",), read_only=True, text=_history_text)
def history(
    on: Services,
    who: Binding,
    *,
    subject: Annotated[str, NON_EMPTY],
    relation: Annotated[str, NON_EMPTY],
) -> list[Fact]:
    """Every value a fact has had, oldest first, with validity windows.

    Args:
        subject: Whose fact: 'user', or an entity's name (a tool, a file…).
        relation: Which fact, e.g. prefers, uses_tool, located_at.
    """
    return _memory(on).history(who.user_id, subject, relation)


def _fact_text(fact: Fact) -> str:
    return f"{fact.id} is now {fact.status}: {fact.statement}"


@verb(needs=("memory",), read_only=False, text=_fact_text)
def confirm(on: Services, who: Binding, *, fact_id: Annotated[str, NON_EMPTY]) -> Fact:
    """Re-affirm a fact that is still true: it is no longer shown as possibly stale.

    Args:
        fact_id: The id of a fact, as recall, facts or history show it.
    """
    return _memory(on).confirm(fact_id, user_id=who.user_id, actor=who.author)


@verb(needs=("memory",), read_only=False, text=_fact_text)
def dispute(
    on: Services,
    who: Binding,
    *,
    fact_id: Annotated[str, NON_EMPTY],
    reason: Annotated[str, NON_EMPTY],
) -> Fact:
    """Mark a fact as wrong, with why: it leaves recall and stays in history.

    Args:
        fact_id: The id of a fact, as recall, facts or history show it.
        reason: Why the fact is wrong, in a sentence.
    """
    return _memory(on).dispute(fact_id, user_id=who.user_id, actor=who.author, reason=reason)


__all__ = [
    "MAX_FACTS",
    "MAX_TOKEN_BUDGET",
    "RECALL_TOKEN_BUDGET",
    "FactList",
    "RecallAnswer",
    "confirm",
    "dispute",
    "facts",
    "history",
    "recall",
    "remember",
]
