"""The long-term memory briefing a session starts with: what matters most whatever is asked,
then what relates to the task — one rule for ``veil``'s harness and the Claude Code / Codex
hooks.

Recall has a relevance floor (an unrelated query gets no facts, :mod:`veil.memory.recall`), so
a briefing made only from the task would leave out the standing facts a coding task rarely
names — the user's preferred tools, the project's conventions. The briefing is two recalls in
one budget each: the empty query (the most important facts, whatever was asked) and the task;
lines the first already showed are not repeated, and headings left with nothing under them
are dropped."""

from __future__ import annotations

from dataclasses import dataclass

from veil.memory.memory import Memory
from veil.memory.model import Fact


@dataclass(frozen=True)
class Briefing:
    text: str
    """Markdown, empty when memory holds nothing to say."""
    facts: tuple[Fact, ...]
    """Every fact shown, once."""


def brief(memory: Memory, task: str, *, user_id: str, token_budget: int) -> Briefing:
    """The briefing for ``task`` (see the module docstring)."""
    seen: set[str] = set()
    texts: list[str] = []
    facts: dict[str, Fact] = {}
    for query in dict.fromkeys(("", task)):
        found = memory.recall(query, user_id=user_id, token_budget=token_budget)
        if not (found.facts or found.episodes or found.claims or found.contested):
            continue
        for fact in found.facts:
            facts.setdefault(fact.id, fact)
        lines = [
            line
            for line in found.text.strip().splitlines()
            if line.startswith("#") or line not in seen
        ]
        seen.update(lines)
        texts.append("\n".join(without_empty_sections(lines)))
    return Briefing("\n".join(t for t in texts if t.strip()), tuple(facts.values()))


def without_empty_sections(lines: list[str]) -> list[str]:
    """Markdown ``lines`` without headings that head nothing (their lines were shown above)."""
    out: list[str] = []
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else "#"
        if line.startswith("#") and (following.startswith("#") or not following.strip()):
            continue
        out.append(line)
    return out


def memory_block(text: str) -> str:
    """How long-term memory's text reaches a model: one wording for the harness's system
    prompt and the hooks' additional context (empty text: nothing)."""
    if not text.strip():
        return ""
    return (
        "<veil-memory>\nWhat Veil's long-term memory holds for this project:\n"
        f"{text.strip()}\n</veil-memory>"
    )
