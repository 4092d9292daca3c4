"""One codec per stored value: a dataclass's field types drive payload, columns and decoding."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Annotated, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from veil.context.items import ContextItem
from veil.context.projection import ITEM_COLUMNS
from veil.context.records import ITEM_CODEC, item_from_row, item_payload
from veil.tape.codec import SPARSE, Codec, DateText, Ident, TimeText, UnsupportedField
from veil.tape.events import JSONObject, JSONValue


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
        mapping: dict[int, str]

    with pytest.raises(UnsupportedField, match="mapping"):
        Codec(Bad)

    @dataclass(frozen=True)
    class AlsoBad:
        names: set[str]

    with pytest.raises(UnsupportedField, match="names"):
        Codec(AlsoBad)


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


@dataclass(frozen=True)
class Part:
    name: Ident
    size: int = 0


@dataclass(frozen=True)
class Whole:
    id: Ident
    parts: tuple[Part, ...]
    main: Part | None = None
    weights: dict[str, float] | None = None
    level: Literal[0, 1, 2] = 0
    due: DateText | None = None
    at: TimeText | None = None
    data: JSONValue = None
    meta: JSONObject = field(default_factory=lambda: {})
    later: Annotated[tuple[str, ...], SPARSE] = ()


WHOLE = Codec(Whole)


def test_nested_values_lists_maps_and_json_round_trip() -> None:
    value = Whole(
        "w1",
        (Part("a", 1), Part("b")),
        Part("m", 3),
        {"x": 0.5},
        2,
        "2026-01-05",
        "2026-01-05T09:00:00.000000+00:00",
        [1, {"k": None}],
        {"free": ["form"]},
    )
    payload = WHOLE.payload(value)
    assert payload["parts"] == [{"name": "a", "size": 1}, {"name": "b", "size": 0}]
    assert payload["main"] == {"name": "m", "size": 3} and "later" not in payload
    assert WHOLE.problem(payload) is None and WHOLE.decode(payload) == value
    assert WHOLE.payload(replace(value, later=("x",)))["later"] == ["x"]
    assert [(c.name, c.type) for c in WHOLE.columns()][1:3] == [("parts", "json"), ("main", "json")]


def test_a_payload_is_checked_strictly_and_decoded_leniently() -> None:
    good: dict[str, object] = {"id": "w", "parts": [{"name": "p"}]}
    assert WHOLE.problem(good) is None
    problems = {
        "payload.id: missing": {"parts": []},
        "payload.id: must not be empty": {"id": " ", "parts": []},
        "payload.parts[0].name: missing": {"id": "w", "parts": [{}]},
        "payload.parts[0].size: expected an integer": {
            "id": "w",
            "parts": [{"name": "p", "size": 1.5}],
        },
        "payload.parts[0]: unknown keys 'colour'": {
            "id": "w",
            "parts": [{"name": "p", "colour": 1}],
        },
        "payload.weights['x']: expected a number": {**good, "weights": {"x": "heavy"}},
        "payload.level: expected one of 0, 1, 2": {**good, "level": 3},
        "payload.due: expected an ISO date": {**good, "due": "2026-13-01"},
        "payload.at: expected an ISO-8601 time with an offset": {**good, "at": "2026-01-05T09:00"},
        "payload.meta: expected an object": {**good, "meta": [1]},
        "payload.parts[0].size: expected a 64-bit integer": {
            "id": "w",
            "parts": [{"name": "p", "size": 2**63}],
        },
    }
    for expected, payload in problems.items():
        found = WHOLE.problem(payload)
        assert found is not None and found.startswith(expected), (expected, found)
    # Decoding what is stored never refuses: missing keys take their defaults.
    assert WHOLE.decode({"id": "w", "extra": 1}) == Whole("w", ())  # pyright: ignore[reportArgumentType]


def test_rows_read_by_position_decode_without_a_name_list() -> None:
    positions = CODEC.positions(offset=1)
    assert positions["sample_id"] == 1 and positions["when"] == 8
    row = ("scope", "s1", "a", 2, 0.5, True, ["n"], None, None)
    assert CODEC.decode_values(row, offset=1) == Sample("s1", "a", 2, 0.5, True, ("n",))
