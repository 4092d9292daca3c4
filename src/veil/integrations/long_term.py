"""The memory tools' bodies, shared by the adapters: recall and remember over a
:class:`~veil.memory.Memory`, answering in text a model reads.

Both are bound to one ``user_id`` and one author when the tools are built — the model never
names whose memory it reads or who is speaking (the known fault of trusting the caller).
Recall never calls a model; it also lists earlier tool results of the conversation that
match (when a :class:`ContextWindow` is given), with the pointer that restores each.
"""

from __future__ import annotations

from dataclasses import dataclass

from veil.integrations.window import EXPAND_TOOL, ContextWindow
from veil.memory import Memory
from veil.memory.model import Author

MAX_TOKEN_BUDGET = 8_000
RECALL_MIN_SIMILARITY = 0.3

RECALL_DESCRIPTION = (
    "Look up what long-term memory knows about a question or topic: current facts (with "
    "what they replaced), recent episodes and unverified claims, as text within a token "
    "budget; also earlier tool results of this conversation that were moved out of the "
    "context. Use it before answering anything that depends on what was said or found "
    "earlier."
)
QUERY_DESCRIPTION = "The question or topic, in plain words."
BUDGET_DESCRIPTION = f"At most this many tokens of text (default 800, at most {MAX_TOKEN_BUDGET})."
REMEMBER_DESCRIPTION = (
    "Keep something worth remembering beyond this conversation (a preference, a decision, a "
    "fact about the user or the project). A model extracts the facts; a new value of "
    "something known supersedes the old one, which stays in history."
)
TEXT_DESCRIPTION = "What to remember, as a full sentence with who and what."


@dataclass(frozen=True)
class MemoryBinding:
    """Whose memory the tools use and whose word what they remember counts as."""

    memory: Memory
    user_id: str
    author: Author = "assistant"


async def recall_text(
    binding: MemoryBinding,
    query: str,
    token_budget: int = 800,
    window: ContextWindow | None = None,
) -> str:
    """What memory and the conversation's evicted results hold about ``query``."""
    budget = max(0, min(int(token_budget), MAX_TOKEN_BUDGET))
    result = await binding.memory.arecall(query, user_id=binding.user_id, token_budget=budget)
    parts = [result.text or "(long-term memory has nothing on this)"]
    if window is not None and query.strip():
        found = [
            i
            for i in window.engine.search(query, limit=8, min_similarity=RECALL_MIN_SIMILARITY)
            if i.tier != "live"
        ]
        if found:
            parts.append(f"Earlier tool results (not in the context; {EXPAND_TOOL} restores one):")
            parts.extend(
                f"- {i.pointer} {i.tool_name or i.kind} {i.target or ''} ({i.tokens} tokens)"
                for i in found
            )
    return "\n".join(parts)


async def remember_text(binding: MemoryBinding, text: str) -> str:
    """Remember ``text`` (one model call) and say what was stored."""
    if binding.memory.complete is None:
        return (
            "not remembered: this memory has no model to extract facts with "
            "(Memory(..., complete=...))"
        )
    report = await binding.memory.aremember(text, user_id=binding.user_id, author=binding.author)
    if report.error:
        return f"the text is kept as evidence, but nothing was extracted: {report.error}"
    counts = {k: n for k, n in report.counts().items() if n}
    if not counts:
        return "nothing new to remember in that"
    words = [
        f"{n} {k[:-1] if n == 1 and k in ('facts', 'episodes') else k}" for k, n in counts.items()
    ]
    return "remembered: " + ", ".join(words)
