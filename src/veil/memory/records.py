"""The long-term memory's stored values, each with its one codec (:mod:`veil.tape.codec`).

A :class:`FactRecord` is a fact as the tape and the projection hold it: the ``fact`` of a
``memory.fact`` event and a ``mem_facts`` row, whose columns are :data:`FACT_CODEC`'s in field
order (then ``recorded_seq``). Its fields are the one spelling of that shape: the payload, the
columns, the reading of a row by position (:meth:`~veil.tape.codec.Codec.decode_values`) and
the check an imported or appended fact passes all follow from them. A
:class:`~veil.memory.model.Fact` is what readers get (:func:`veil.memory.rows.fact_of`): the
record with its provenance gathered, its times parsed and its status at the time of reading.

An :class:`EpisodeRecord` is the ``episode`` of a ``memory.episode`` event.

Fields with a default are keys an export of an earlier version may lack; keys a record does not
declare are kept (``extra="keep"``: an import stores other keys as they are, docs/export-format.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from veil.memory.model import Author, Disclosure, EpisodeKind, FactState, Volatility
from veil.tape.codec import SPARSE, Codec, DateText, Ident, TimeText


@dataclass(frozen=True, kw_only=True)
class FactRecord:
    """A fact as recorded; ``state`` is what the tape says (``status`` adds the clock)."""

    fact_id: Ident
    subject: str
    subject_key: str = ""
    relation: str
    relation_class: Literal["registered", "unclassified"] = "registered"
    object: str
    object_key: str = ""
    statement: str
    volatility: Volatility
    valid_from: TimeText
    valid_to: TimeText | None = None
    state: FactState
    superseded_by: str | None = None
    reason: str | None = None
    author: Author
    disclosure: Disclosure
    claimant: str
    event_id: str
    derived_from: tuple[str, ...] = ()
    session_id: str | None = None
    tool_call_id: str | None = None
    source: str | None = None
    trust: int
    last_confirmed_at: TimeText
    flags: tuple[str, ...] = ()
    contested_with: tuple[str, ...] = ()
    times_used: int = 0
    last_outcome: bool | None = None


FACT_CODEC: Codec[FactRecord] = Codec(FactRecord, keys=("fact_id",), extra="keep")


@dataclass(frozen=True, kw_only=True)
class EpisodeRecord:
    """An episode as recorded; ``derived_from`` only for a consolidation's."""

    episode_id: Ident
    kind: EpisodeKind
    text: str
    at: TimeText
    due: DateText | None = None
    event_id: str | None = None
    session_id: str | None = None
    derived_from: Annotated[tuple[str, ...], SPARSE] = ()


EPISODE_CODEC: Codec[EpisodeRecord] = Codec(EpisodeRecord, extra="keep")
