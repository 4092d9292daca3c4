"""Wire types of the HTTP API (and the MCP tools' results): pydantic models for OpenAPI.

Request bodies forbid unknown fields: scope and author come from the API key, so a body that
tries to name them (``user_id``, ``author``, ``scope``) is a 422, never silently ignored.
Times are ISO-8601 with an offset; naive times are refused (Veil never guesses a timezone).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, create_model

from veil.llm.configure import HOW_TO_CONFIGURE
from veil.memory import Episode, Fact, Recall, WriteReport
from veil.tape import ErasureReceipt
from veil.verbs import CATALOGUE, Earlier, Restored, Verb
from veil.verbs.attempt_verbs import AttemptRecord, Recorded
from veil.verbs.memory_verbs import FactList, RecallAnswer


def _to_utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError) as exc:
        raise ValueError(f"time out of range: {exc}") from None


UtcTime = Annotated[AwareDatetime, AfterValidator(_to_utc)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def verb_model(name: str, verb: Verb, *, without: Sequence[str] = ()) -> type[_Request]:
    """The request model of a catalogue verb's arguments (:mod:`veil.verbs`): the same names,
    types, defaults, bounds and descriptions every surface offers, minus ``without`` (the
    arguments a route takes from its path)."""
    fields: dict[str, Any] = {}
    for p in verb.params:
        if p.name in without:
            continue
        kind: Any = _KINDS[p.kind] if p.kind != "choice" else Literal[tuple(p.choices)]
        if p.optional:
            kind = kind | None
        default = ... if p.required else p.default
        fields[p.name] = (
            kind,
            Field(
                default=default,
                description=p.description,
                ge=p.low,
                le=p.high,
                min_length=1 if p.non_empty else None,
            ),
        )
    return create_model(name, __base__=_Request, **fields)


_KINDS: dict[str, Any] = {"text": str, "integer": int, "flag": bool, "time": UtcTime,
                          "texts": list[str]}  # fmt: skip

if TYPE_CHECKING:  # for the type checker, each is a request model; its fields are the verb's

    class RememberBody(_Request): ...

    class RecallBody(_Request): ...

    class DisputeBody(_Request): ...

    class FactsQuery(_Request): ...

    class HistoryQuery(_Request): ...

else:
    RememberBody = verb_model("RememberBody", CATALOGUE["remember"])
    RecallBody = verb_model("RecallBody", CATALOGUE["recall"])
    DisputeBody = verb_model("DisputeBody", CATALOGUE["dispute"], without=("fact_id",))
    FactsQuery = verb_model("FactsQuery", CATALOGUE["facts"])
    HistoryQuery = verb_model("HistoryQuery", CATALOGUE["history"])


class ErrorBody(BaseModel):
    """Every error the API produces itself: a stable code and a human-readable message."""

    error: str
    message: str


NO_MODEL = ErrorBody(
    error="no_model",
    message=(
        "no model is configured, so this server cannot remember; reads work (recall, facts, "
        f"history, export, confirm, dispute). {HOW_TO_CONFIGURE} Then restart the server."
    ),
)
"""``remember`` on a server started without a model: HTTP 503 with this body; over MCP an
error result with this message."""


class ValidationErrorBody(BaseModel):
    """422: the request was well-formed HTTP but its JSON or values were rejected."""

    error: str
    message: str
    detail: list[dict[str, Any]]


class ProvenanceOut(BaseModel):
    author_of_evidence: str
    disclosure: str
    event_id: str
    derived_from: list[str]
    session_id: str | None
    tool_call_id: str | None
    source: str | None
    claimant: str


class FactOut(BaseModel):
    id: str
    subject: str
    relation: str
    object: str
    statement: str
    volatility: str
    valid_from: datetime
    valid_to: datetime | None
    status: str
    superseded_by: str | None
    reason: str | None
    provenance: ProvenanceOut
    trust: int
    last_confirmed_at: datetime
    flags: list[str]
    contested_with: list[str]
    times_used: int
    last_outcome: bool | None


class EpisodeOut(BaseModel):
    id: str
    kind: str
    text: str
    at: datetime
    due: str | None
    event_id: str


class InvalidItemOut(BaseModel):
    item: Any
    reason: str


class WriteReportOut(BaseModel):
    evidence_id: str
    facts: list[str]
    superseded: list[str]
    reinforced: list[str]
    quarantined: list[str]
    episodes: list[str]
    contested: list[str]
    invalid: list[InvalidItemOut]
    llm_calls: int
    error: str | None = Field(description="Set when extraction failed; the evidence is kept.")


class EarlierOut(BaseModel):
    """A result moved out of an agent's context that matches the query (``veil mcp
    --project``; the HTTP API has no working memory and lists none)."""

    pointer: str
    tool: str
    target: str
    tokens: int


class RecallOut(BaseModel):
    text: str
    facts: list[FactOut]
    episodes: list[EpisodeOut]
    claims: list[FactOut]
    contested: list[FactOut]
    tokens: int
    truncated: bool
    earlier: list[EarlierOut] = Field(default_factory=lambda: [])


class FactsOut(BaseModel):
    facts: list[FactOut]
    total: int = Field(description="How many facts matched (``facts`` holds the newest).")
    truncated: bool = Field(description="Whether ``facts`` holds fewer than ``total``.")


class ErasureOut(BaseModel):
    id: str
    scope_hash: str
    at: str
    events: int
    rows: dict[str, int]


class HealthOut(BaseModel):
    status: str
    version: str


class VersionOut(BaseModel):
    version: str
    api: str


def fact_out(fact: Fact) -> FactOut:
    p = fact.provenance
    return FactOut(
        id=fact.id,
        subject=fact.subject,
        relation=fact.relation,
        object=fact.object,
        statement=fact.statement,
        volatility=fact.volatility,
        valid_from=fact.valid_from,
        valid_to=fact.valid_to,
        status=fact.status,
        superseded_by=fact.superseded_by,
        reason=fact.reason,
        provenance=ProvenanceOut(
            author_of_evidence=p.author_of_evidence,
            disclosure=p.disclosure,
            event_id=p.event_id,
            derived_from=list(p.derived_from),
            session_id=p.session_id,
            tool_call_id=p.tool_call_id,
            source=p.source,
            claimant=p.claimant,
        ),
        trust=fact.trust,
        last_confirmed_at=fact.last_confirmed_at,
        flags=list(fact.flags),
        contested_with=list(fact.contested_with),
        times_used=fact.times_used,
        last_outcome=fact.last_outcome,
    )


def episode_out(episode: Episode) -> EpisodeOut:
    return EpisodeOut(
        id=episode.id,
        kind=episode.kind,
        text=episode.text,
        at=episode.at,
        due=episode.due,
        event_id=episode.event_id,
    )


def report_out(report: WriteReport) -> WriteReportOut:
    return WriteReportOut(
        evidence_id=report.evidence_id,
        facts=list(report.facts),
        superseded=list(report.superseded),
        reinforced=list(report.reinforced),
        quarantined=list(report.quarantined),
        episodes=list(report.episodes),
        contested=list(report.contested),
        invalid=[InvalidItemOut(item=i.item, reason=i.reason) for i in report.invalid],
        llm_calls=report.llm_calls,
        error=report.error,
    )


def recall_out(recall: Recall, earlier: Sequence[Earlier] = ()) -> RecallOut:
    return RecallOut(
        text=recall.text,
        facts=[fact_out(f) for f in recall.facts],
        episodes=[episode_out(e) for e in recall.episodes],
        claims=[fact_out(f) for f in recall.claims],
        contested=[fact_out(f) for f in recall.contested],
        tokens=recall.tokens,
        truncated=recall.truncated,
        earlier=[
            EarlierOut(pointer=e.pointer, tool=e.tool, target=e.target, tokens=e.tokens)
            for e in earlier
        ],
    )


def facts_out(found: Sequence[Fact], total: int | None = None) -> FactsOut:
    total = len(found) if total is None else total
    return FactsOut(facts=[fact_out(f) for f in found], total=total, truncated=len(found) < total)


def wire(result: object) -> dict[str, Any]:
    """The JSON of any verb's result (:mod:`veil.verbs`), in this module's wire types: the one
    encoding the HTTP API, the MCP tools and ``veil memory --json`` share."""
    out: BaseModel | dict[str, Any]
    if isinstance(result, WriteReport):
        out = report_out(result)
    elif isinstance(result, RecallAnswer):
        recall = result.recall or Recall("", (), (), (), (), 0, False)
        out = recall_out(recall, result.earlier)
    elif isinstance(result, FactList):
        out = facts_out(result.facts, result.total)
    elif isinstance(result, Fact):
        out = fact_out(result)
    elif isinstance(result, list):
        out = facts_out(cast(list[Fact], result))
    elif isinstance(result, Restored):
        out = {
            "pointer": result.pointer,
            "tool": result.tool,
            "target": result.target,
            "tokens": result.tokens,
            "content": result.content,
        }
    elif isinstance(result, AttemptRecord | Recorded):
        out = result.wire()
    else:
        raise TypeError(f"no wire type for {type(result).__name__}")
    return out.model_dump(mode="json") if isinstance(out, BaseModel) else out


def erasure_out(receipt: ErasureReceipt) -> ErasureOut:
    return ErasureOut(
        id=receipt.id,
        scope_hash=receipt.scope_hash,
        at=receipt.at,
        events=receipt.events,
        rows=dict(receipt.rows),
    )
