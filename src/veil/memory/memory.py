"""The long-term memory (docs/seeds/veracium.txt): memory changes only through evidence.

:class:`Memory` is the public face: it checks every call's arguments, serialises one user's
writes, and delegates — ``remember`` to :mod:`veil.memory.write_path` (evidence first, one model
call, a pure plan, one atomic batch), ``recall`` to :mod:`veil.memory.recall`, ``maintain`` to
:mod:`veil.memory.maintain`, export and import to :mod:`veil.memory.portability`. There is no
update or delete: every change is an event (built in :mod:`veil.memory.events`), and a new value
supersedes the old one, which stays, with its validity window, in ``history``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from veil.clock import Clock, SystemClock
from veil.embed.protocol import Embedder
from veil.memory import arguments, events, write_path
from veil.memory.arguments import RememberArgs, recall_args, remember_args
from veil.memory.config import MemoryConfig
from veil.memory.entities import entity_key
from veil.memory.errors import (
    EvidenceTooLarge,
    FactNotCurrent,
    NoModel,
    UnknownFact,
    VeilMemoryError,
)
from veil.memory.maintain import Maintainer, MaintainReport
from veil.memory.model import Author, Episode, EpisodeKind, Fact, WriteReport
from veil.memory.model_call import Complete, call_async, call_sync
from veil.memory.portability import (
    ImportFormatError,
    ImportReport,
    export_lines,
    read_export,
    write_export,
)
from veil.memory.projection import EPISODES, FACTS, MemoryProjection
from veil.memory.recall import Recall, Recaller
from veil.memory.rows import episode_from_row, fact_from_row
from veil.memory.writing import authority_key
from veil.tape import ErasureReceipt, EventConflict, JSONValue, Store, open_store
from veil.tape.recorder import Recorder

__all__ = [
    "Complete",
    "EvidenceTooLarge",
    "FactNotCurrent",
    "Memory",
    "NoModel",
    "UnknownFact",
    "VeilMemoryError",
]


class Memory:
    """Long-term memory over a tape. ``target`` is a path, ``sqlite:///…`` or ``postgresql://…``.

    Every public method checks its arguments first (:mod:`veil.memory.arguments`): a wrong type
    is a ``TypeError``, a bad value a ``ValueError``, each naming the parameter, and a refused
    call writes nothing. ``complete=None`` makes a memory that reads but cannot ``remember``."""

    def __init__(
        self,
        target: str | Path | Store,
        *,
        complete: Complete | None = None,
        embedder: Embedder | None = None,
        config: MemoryConfig | None = None,
        clock: Clock | None = None,
        actor: str = "library",
    ) -> None:
        checked = arguments.construction(target, complete, embedder, config, clock, actor)
        self.config = checked.config
        self.clock: Clock = checked.clock or SystemClock()
        self.complete = checked.complete
        self.actor = checked.actor
        target, embedder = checked.target, checked.embedder
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
        self._recaller = Recaller(self.store, self.config, self.embedder)
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
        args = remember_args(
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
            return call_sync(complete, messages, self.config.llm_timeout_s)

        return self._remember(args, call)

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
        args = remember_args(
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
        loop = asyncio.get_running_loop()

        def call(messages: list[dict[str, str]]) -> str:
            future = asyncio.run_coroutine_threadsafe(
                call_async(complete, messages, self.config.llm_timeout_s), loop
            )
            return future.result()

        return await asyncio.to_thread(self._remember, args, call)

    def _remember(
        self, args: RememberArgs, call: Callable[[list[dict[str, str]]], str]
    ) -> WriteReport:
        """The write path both twins share (:func:`veil.memory.write_path.remember`)."""
        with self._user_lock(args.user_id):
            report = write_path.remember(self._recorder(args.user_id), self.config, args, call)
        self._audit("remember", args.user_id, {**report.counts(), "llm_calls": report.llm_calls})
        return report

    def _audit(self, op: str, user_id: str, counts: Mapping[str, int]) -> None:
        """Opt-in audit log: who called what, when, over which user, with counts; no content.
        Kept as events in the user's scope, so ``forget`` removes them with the rest."""
        if not self.config.audit:
            return
        self.store.append([events.audit(self._recorder(user_id), op, counts)])

    def _recorder(self, user_id: str, actor: str | None = None) -> Recorder:
        """The builder of the events this memory writes in ``user_id``'s scope, by ``actor``
        (the memory's own by default)."""
        return Recorder(self.store, user_id, actor or self.actor, self.clock)

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

    def facts(
        self,
        user_id: str,
        include_history: bool = False,
        subject: str | None = None,
        relation: str | None = None,
    ) -> list[Fact]:
        """Current facts (not lapsed, not quarantined, not disputed, not superseded) — or every
        version with ``include_history=True`` — in the order they were recorded."""
        user_id = arguments.scope(user_id)
        include_history = arguments.flag(include_history, "include_history")
        subject = arguments.optional_text(subject, "subject")
        relation = arguments.optional_text(relation, "relation")
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
        facts = [fact_from_row(r, now, self.config) for r in rows]
        if include_history:
            return facts
        return [f for f in facts if f.status in ("current", "stale")]

    def claims(self, user_id: str) -> list[Fact]:
        """Quarantined third-party claims: never user facts, shown only as claims."""
        user_id = arguments.scope(user_id)
        rows = self.store.fetch(
            FACTS, scope=user_id, where={"state": "quarantined"}, order_by=["recorded_seq"]
        )
        now = self.clock.now()
        return [fact_from_row(r, now, self.config) for r in rows]

    def history(self, user_id: str, subject: str, relation: str) -> list[Fact]:
        """Every version of ``subject``/``relation``, oldest first, with validity windows."""
        subject, relation = arguments.text(subject, "subject"), arguments.text(relation, "relation")
        facts = self.facts(user_id, include_history=True, subject=subject, relation=relation)
        return sorted(facts, key=lambda f: (f.valid_from, f.valid_to is None))

    def fact(self, fact_id: str, *, user_id: str) -> Fact:
        fact_id, user_id = arguments.text(fact_id, "fact_id"), arguments.scope(user_id)
        rows = self.store.fetch(FACTS, scope=user_id, where={"fact_id": fact_id})
        if not rows:
            raise UnknownFact(f"no fact {fact_id!r} in the memory of {user_id!r}")
        return fact_from_row(rows[0], self.clock.now(), self.config)

    def episodes(self, user_id: str, kind: EpisodeKind | None = None) -> list[Episode]:
        user_id, kind = arguments.scope(user_id), arguments.episode_kind(kind)
        where: dict[str, JSONValue] = {"kind": kind} if kind else {}
        rows = self.store.fetch(EPISODES, scope=user_id, where=where, order_by=["recorded_seq"])
        return [episode_from_row(r) for r in rows]

    def recall(
        self,
        query: str,
        *,
        user_id: str,
        token_budget: int = 1000,
        as_of: datetime | None = None,
        include_claims: bool = True,
    ) -> Recall:
        """What the memory knows about ``query``, rendered into ``token_budget`` tokens.

        Never calls the LLM. An empty query gives the session-start briefing. ``as_of``
        answers with what was valid at that time (validity windows)."""
        args = recall_args(
            query,
            user_id=user_id,
            token_budget=token_budget,
            as_of=as_of,
            include_claims=include_claims,
        )
        result = self._recaller.recall(
            args.query,
            user_id=args.user_id,
            token_budget=args.token_budget,
            now=self.clock.now(),
            as_of=args.as_of,
            include_claims=args.include_claims,
        )
        self._audit(
            "recall", args.user_id, {"facts": len(result.facts), "episodes": len(result.episodes)}
        )
        return result

    async def arecall(
        self,
        query: str,
        *,
        user_id: str,
        token_budget: int = 1000,
        as_of: datetime | None = None,
        include_claims: bool = True,
    ) -> Recall:
        """Async twin of :meth:`recall` (store I/O runs off the event loop)."""
        return await asyncio.to_thread(
            self.recall,
            query,
            user_id=user_id,
            token_budget=token_budget,
            as_of=as_of,
            include_claims=include_claims,
        )

    def record_outcome(self, fact_id: str, *, user_id: str, ok: bool) -> Fact:
        """Procedural outcome tracking: a tool/source fact was used, and it worked or not.
        Recall ranks procedural facts by times used and last outcome."""
        ok = arguments.flag(ok, "ok")
        fact = self.fact(fact_id, user_id=user_id)
        rec = self._recorder(user_id)
        self.store.append([events.outcome(rec, fact.id, ok=ok, times_used=fact.times_used + 1)])
        return self.fact(fact_id, user_id=user_id)

    def maintain(self, user_id: str) -> MaintainReport:
        """Consolidate old episodes (one model call, only when there is something to
        consolidate) and recompile the wiki (no model). Atomic: old state or new state."""
        user_id = arguments.scope(user_id)
        complete = self.complete

        def call(messages: list[dict[str, str]], schema: dict[str, Any]) -> str:
            assert complete is not None
            return call_sync(complete, messages, self.config.llm_timeout_s, schema=schema)

        with self._user_lock(user_id):
            report = Maintainer(self.store, self.config, self.clock).run(
                user_id, now=self.clock.now(), call=call if complete is not None else None
            )
        self._audit(
            "maintain",
            user_id,
            {
                "wiki_sections": report.wiki_sections,
                "consolidated": len(report.consolidated),
                "llm_calls": report.llm_calls,
            },
        )
        return report

    def export(self, user_id: str, path: str | Path) -> Path:
        """Write the user's memory as JSONL (docs/export-format.md): every event, fact and
        episode with full provenance and validity. Written atomically (temp file, rename)."""
        user_id, target = arguments.scope(user_id), arguments.path(path)
        facts = self.facts(user_id, include_history=True)
        lines = export_lines(self.store, user_id, facts, self.episodes(user_id), self.clock.now())
        count = write_export(target, lines)
        self._audit("export", user_id, {"lines": count})
        return target

    def import_(
        self, path: str | Path, restore: bool = False, *, user_id: str | None = None
    ) -> ImportReport:
        """Import an export. ``restore=True`` reproduces it exactly; otherwise imported facts
        are capped at third-party trust. The file is validated whole before anything is
        written, and the import is one atomic batch (idempotent by event id)."""
        source = arguments.path(path)
        restore = arguments.flag(restore, "restore")
        user_id = arguments.optional_scope(user_id)
        scope, imported = read_export(
            source, user_id=user_id, restore=restore, source=f"import:{source.name}"
        )
        with self._user_lock(scope):
            before = {e.id for e in self.store.read(scope)}
            try:
                self.store.append(imported, keep_recorded_at=restore)
            except EventConflict as exc:
                raise ImportFormatError(
                    f"{source}: its events are already in {scope!r} with other content — most "
                    "likely it was imported before with the other restore= value (restore=False "
                    "caps trust, so the events differ); nothing was written"
                ) from exc
        present = sum(1 for e in imported if e.id in before)
        self._audit("import", scope, {"events": len(imported), "already_present": present})
        return ImportReport(scope, len(imported), present, restore)

    def forget(self, user_id: str) -> ErasureReceipt:
        """Compliance erasure: physically remove every event, fact, episode, wiki section,
        index entry and audit record of ``user_id``; returns a content-free receipt."""
        user_id = arguments.scope(user_id)
        with self._user_lock(user_id):
            return self.store.erase(user_id)

    def confirm(self, fact_id: str, *, user_id: str, actor: Author = "user") -> Fact:
        """Re-affirm a fact: refreshes its confirmation (clears staleness); a disputed fact
        confirmed by someone with at least its authority becomes current again."""
        actor = arguments.authored_by(actor, "actor")
        fact = self.fact(fact_id, user_id=user_id)
        if fact.status in ("superseded", "quarantined"):
            raise FactNotCurrent(
                f"fact {fact_id} is {fact.status}; restate it with remember() "
                "instead of confirming a non-current value"
            )
        state = fact.status if fact.status == "disputed" else "current"
        if fact.status == "disputed" and authority_key(actor) >= fact.trust:
            state = "current"
        reason = None if state == "current" else fact.reason
        confirmed = events.confirmed(
            self._recorder(user_id, actor), fact_id, state=state, reason=reason, at=self.clock.now()
        )
        self.store.append([confirmed])
        return self.fact(fact_id, user_id=user_id)

    def dispute(self, fact_id: str, *, user_id: str, actor: Author = "user", reason: str) -> Fact:
        """Mark a fact as disputed: it leaves the trusted set (and recall) but stays in
        history with who disputed it and why."""
        actor = arguments.authored_by(actor, "actor")
        if not arguments.text(reason, "reason").strip():
            raise ValueError("reason must not be empty: say why the fact is disputed")
        fact = self.fact(fact_id, user_id=user_id)
        why = f"{actor}: {reason.strip()}"
        self.store.append([events.disputed(self._recorder(user_id, actor), fact.id, reason=why)])
        return self.fact(fact_id, user_id=user_id)
