"""One codec per stored value: a dataclass's field types drive payload, columns and decoding."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from veil.context.items import ContextItem
from veil.context.projection import ITEM_COLUMNS
from veil.context.records import ITEM_CODEC, item_from_row, item_payload
from veil.tape.codec import Codec, UnsupportedField


@dataclass(frozen=True)
class Sample:
    id: str
    kind: Literal["a", "b"]
    count: int = 0
    weight: float = 1.5
    flag: bool = False
    names: tuple[str, ...] = ()
    note: str | None = None
    when: str | None = None


CODEC = Codec(Sample, renames={"id": "sample_id"}, times=frozenset({"when"}), keys=("sample_id",))


def test_payload_columns_and_decoding_follow_the_field_types() -> None:
    value = Sample("s1", "b", 3, 0.25, True, ("x", "y"), "hi", "2026-01-01T00:00:00.000000Z")
    payload = CODEC.payload(value)
    assert payload == {
        "sample_id": "s1",
        "kind": "b",
        "count": 3,
        "weight": 0.25,
        "flag": True,
        "names": ["x", "y"],
        "note": "hi",
        "when": "2026-01-01T00:00:00.000000Z",
    }
    assert CODEC.decode(payload) == value
    assert [(c.name, c.type, c.nullable) for c in CODEC.columns()] == [
        ("sample_id", "text", False),
        ("kind", "text", True),
        ("count", "int", True),
        ("weight", "real", True),
        ("flag", "bool", True),
        ("names", "json", True),
        ("note", "text", True),
        ("when", "time", True),
    ]


def test_an_older_payload_missing_fields_or_nulls_takes_the_defaults() -> None:
    decoded = CODEC.decode({"sample_id": "s2", "kind": "a", "weight": None, "names": None})
    assert decoded == Sample("s2", "a")
    # A row's extra columns (seq, indexed…) are not fields: ignored.
    assert CODEC.decode({"sample_id": "s3", "kind": "a", "seq": 9}) == Sample("s3", "a")


def test_a_field_it_cannot_store_is_refused_when_the_codec_is_built() -> None:
    @dataclass(frozen=True)
    class Bad:
        mapping: dict[str, int]

    with pytest.raises(UnsupportedField, match="mapping"):
        Codec(Bad)


def test_every_context_item_field_is_a_column_of_the_items_table() -> None:
    stored = {c.name for c in ITEM_COLUMNS}
    assert {ITEM_CODEC.fields[i].stored for i in range(len(fields(ContextItem)))} <= stored
    assert "item_id" in stored and "id" not in stored


_text = st.text(max_size=20)
_opt = st.none() | _text


@given(
    st.builds(
        ContextItem,
        id=_text,
        kind=st.sampled_from(["file", "tool_output", "turn", "fact"]),
        content=st.text(max_size=200),
        tokens=st.integers(0, 10**6),
        tags=st.tuples(_text, _text),
        code_refs=st.tuples(_text),
        pinned=st.booleans(),
        stability=st.floats(0.01, 1e4),
        turn_kind=st.none() | st.sampled_from(["intent", "action"]),
        tool_call_id=_opt,
        target=_opt,
        manual_tick=st.none() | st.integers(0, 10**6),
        effect=st.none() | st.sampled_from(["read", "read_part", "write"]),
        excerpt=st.integers(0, 10**5),
    )
)
def test_a_context_item_survives_payload_and_row(item: ContextItem) -> None:
    assert item_from_row(item_payload(item)) == item
