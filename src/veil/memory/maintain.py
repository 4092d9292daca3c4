"""``maintain``: episode consolidation and the curated wiki.

Consolidation is the only LLM use besides ``remember``: old interaction/outcome episodes are
summarised into fewer episodes with lineage (``derived_from``; the sources get
``consolidated_into`` and leave the search indexes but keep their rows). Failures, fixes and
commitments are never summarised: the first occurrence of each is kept verbatim and later
duplicates are folded into it without a model.

The wiki is compiled without a model, from trusted (user or system authority), grounded,
uncontested, current facts only — one section per subject — so nothing in it was invented.

Everything one ``maintain`` decides is appended as one atomic batch: an interruption leaves the
old state or the new one, never a mix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from veil.clock import Clock, format_time
from veil.memory import events as build
from veil.memory.config import MemoryConfig
from veil.memory.entities import USER, normalise
from veil.memory.events import WikiSection
from veil.memory.extraction import ExtractionParseError, first_json_object
from veil.memory.model import Episode, EpisodeKind, Fact
from veil.memory.projection import EPISODES, FACTS, WIKI
from veil.memory.rows import episode_from_row, fact_from_row
from veil.tape import Event, Store, new_id
from veil.tape.recorder import Recorder

KEEP_VERBATIM = ("failure", "fix", "commitment")
CONSOLIDATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "episodes": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": ["interaction", "outcome"]},
                    "text": {"type": "string"},
                    "source_ids": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["kind", "text", "source_ids"],
            },
        }
    },
    "required": ["episodes"],
}
CONSOLIDATION_PROMPT = """Consolidate these old episodes of one person's memory into fewer,
denser episodes. Keep every concrete detail (names, dates, numbers, decisions). Each output
episode lists the ids of the input episodes it replaces in "source_ids"; every input id must
appear in exactly one output. Return only JSON: {"episodes": [{"kind", "text", "source_ids"}]}."""


@dataclass(frozen=True)
class MaintainReport:
    wiki_sections: int
    wiki_removed: int
    consolidated: tuple[str, ...]
    created: tuple[str, ...]
    duplicates_folded: tuple[str, ...]
    llm_calls: int
    error: str | None = None


def compile_wiki(facts: Sequence[Fact]) -> list[WikiSection]:
    """One section per subject of trusted, grounded, uncontested current facts."""
    by_subject: dict[str, list[Fact]] = {}
    for fact in facts:
        if (
            fact.status != "current"
            or fact.trust < 2
            or fact.contested_with
            or "ungrounded" in fact.flags
        ):
            continue
        by_subject.setdefault(_key(fact), []).append(fact)
    sections: list[WikiSection] = []
    for key in sorted(by_subject, key=lambda k: (k != USER, k)):
        items = sorted(by_subject[key], key=lambda f: (f.relation, f.statement))
        title = "The user" if key == USER else items[0].subject
        text = "\n".join([f"### {title}", *(f"- {f.statement}" for f in items)])
        sections.append(WikiSection(key, title, text, tuple(f.id for f in items)))
    return sections


def _key(fact: Fact) -> str:
    return USER if fact.subject == USER else normalise(fact.subject)


class Maintainer:
    """One ``maintain`` run per :meth:`run`; its events are Veil's, all at the run's ``now``
    (a consolidated episode at the time of its latest source)."""

    def __init__(self, store: Store, config: MemoryConfig, clock: Clock) -> None:
        self.store = store
        self.config = config
        self.clock = clock

    def run(
        self,
        user_id: str,
        *,
        now: datetime,
        call: Callable[[list[dict[str, str]], dict[str, Any]], str] | None,
    ) -> MaintainReport:
        facts = [
            fact_from_row(r, now, self.config)
            for r in self.store.fetch(
                FACTS,
                scope=user_id,
                where={"state": "current"},
                order_by=["recorded_seq"],
                limit=self.config.wiki_max_facts,
            )
        ]
        sections = compile_wiki(facts)
        existing = {str(r["section"]) for r in self.store.fetch(WIKI, scope=user_id)}
        removed = sorted(existing - {s.section for s in sections})
        rec = Recorder(self.store, user_id, "veil", self.clock)
        events: list[Event] = [build.wiki(rec, sections, removed, at=now)]
        folded, fold_events = self._fold_duplicates(rec, now)
        events.extend(fold_events)
        consolidated: list[str] = []
        created: list[str] = []
        calls = 0
        error: str | None = None
        old = self._old_episodes(user_id, now, exclude=set(folded))
        if len(old) >= self.config.consolidate_min_episodes and call is not None:
            calls = 1
            try:
                output = call(_consolidation_messages(old), CONSOLIDATION_SCHEMA)
                merged = _parse_consolidation(output, {e.id for e in old})
            except (ExtractionParseError, ValueError) as exc:
                error = f"consolidation skipped: {exc}"
                merged = []
            except Exception as exc:  # the model's failure is reported, never raised
                error = f"consolidation skipped: model call failed: {type(exc).__name__}: {exc}"
                merged = []
            by_id = {e.id: e for e in old}
            for kind, text, sources in merged:
                episode_id = new_id("ep")
                episode = build.episode(
                    rec,
                    episode_id=episode_id,
                    kind=kind,
                    text=text,
                    due=None,
                    event_id=by_id[sources[0]].event_id,
                    session_id=None,
                    at=max(by_id[s].at for s in sources),
                    derived_from=sources,
                )
                events.append(episode)
                events.append(build.consolidated(rec, sources, into=episode_id, at=now))
                created.append(episode_id)
                consolidated.extend(sources)
        self.store.append(events)
        return MaintainReport(
            len(sections),
            len(removed),
            tuple(consolidated),
            tuple(created),
            tuple(folded),
            calls,
            error,
        )

    def _fold_duplicates(self, rec: Recorder, now: datetime) -> tuple[list[str], list[Event]]:
        """Later repeats of a failure/fix/commitment fold into the first occurrence."""
        rows = self.store.fetch(
            EPISODES,
            scope=rec.scope,
            where={"kind": list(KEEP_VERBATIM), "consolidated_into": None},
            order_by=["at", "recorded_seq"],
            limit=self.config.consolidate_max_episodes,
        )
        first: dict[tuple[str, str, str | None], str] = {}
        folded: list[str] = []
        events: list[Event] = []
        for episode in (episode_from_row(r) for r in rows):
            key = (episode.kind, normalise(episode.text), episode.due)
            if key not in first:
                first[key] = episode.id
                continue
            folded.append(episode.id)
            events.append(build.consolidated(rec, [episode.id], into=first[key], at=now))
        return folded, events

    def _old_episodes(self, user_id: str, now: datetime, exclude: set[str]) -> list[Episode]:
        cutoff = format_time(now - timedelta(days=self.config.consolidate_after_days))
        rows = self.store.fetch(
            EPISODES,
            scope=user_id,
            where={"kind": ["interaction", "outcome"], "consolidated_into": None},
            order_by=["at"],
            limit=self.config.consolidate_max_episodes,
        )
        return [
            episode_from_row(r)
            for r in rows
            if str(r["at"]) < cutoff and str(r["episode_id"]) not in exclude
        ]


def _consolidation_messages(episodes: Sequence[Episode]) -> list[dict[str, str]]:
    listing = "\n".join(
        f"- id={e.id} | {e.at.date().isoformat()} | {e.kind} | {e.text}" for e in episodes
    )
    return [
        {"role": "system", "content": CONSOLIDATION_PROMPT},
        {"role": "user", "content": f"Episodes:\n{listing}"},
    ]


def _parse_consolidation(output: str, ids: set[str]) -> list[tuple[EpisodeKind, str, list[str]]]:
    """Validated merges; an output that covers an id twice or invents one is rejected whole,
    and inputs the model left out simply stay as they are."""
    parsed = first_json_object(output)
    if parsed is None:
        raise ExtractionParseError("no JSON object in the output")
    items = parsed.get("episodes")
    if not isinstance(items, list):
        raise ExtractionParseError('"episodes" must be a list')
    seen: set[str] = set()
    merges: list[tuple[EpisodeKind, str, list[str]]] = []
    for item in cast(list[Any], items):
        if not isinstance(item, dict):
            raise ValueError("each episode must be an object")
        entry = cast(dict[str, Any], item)
        sources = entry.get("source_ids")
        text = entry.get("text")
        kind = entry.get("kind", "interaction")
        if not isinstance(sources, list) or not isinstance(text, str) or not text.strip():
            raise ValueError("each episode needs text and source_ids")
        source_ids = [str(s) for s in cast(list[Any], sources)]
        if not set(source_ids) <= ids or seen & set(source_ids) or not source_ids:
            raise ValueError("source_ids must be input ids, each used once")
        seen.update(source_ids)
        if len(source_ids) > 1:
            merges.append(
                ("outcome" if kind == "outcome" else "interaction", text.strip(), source_ids)
            )
    return merges
