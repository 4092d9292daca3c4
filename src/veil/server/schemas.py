"""Wire types of the HTTP API (and the MCP tools' results): pydantic models for OpenAPI.

Request bodies forbid unknown fields: scope and author come from the API key, so a body that
tries to name them (``user_id``, ``author``, ``scope``) is a 422, never silently ignored.
Times are ISO-8601 with an offset; naive times are refused (Veil never guesses a timezone).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field

from veil.llm.configure import HOW_TO_CONFIGURE
from veil.memory import Episode, Fact, Recall, WriteReport
from veil.tape import ErasureReceipt

MAX_TOKEN_BUDGET = 100_000


def _to_utc(value: datetime) -> datetime:
    try:
        return value.astimezone(UTC)
    except (OverflowError, ValueError) as exc:
        raise ValueError(f"time out of range: {exc}") from None


UtcTime = Annotated[AwareDatetime, AfterValidator(_to_utc)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RememberBody(_Request):
    text: str = Field(min_length=1, description="The evidence: what was said or observed.")
    at: UtcTime | None = Field(
        default=None, description="When it happened (default: now). ISO-8601 with offset."
    )


class RecallBody(_Request):
    query: str = Field(description="Free text; empty gives the session-start briefing.")
    token_budget: int = Field(default=1000, ge=0, le=MAX_TOKEN_BUDGET)
    as_of: UtcTime | None = Field(
        default=None, description="Answer with what was valid at this time."
    )


class DisputeBody(_Request):
    reason: str = Field(min_length=1, description="Why the fact is disputed (kept in history).")


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


class RecallOut(BaseModel):
    text: str
    facts: list[FactOut]
    episodes: list[EpisodeOut]
    claims: list[FactOut]
    contested: list[FactOut]
    tokens: int
    truncated: bool


class FactsOut(BaseModel):
    facts: list[FactOut]


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


def recall_out(recall: Recall) -> RecallOut:
    return RecallOut(
        text=recall.text,
        facts=[fact_out(f) for f in recall.facts],
        episodes=[episode_out(e) for e in recall.episodes],
        claims=[fact_out(f) for f in recall.claims],
        contested=[fact_out(f) for f in recall.contested],
        tokens=recall.tokens,
        truncated=recall.truncated,
    )


def erasure_out(receipt: ErasureReceipt) -> ErasureOut:
    return ErasureOut(
        id=receipt.id,
        scope_hash=receipt.scope_hash,
        at=receipt.at,
        events=receipt.events,
        rows=dict(receipt.rows),
    )
