"""The long-term memory (seeds/veracium.txt): memory changes only through evidence.

``remember`` records the evidence on the tape first — nothing the caller said can be lost —
then makes exactly one ``complete`` call (plus at most one repair retry when the output does not
parse), validates what came back, decides supersession with pure functions and appends the
outcome as one atomic batch of events. There is no update or delete: a new value supersedes the
old one and the old one stays, with its validity window, in ``history``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, cast

from veil.clock import Clock, SystemClock, ensure_utc, format_time, parse_time
from veil.embed.protocol import Embedder
from veil.memory.config import MemoryConfig, Relation
from veil.memory.entities import USER, candidate_mentions, entity_key, value_key
from veil.memory.extraction import (
    EXTRACTION_SCHEMA,
    EpisodeItem,
    ExtractionParseError,
    FactItem,
    PromptFact,
    build_messages,
    calendar_lines,
    parse_output,
    repair_messages,
    validate_items,
)
from veil.memory.grounding import ungrounded_specifics
from veil.memory.model import (
    AUTHORS,
    Author,
    Episode,
    EpisodeKind,
    Fact,
    FactState,
    FactStatus,
    InvalidItem,
    Provenance,
    Volatility,
    WriteReport,
)
from veil.memory.projection import ENTITIES, EPISODES, EVIDENCE, FACTS, MemoryProjection
from veil.memory.supersession import Candidate, CurrentFact, decide, supersession_reason
from veil.memory.trust import disclosure_of, is_third_party_claim, trust_of
from veil.tape import Event, JSONValue, Row, Store, new_id, open_store
from veil.tape.events import validate_scope

Complete = Callable[..., "str | Awaitable[str]"]
"""``complete(messages: list[dict], *, json_schema: dict | None) -> str`` (sync or async)."""

ROLE_AUTHORS: Mapping[str, Author] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "tool": "tool",
}


class MemoryError(Exception):
    """Base class of long-term memory errors."""


class EvidenceTooLarge(MemoryError, ValueError):
    """Evidence longer than ``MemoryConfig.max_evidence_chars``; nothing was written."""


class UnknownFact(MemoryError, KeyError):
    """A fact id that does not exist in this user's memory."""


class NoModel(MemoryError):
    """``remember`` needs a ``complete`` callable: there is no LLM-free extraction mode."""


@dataclass(frozen=True)
class _Prepared:
    evidence: Event
    text: str
    author: Author
    chain: tuple[Author, ...]
    messages: list[dict[str, str]]
    roles: tuple[tuple[Author, str], ...]
    calendar: frozenset[date]


class Memory:
    """Long-term memory over a tape. ``target`` is a path, ``sqlite:///…`` or ``postgresql://…``."""

    def __init__(
        self,
        target: str | Path | Store,
        *,
        complete: Complete | None = None,
        embedder: Embedder | None = None,
        config: MemoryConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.config = config or MemoryConfig()
        self.clock: Clock = clock or SystemClock()
        self.complete = complete
        if embedder is None:
            from veil.embed import default_embedder

            embedder = default_embedder()
        self.embedder = embedder
        if isinstance(target, (str, Path)):
            self.store: Store = open_store(target, embedder=embedder, clock=self.clock)
            self._owns_store = True
        else:
            self.store = target
            self._owns_store = False
        self.store.register(MemoryProjection())
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def close(self) -> None:
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- remember -----------------------------------------------------------------------

    def remember(
        self,
        text_or_messages: str | Sequence[Mapping[str, Any]],
        *,
        user_id: str,
        author: Author = "user",
        at: datetime | None = None,
        derived_from: Sequence[str] | None = None,
        source: str | None = None,
        session_id: str | None = None,
        tool_call_id: str | None = None,
    ) -> WriteReport:
        """Record evidence and what the model extracts from it. At most one LLM call (plus one
        repair retry on unparseable output). The evidence is on the tape whatever happens."""
        with self._user_lock(user_id):
            prepared = self._prepare(
                text_or_messages,
                user_id=user_id,
                author=author,
                at=at,
                derived_from=derived_from,
                source=source,
                session_id=session_id,
                tool_call_id=tool_call_id,
            )
            complete = self._require_model()

            def call(messages: list[dict[str, str]]) -> str:
                return self._call_sync(complete, messages)

            return self._extract_and_apply(prepared, call)

    async def aremember(
        self,
        text_or_messages: str | Sequence[Mapping[str, Any]],
        *,
        user_id: str,
        author: Author = "user",
        at: datetime | None = None,
        derived_from: Sequence[str] | None = None,
        source: str | None = None,
        session_id: str | None = None,
        tool_call_id: str | None = None,
    ) -> WriteReport:
        """Async twin of :meth:`remember`; an async ``complete`` is awaited, a sync one runs in
        a worker thread, and store I/O runs off the event loop."""
        complete = self._require_model()
        loop = asyncio.get_running_loop()

        def call(messages: list[dict[str, str]]) -> str:
            future = asyncio.run_coroutine_threadsafe(self._call_async(complete, messages), loop)
            return future.result()

        def work() -> WriteReport:
            with self._user_lock(user_id):
                prepared = self._prepare(
                    text_or_messages,
                    user_id=user_id,
                    author=author,
                    at=at,
                    derived_from=derived_from,
                    source=source,
                    session_id=session_id,
                    tool_call_id=tool_call_id,
                )
                return self._extract_and_apply(prepared, call)

        return await asyncio.to_thread(work)

    def _require_model(self) -> Complete:
        if self.complete is None:
            raise NoModel(
                "remember() needs a complete callable: Memory(..., complete=fn). Veil has no "
                "LLM-free extraction mode by design; any local model works (see examples/)."
            )
        return self.complete

    def _user_lock(self, user_id: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(user_id, threading.Lock())

    def _prepare(
        self,
        text_or_messages: str | Sequence[Mapping[str, Any]],
        *,
        user_id: str,
        author: Author,
        at: datetime | None,
        derived_from: Sequence[str] | None,
        source: str | None,
        session_id: str | None,
        tool_call_id: str | None,
    ) -> _Prepared:
        validate_scope(user_id)
        if author not in AUTHORS:
            raise ValueError(f"author must be one of {', '.join(AUTHORS)}, got {author!r}")
        roles = _roles(text_or_messages, author)
        text = "\n".join(f"{r}: {c}" if len(roles) > 1 else c for r, c in roles)
        if not text.strip():
            raise ValueError("nothing to remember: the evidence is empty")
        if len(text) > self.config.max_evidence_chars:
            raise EvidenceTooLarge(
                f"evidence is {len(text):,} characters; the limit is "
                f"{self.config.max_evidence_chars:,} (MemoryConfig.max_evidence_chars). Split it "
                "into separate remember() calls: one call makes at most one LLM call."
            )
        when = ensure_utc(at) if at is not None else self.clock.now()
        chain = self._chain(user_id, derived_from or ())
        evidence_author: Author = min((a for a, _ in roles), key=_authority_key)
        payload: dict[str, JSONValue] = {
            "text": text,
            "author": evidence_author,
            "source": source,
            "session_id": session_id,
            "tool_call_id": tool_call_id,
            "derived_from": list(derived_from or ()),
        }
        if len(roles) > 1:
            payload["messages"] = [{"role": r, "content": c} for r, c in roles]
        evidence = Event(
            id=new_id("ev"),
            scope=user_id,
            kind="memory.evidence",
            at=when,
            actor=evidence_author,
            payload=payload,
            provenance={"session_id": session_id, "tool_call_id": tool_call_id, "source": source},
        )
        (evidence,) = self.store.append([evidence])
        messages = build_messages(
            evidence=text,
            author=evidence_author,
            at=when,
            config=self.config,
            current_facts=self._prompt_facts(user_id, text),
        )
        calendar = frozenset(date.fromisoformat(line[:10]) for line in calendar_lines(when))
        return _Prepared(evidence, text, evidence_author, chain, messages, roles, calendar)

    def _chain(self, user_id: str, derived_from: Sequence[str]) -> tuple[Author, ...]:
        if not derived_from:
            return ()
        rows = self.store.fetch(EVIDENCE, scope=user_id, where={"event_id": list(derived_from)})
        found: dict[str, Author] = {str(r["event_id"]): cast(Author, r["author"]) for r in rows}
        missing = [i for i in derived_from if i not in found]
        if missing:
            raise ValueError(f"derived_from names unknown evidence ids for this user: {missing}")
        return tuple(found[i] for i in derived_from)  # pyright: ignore[reportReturnType]

    def _prompt_facts(self, user_id: str, text: str) -> list[PromptFact]:
        mentions = {
            entity_key(m, aliases=self.config.aliases, user_names=self.config.user_names)
            for m in candidate_mentions(text)
        }
        known = self.store.fetch(ENTITIES, scope=user_id, where={"key": sorted(mentions)})
        keys = sorted({USER, *(str(r["key"]) for r in known)})
        rows = self.store.fetch(
            FACTS,
            scope=user_id,
            where={"subject_key": keys, "state": "current"},
            order_by=["-last_confirmed_at"],
            limit=self.config.max_facts_in_prompt,
        )
        return [
            PromptFact(
                str(r["fact_id"]),
                str(r["subject"]),
                str(r["relation"]),
                str(r["object"]),
                str(r["statement"]),
            )
            for r in rows
        ]

    # ---- the LLM call -------------------------------------------------------------------

    def _call_sync(self, complete: Complete, messages: list[dict[str, str]]) -> str:
        timeout = self.config.llm_timeout_s
        pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="veil-complete"
        )
        try:
            future = pool.submit(complete, messages, json_schema=EXTRACTION_SCHEMA)
            result: Any = future.result(timeout=timeout)
            if inspect.isawaitable(result):
                result = asyncio.run(_await(result, timeout))
        except concurrent.futures.TimeoutError:
            raise TimeoutError(f"the model did not answer within {timeout:g} s") from None
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
        return cast(str, result)

    async def _call_async(self, complete: Complete, messages: list[dict[str, str]]) -> str:
        timeout = self.config.llm_timeout_s
        try:
            if inspect.iscoroutinefunction(complete) or inspect.iscoroutinefunction(
                getattr(complete, "__call__", None)  # noqa: B004 - async __call__ objects
            ):
                pending: Any = complete(messages, json_schema=EXTRACTION_SCHEMA)
                result: Any = await asyncio.wait_for(pending, timeout)
            else:
                result = await asyncio.wait_for(
                    asyncio.to_thread(complete, messages, json_schema=EXTRACTION_SCHEMA), timeout
                )
                if inspect.isawaitable(result):
                    result = await asyncio.wait_for(result, timeout)
        except TimeoutError:
            raise TimeoutError(f"the model did not answer within {timeout:g} s") from None
        return cast(str, result)

    def _extract_and_apply(
        self, prepared: _Prepared, call: Callable[[list[dict[str, str]]], str]
    ) -> WriteReport:
        evidence = prepared.evidence
        calls = 0
        parsed: dict[str, list[Any]] | None = None
        error: str | None = None
        messages = prepared.messages
        for attempt in range(2):
            calls += 1
            try:
                output = call(messages)
            except Exception as exc:  # the model's failure is reported, never raised
                error = f"model call failed: {type(exc).__name__}: {exc}"
                break
            try:
                parsed = parse_output(output)
                error = None
                break
            except ExtractionParseError as exc:
                error = f"unparseable model output: {exc}"
                if attempt == 0:
                    messages = repair_messages(messages, str(output), str(exc))
        if parsed is None:
            self.store.append([self._extraction_event(evidence, "failed", error, calls, [])])
            return WriteReport(evidence_id=evidence.id, llm_calls=calls, error=error)
        facts, episodes, invalid = validate_items(parsed)
        return self._apply(prepared, facts, episodes, invalid, calls)

    def _extraction_event(
        self,
        evidence: Event,
        status: str,
        error: str | None,
        calls: int,
        invalid: Sequence[InvalidItem],
        notes: Sequence[str] = (),
    ) -> Event:
        return Event(
            id=new_id("ev"),
            scope=evidence.scope,
            kind="memory.extraction",
            at=evidence.at,
            actor="veil",
            payload={
                "evidence_id": evidence.id,
                "status": status,
                "error": error,
                "llm_calls": calls,
                "invalid": [{"item": _jsonable(i.item), "reason": i.reason} for i in invalid],
                "notes": list(notes),
            },
        )

    # ---- decisions ----------------------------------------------------------------------

    def _apply(
        self,
        prepared: _Prepared,
        facts: list[FactItem],
        episodes: list[EpisodeItem],
        invalid: list[InvalidItem],
        calls: int,
    ) -> WriteReport:
        evidence = prepared.evidence
        user_id = evidence.scope
        at = evidence.at
        events: list[Event] = []
        added: list[str] = []
        superseded: list[str] = []
        reinforced: list[str] = []
        quarantined: list[str] = []
        contested: list[str] = []
        ungrounded: list[str] = []
        notes: list[str] = []
        # Facts decided in this batch are visible to later items of the same batch.
        pending: dict[tuple[str, str], list[CurrentFact]] = {}
        pending_rows: dict[str, dict[str, JSONValue]] = {}
        closed: set[str] = set()

        def emit(kind: str, payload: dict[str, JSONValue]) -> None:
            events.append(
                Event(
                    id=new_id("ev"),
                    scope=user_id,
                    kind=kind,
                    at=at,
                    actor=prepared.author,
                    payload=payload,
                    provenance={"evidence_id": evidence.id},
                )
            )

        for item in facts:
            subject_key = entity_key(
                item.subject, aliases=self.config.aliases, user_names=self.config.user_names
            )
            if not subject_key:
                invalid.append(
                    InvalidItem(item=item.__dict__, reason="fact: subject resolves to nothing")
                )
                continue
            relation: Relation | None = self.config.relation(item.relation)
            author = self._author_for(prepared, item)
            disclosure = disclosure_of(author, item.claimant)
            if disclosure == "reported" and _quoted(item.object, prepared.text):
                disclosure = "quoted"
            trust = trust_of(author, prepared.chain, disclosure)
            volatility: Volatility = item.volatility or (
                relation.volatility if relation else "durable"
            )
            missing = ungrounded_specifics(
                f"{item.object} {item.statement}", prepared.text, calendar=set(prepared.calendar)
            )
            flags: list[str] = ["ungrounded"] if missing else []
            fact_id = new_id("f")
            row: dict[str, JSONValue] = {
                "fact_id": fact_id,
                "subject": _display_subject(item.subject, subject_key),
                "subject_key": subject_key,
                "relation": item.relation,
                "relation_class": "registered" if relation else "unclassified",
                "object": item.object,
                "object_key": value_key(item.object),
                "statement": item.statement or f"{item.subject} {item.relation} {item.object}.",
                "volatility": volatility,
                "valid_from": format_time(at),
                "valid_to": None,
                "state": "current",
                "superseded_by": None,
                "reason": None,
                "author": author,
                "disclosure": disclosure,
                "claimant": item.claimant,
                "event_id": evidence.id,
                "derived_from": list(
                    cast(list[JSONValue], evidence.payload.get("derived_from") or [])
                ),
                "session_id": cast(str | None, evidence.payload.get("session_id")),
                "tool_call_id": cast(str | None, evidence.payload.get("tool_call_id")),
                "source": cast(str | None, evidence.payload.get("source")),
                "trust": trust,
                "last_confirmed_at": format_time(at),
                "flags": list(flags),
                "contested_with": [],
                "times_used": 0,
                "last_outcome": None,
            }
            if missing:
                ungrounded.append(fact_id)
                notes.append(f"{fact_id}: not in the evidence: {', '.join(missing)}")
            if is_third_party_claim(
                subject_key=subject_key,
                relation=item.relation,
                author=author,
                chain=prepared.chain,
                claimant=item.claimant,
            ):
                row["state"] = "quarantined"
                row["trust"] = 0
                emit("memory.fact", {"fact": row})
                quarantined.append(fact_id)
                continue
            slot = (subject_key, item.relation)
            if slot not in pending:
                pending[slot] = self._current(user_id, subject_key, item.relation)
            current = [f for f in pending[slot] if f.id not in closed]
            decision = decide(
                Candidate(
                    value_key=value_key(item.object),
                    trust=trust,
                    at=at,
                    functional=bool(relation and relation.functional),
                    target=item.supersedes,
                ),
                current,
            )
            notes.extend(decision.notes)
            if decision.action == "reinforce" and decision.reinforce:
                if decision.reinforce in pending_rows:
                    continue  # restated twice in one piece of evidence
                emit(
                    "memory.reinforced",
                    {
                        "fact_id": decision.reinforce,
                        "at": format_time(at),
                        "evidence_id": evidence.id,
                    },
                )
                reinforced.append(decision.reinforce)
                continue
            if decision.superseded_by:
                row["state"] = "superseded"
                row["superseded_by"] = decision.superseded_by
                row["reason"] = "older evidence"
                newer = next(f for f in current if f.id == decision.superseded_by)
                row["valid_to"] = format_time(newer.valid_from)
            emit("memory.fact", {"fact": row})
            added.append(fact_id)
            pending_rows[fact_id] = row
            for old_id in decision.supersede:
                old_value = self._object_of(user_id, old_id, pending_rows)
                emit(
                    "memory.superseded",
                    {
                        "fact_id": old_id,
                        "by": fact_id,
                        "valid_to": format_time(at),
                        "reason": supersession_reason(prepared.text, old_value),
                    },
                )
                superseded.append(old_id)
                closed.add(old_id)
            if decision.contest:
                mine = sorted(decision.contest)
                emit("memory.contested", {"fact_id": fact_id, "contested_with": list(mine)})
                for other in decision.contest:
                    theirs = next(f for f in current if f.id == other)
                    emit(
                        "memory.contested",
                        {
                            "fact_id": other,
                            "contested_with": list(sorted({*theirs.contested_with, fact_id})),
                        },
                    )
                contested.extend([fact_id, *decision.contest])
            if row["state"] == "current":
                pending[slot].append(
                    CurrentFact(fact_id, value_key(item.object), trust, at, tuple(decision.contest))
                )
        episode_ids: list[str] = []
        for ep in episodes:
            episode_id = new_id("ep")
            emit(
                "memory.episode",
                {
                    "episode": {
                        "episode_id": episode_id,
                        "kind": ep.kind,
                        "text": ep.text,
                        "at": format_time(at),
                        "due": ep.due,
                        "event_id": evidence.id,
                        "session_id": cast(str | None, evidence.payload.get("session_id")),
                    }
                },
            )
            episode_ids.append(episode_id)
        events.append(self._extraction_event(evidence, "ok", None, calls, invalid, notes))
        self.store.append(events)
        return WriteReport(
            evidence_id=evidence.id,
            facts=tuple(added),
            superseded=tuple(superseded),
            reinforced=tuple(reinforced),
            quarantined=tuple(quarantined),
            episodes=tuple(episode_ids),
            contested=tuple(dict.fromkeys(contested)),
            invalid=tuple(invalid),
            llm_calls=calls,
            ungrounded=tuple(ungrounded),
        )

    def _author_for(self, prepared: _Prepared, item: FactItem) -> Author:
        """In a conversation, the author of a fact is the author of the message its value came
        from; when no single message contains it, the weakest author present (weakest link)."""
        if len(prepared.roles) == 1:
            return prepared.author
        needle = item.object.casefold()
        holders: list[Author] = [a for a, c in prepared.roles if needle and needle in c.casefold()]
        if holders:
            return min(holders, key=_authority_key)
        return prepared.author

    def _current(self, user_id: str, subject_key: str, relation: str) -> list[CurrentFact]:
        rows = self.store.fetch(
            FACTS,
            scope=user_id,
            where={"subject_key": subject_key, "relation": relation, "state": "current"},
        )
        return [
            CurrentFact(
                str(r["fact_id"]),
                str(r["object_key"]),
                int(cast(int, r["trust"])),
                parse_time(str(r["valid_from"])),
                tuple(cast(list[str], r["contested_with"] or [])),
            )
            for r in rows
        ]

    def _object_of(
        self, user_id: str, fact_id: str, pending: Mapping[str, Mapping[str, JSONValue]]
    ) -> str:
        if fact_id in pending:
            return str(pending[fact_id]["object"])
        rows = self.store.fetch(FACTS, scope=user_id, where={"fact_id": fact_id})
        return str(rows[0]["object"]) if rows else ""

    # ---- reads --------------------------------------------------------------------------

    def facts(
        self,
        user_id: str,
        include_history: bool = False,
        subject: str | None = None,
        relation: str | None = None,
    ) -> list[Fact]:
        """Current facts (not lapsed, not quarantined, not disputed, not superseded) — or every
        version with ``include_history=True`` — in the order they were recorded."""
        validate_scope(user_id)
        where: dict[str, JSONValue] = {}
        if subject is not None:
            where["subject_key"] = entity_key(
                subject, aliases=self.config.aliases, user_names=self.config.user_names
            )
        if relation is not None:
            where["relation"] = relation
        if not include_history:
            where["state"] = "current"
        rows = self.store.fetch(FACTS, scope=user_id, where=where, order_by=["recorded_seq"])
        now = self.clock.now()
        facts = [self._fact(r, now) for r in rows]
        if include_history:
            return facts
        return [f for f in facts if f.status in ("current", "stale")]

    def claims(self, user_id: str) -> list[Fact]:
        """Quarantined third-party claims: never user facts, shown only as claims."""
        validate_scope(user_id)
        rows = self.store.fetch(
            FACTS, scope=user_id, where={"state": "quarantined"}, order_by=["recorded_seq"]
        )
        now = self.clock.now()
        return [self._fact(r, now) for r in rows]

    def history(self, user_id: str, subject: str, relation: str) -> list[Fact]:
        """Every version of ``subject``/``relation``, oldest first, with validity windows."""
        facts = self.facts(user_id, include_history=True, subject=subject, relation=relation)
        return sorted(facts, key=lambda f: (f.valid_from, f.valid_to is None))

    def fact(self, fact_id: str, *, user_id: str) -> Fact:
        validate_scope(user_id)
        rows = self.store.fetch(FACTS, scope=user_id, where={"fact_id": fact_id})
        if not rows:
            raise UnknownFact(f"no fact {fact_id!r} in the memory of {user_id!r}")
        return self._fact(rows[0], self.clock.now())

    def episodes(self, user_id: str, kind: EpisodeKind | None = None) -> list[Episode]:
        validate_scope(user_id)
        where: dict[str, JSONValue] = {"kind": kind} if kind else {}
        rows = self.store.fetch(EPISODES, scope=user_id, where=where, order_by=["recorded_seq"])
        return [
            Episode(
                id=str(r["episode_id"]),
                user_id=user_id,
                kind=cast(EpisodeKind, r["kind"]),
                text=str(r["text"]),
                at=parse_time(str(r["at"])),
                due=cast(str | None, r["due"]),
                event_id=str(r["event_id"]),
                session_id=cast(str | None, r["session_id"]),
            )
            for r in rows
        ]

    def _fact(self, row: Row, now: datetime) -> Fact:
        state = cast(FactState, row["state"])
        volatility = cast(Volatility, row["volatility"])
        confirmed = parse_time(str(row["last_confirmed_at"]))
        status: FactStatus = state
        if state == "current":
            lifetime = self.config.lifetimes_days.get(volatility)
            if lifetime is not None and (now - confirmed).total_seconds() > lifetime * 86400:
                status = "lapsed" if volatility in ("transient", "ephemeral") else "stale"
        valid_to = row["valid_to"]
        return Fact(
            id=str(row["fact_id"]),
            user_id=str(row["scope"]),
            subject=str(row["subject"]),
            relation=str(row["relation"]),
            object=str(row["object"]),
            statement=str(row["statement"]),
            volatility=volatility,
            valid_from=parse_time(str(row["valid_from"])),
            valid_to=parse_time(str(valid_to)) if valid_to else None,
            status=status,
            superseded_by=cast(str | None, row["superseded_by"]),
            reason=cast(str | None, row["reason"]),
            provenance=Provenance(
                author_of_evidence=cast(Author, row["author"]),
                disclosure=cast(Any, row["disclosure"]),
                event_id=str(row["event_id"]),
                derived_from=tuple(cast(list[str], row["derived_from"] or [])),
                session_id=cast(str | None, row["session_id"]),
                tool_call_id=cast(str | None, row["tool_call_id"]),
                source=cast(str | None, row["source"]),
                claimant=str(row["claimant"]),
            ),
            trust=int(cast(int, row["trust"])),
            last_confirmed_at=confirmed,
            flags=tuple(cast(list[str], row["flags"] or [])),
            contested_with=tuple(cast(list[str], row["contested_with"] or [])),
            relation_class=cast(Any, row["relation_class"]),
            times_used=int(cast(int, row["times_used"] or 0)),
            last_outcome=cast(bool | None, row["last_outcome"]),
        )

    # ---- explicit feedback ----------------------------------------------------------------

    def confirm(self, fact_id: str, *, user_id: str, actor: Author = "user") -> Fact:
        """Re-affirm a fact: refreshes its confirmation (clears staleness); a disputed fact
        confirmed by someone with at least its authority becomes current again."""
        fact = self.fact(fact_id, user_id=user_id)
        if fact.status in ("superseded", "quarantined"):
            raise MemoryError(
                f"fact {fact_id} is {fact.status}; restate it with remember() "
                "instead of confirming a non-current value"
            )
        state = fact.status if fact.status == "disputed" else "current"
        if fact.status == "disputed" and _authority_key(actor) >= fact.trust:
            state = "current"
        now = self.clock.now()
        self.store.append(
            [
                Event(
                    id=new_id("ev"),
                    scope=user_id,
                    kind="memory.confirmed",
                    at=now,
                    actor=actor,
                    payload={
                        "fact_id": fact_id,
                        "at": format_time(now),
                        "state": state,
                        "reason": None if state == "current" else fact.reason,
                    },
                )
            ]
        )
        return self.fact(fact_id, user_id=user_id)

    def dispute(self, fact_id: str, *, user_id: str, actor: Author = "user", reason: str) -> Fact:
        """Mark a fact as disputed: it leaves the trusted set (and recall) but stays in
        history with who disputed it and why."""
        fact = self.fact(fact_id, user_id=user_id)
        if not reason.strip():
            raise ValueError("dispute needs a reason")
        now = self.clock.now()
        self.store.append(
            [
                Event(
                    id=new_id("ev"),
                    scope=user_id,
                    kind="memory.disputed",
                    at=now,
                    actor=actor,
                    payload={"fact_id": fact.id, "reason": f"{actor}: {reason.strip()}"},
                )
            ]
        )
        return self.fact(fact_id, user_id=user_id)


def _authority_key(author: str) -> int:
    from veil.memory.model import AUTHORITY

    return AUTHORITY.get(cast(Author, author), 0)


def _roles(
    text_or_messages: str | Sequence[Mapping[str, Any]], author: Author
) -> tuple[tuple[Author, str], ...]:
    if isinstance(text_or_messages, str):
        return ((author, text_or_messages),)
    out: list[tuple[Author, str]] = []
    for i, message in enumerate(text_or_messages):
        if not isinstance(message, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"message {i} is not a mapping with role and content")
        role = str(message.get("role", ""))
        content = message.get("content")
        if role not in ROLE_AUTHORS or not isinstance(content, str):
            raise ValueError(f"message {i} needs role in {sorted(ROLE_AUTHORS)} and text content")
        # The caller's author caps every message: a forwarded conversation is not first-hand.
        mapped = ROLE_AUTHORS[role]
        out.append((min(mapped, author, key=_authority_key), content))
    if not out:
        raise ValueError("nothing to remember: no messages")
    return tuple(out)


def _display_subject(subject: str, key: str) -> str:
    return "user" if key == USER else subject.strip()


def _quoted(value: str, text: str) -> bool:
    lowered = text.casefold()
    needle = value.casefold()
    return any(f"{q}{needle}" in lowered or f"{needle}{q}" in lowered for q in ('"', "“", "”"))


def _jsonable(value: object) -> JSONValue:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [_jsonable(v) for v in cast(list[object], value)]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in cast(dict[object, object], value).items()}
    return repr(value)


async def _await(awaitable: Awaitable[Any], timeout: float) -> Any:
    return await asyncio.wait_for(awaitable, timeout)
