"""The write path of ``remember``: prepare → extract → plan → commit.

1. :func:`prepare` checks the evidence, reads what the prompt needs (the authors of the
   evidence it derives from, the current facts of the subjects it mentions) and appends the
   ``memory.evidence`` event on its own — nothing the caller said can be lost, whatever follows.
2. :func:`extract` makes the one model call (plus at most one repair retry when the output does
   not parse), then validates and vets the items. It touches no store.
3. :func:`read_current` makes the reads the plan names (:func:`veil.memory.writing.queries`);
   :func:`veil.memory.writing.plan` decides, a pure function of those values.
4. :func:`commit` appends the planned events as one atomic batch.

There is no update or delete: a new value supersedes the old one and the old one stays, with its
validity window, in ``history``. :meth:`veil.memory.Memory.remember` holds the user's lock
around :func:`remember`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import date
from typing import Any, cast

from veil.clock import parse_time
from veil.memory import events
from veil.memory.arguments import RememberArgs
from veil.memory.config import MemoryConfig
from veil.memory.entities import USER, candidate_mentions, entity_key
from veil.memory.errors import EvidenceTooLarge
from veil.memory.extraction import (
    ExtractionParseError,
    PromptFact,
    build_messages,
    calendar_lines,
    parse_output,
    repair_messages,
    validate_items,
)
from veil.memory.guardrails import vet
from veil.memory.model import Author, WriteReport
from veil.memory.projection import ENTITIES, EVIDENCE, FACTS
from veil.memory.secrets import redacted_evidence, refuse_secrets
from veil.memory.supersession import CurrentFact
from veil.memory.writing import (
    Current,
    Extracted,
    Plan,
    Prepared,
    Query,
    authority_key,
    plan,
    queries,
    roles_of,
)
from veil.redaction import Redactor
from veil.tape import JSONValue, Store
from veil.tape.recorder import Recorder

ModelCall = Callable[[list[dict[str, str]]], str]


def remember(
    recorder: Recorder, config: MemoryConfig, args: RememberArgs, call: ModelCall
) -> WriteReport:
    """The whole path for one piece of evidence. ``recorder`` is the memory's for the user
    (scope ``args.user_id``): its store, clock and id prefix."""
    prepared = prepare(recorder, config, args)
    extracted = extract(prepared, call, config, recorder.store.redactor)
    current = read_current(
        recorder.store, recorder.scope, queries(prepared, extracted.facts, config)
    )
    return commit(recorder.store, plan(prepared, extracted, current, config, recorder))


# ---- 1. prepare ---------------------------------------------------------------------------


def prepare(recorder: Recorder, config: MemoryConfig, args: RememberArgs) -> Prepared:
    """Check the evidence, append it (its own transaction), and build the prompt."""
    store, user_id = recorder.store, recorder.scope
    roles = redacted_evidence(roles_of(args.evidence, args.author), store.redactor)
    text = "\n".join(f"{r}: {c}" if len(roles) > 1 else c for r, c in roles)
    if not text.strip():
        raise ValueError("text_or_messages is empty: nothing to remember")
    if len(text) > config.max_evidence_chars:
        raise EvidenceTooLarge(
            f"evidence is {len(text):,} characters; the limit is "
            f"{config.max_evidence_chars:,} (MemoryConfig.max_evidence_chars). Split it "
            "into separate remember() calls: one call makes at most one LLM call."
        )
    when = args.at or recorder.clock.now()
    chain = _chain(store, user_id, args.derived_from)
    author: Author = min((a for a, _ in roles), key=authority_key)
    provenance: dict[str, JSONValue] = {
        "session_id": args.session_id,
        "tool_call_id": args.tool_call_id,
        "source": args.source,
    }
    by_author = replace(recorder, actor=author, provenance=provenance)
    built = events.evidence(
        by_author, text=text, roles=roles, derived_from=args.derived_from, at=when
    )
    (evidence,) = store.append([built])
    shown = tuple(_prompt_facts(store, config, user_id, text))
    messages = build_messages(
        evidence=text, author=author, at=when, config=config, current_facts=shown
    )
    calendar = frozenset(date.fromisoformat(line[:10]) for line in calendar_lines(when))
    return Prepared(evidence, text, author, chain, messages, roles, calendar, shown)


def _chain(store: Store, user_id: str, derived_from: Sequence[str]) -> tuple[Author, ...]:
    """The authors of the evidence ``derived_from`` names, in its order (trust's weakest link)."""
    if not derived_from:
        return ()
    rows = store.fetch(EVIDENCE, scope=user_id, where={"event_id": list(derived_from)})
    found: dict[str, Author] = {str(r["event_id"]): cast(Author, r["author"]) for r in rows}
    missing = [i for i in derived_from if i not in found]
    if missing:
        raise ValueError(f"derived_from names unknown evidence ids for this user: {missing}")
    return tuple(found[i] for i in derived_from)  # pyright: ignore[reportReturnType]


def _prompt_facts(store: Store, config: MemoryConfig, user_id: str, text: str) -> list[PromptFact]:
    """The current facts of the user and of the known entities ``text`` mentions."""
    mentions = {
        entity_key(m, aliases=config.aliases, user_names=config.user_names)
        for m in candidate_mentions(text)
    }
    known = store.fetch(ENTITIES, scope=user_id, where={"key": sorted(mentions)})
    keys = sorted({USER, *(str(r["key"]) for r in known)})
    limit = config.max_facts_in_prompt
    # One indexed read per subject, each in index order, then the newest across them: a single
    # ``subject_key IN (…)`` read sorted every current fact of the user (thousands, in a long
    # history) on every remember.
    rows = [
        row
        for key in keys
        for row in store.fetch(
            FACTS,
            scope=user_id,
            where={"subject_key": key, "state": "current"},
            order_by=["-last_confirmed_at"],
            limit=limit,
        )
    ]
    rows.sort(key=lambda r: (str(r["last_confirmed_at"]), str(r["fact_id"])), reverse=True)
    return [
        PromptFact(
            str(r["fact_id"]),
            str(r["subject"]),
            str(r["relation"]),
            str(r["object"]),
            str(r["statement"]),
        )
        for r in rows[:limit]
    ]


# ---- 2. extract ---------------------------------------------------------------------------


def extract(
    prepared: Prepared, call: ModelCall, config: MemoryConfig, redactor: Redactor | None = None
) -> Extracted:
    """The model call and what survives validation and the guardrails. A failed call or an
    output that does not parse after the repair retry is reported, never raised. With
    ``redactor``, an item that holds a secret is refused (:mod:`veil.memory.secrets`)."""
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
        return Extracted(calls, error)
    facts, episodes, invalid = validate_items(parsed)
    if redactor is not None and redactor.config.enabled:  # before anything rewrites a fact
        facts, episodes, refused = refuse_secrets(facts, episodes, redactor)
        invalid.extend(refused)
    notes: tuple[str, ...] = ()
    if config.guardrails:
        vetted = vet(
            facts,
            episodes,
            evidence=prepared.text,
            shown=prepared.shown,
            calendar=prepared.calendar,
            today=prepared.evidence.at.date(),
        )
        facts, episodes, notes = list(vetted.facts), list(vetted.episodes), vetted.notes
        invalid.extend(vetted.invalid)
    return Extracted(calls, None, tuple(facts), tuple(episodes), tuple(invalid), notes)


# ---- 3. the reads the plan needs (the plan itself: veil.memory.writing.plan) --------------


def read_current(store: Store, user_id: str, wanted: Iterable[Query]) -> Current:
    """Answer each query from the current facts, in one read of the user's memory."""
    distinct = list(dict.fromkeys(wanted))
    if not distinct:
        return Current({})
    facts: dict[Query, tuple[CurrentFact, ...]] = {}
    objects: dict[str, str] = {}
    with store.reading(user_id):
        for query in distinct:
            rows = _rows(store, user_id, query)
            facts[query] = tuple(_current_fact(r) for r in rows)
            objects.update((str(r["fact_id"]), str(r["object"])) for r in rows)
    return Current(facts, objects)


def _rows(store: Store, user_id: str, query: Query) -> list[dict[str, JSONValue]]:
    where: dict[str, object] = {
        "subject_key": query.subject_key,
        "relation": query.relation,
        "state": "current",
    }
    if query.value is None:
        return store.fetch(FACTS, scope=user_id, where=where)
    rows = store.fetch(FACTS, scope=user_id, where={**where, "object_key": query.value})
    if query.target:
        rows += store.fetch(FACTS, scope=user_id, where={**where, "fact_id": query.target})
    return rows


def _current_fact(row: dict[str, JSONValue]) -> CurrentFact:
    return CurrentFact(
        str(row["fact_id"]),
        str(row["object_key"]),
        int(cast(int, row["trust"])),
        parse_time(str(row["valid_from"])),
        tuple(cast(list[str], row["contested_with"] or [])),
    )


# ---- 4. commit ----------------------------------------------------------------------------


def commit(store: Store, planned: Plan) -> WriteReport:
    """Append the plan's events as one atomic batch; its report."""
    store.append(list(planned.events))
    return planned.report
