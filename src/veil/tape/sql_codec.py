"""How a projection table's values cross the SQL boundary, both ways.

On the way in a value is encoded by its portable column type (:func:`encode_value`): ``json``
becomes canonical JSON text, ``bool`` 0 or 1, ``time`` fixed-width UTC text; ``text``, ``int``
and ``real`` pass as they are. On the way out :meth:`TableCodec.decode_rows` undoes it. The
rules are the same for both backends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from veil.clock import format_time, parse_time
from veil.tape.events import InvalidEvent, JSONValue, canonical_json
from veil.tape.projection import Row, Table
from veil.tape.store import UnknownName

_PLAIN = frozenset({"text", "int", "real"})
_CANONICAL_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00\Z")
"""What :func:`~veil.clock.format_time` writes; such text is stored as it is."""


def encode_value(type_: str, value: JSONValue) -> Any:
    """``value`` as a column of portable type ``type_`` stores it (``None`` stays ``None``)."""
    if value is None:
        return None
    if type_ == "json":
        return canonical_json(value)
    if type_ == "bool":
        return 1 if value else 0
    if type_ == "time" and isinstance(value, str):
        return format_time(parse_time(value))
    return value


@dataclass(frozen=True)
class TableCodec:
    """How one table's values cross the SQL boundary, computed once per table.

    Both backends return ``text``, ``time``, ``int`` and ``real`` columns as the Python value
    itself (SQLite's column affinity and PostgreSQL's column types see to it), so only
    ``json`` (parsed) and ``bool`` (0/1 → False/True) columns are decoded per cell."""

    table: str
    """The table's name, for the errors :meth:`encode_row` raises."""
    names: frozenset[str]
    columns: tuple[tuple[str, str], ...]
    """``(name, type)`` in ``Table.column_names()`` order, ``scope`` first."""
    decoded: tuple[tuple[int, str], ...]
    """Positions and types of the columns that need decoding."""
    ordered: tuple[str, ...]
    """Column names in order."""
    encoded: tuple[tuple[int, str], ...]
    """Positions and types of the columns whose values are encoded on the way in."""

    @classmethod
    def of(cls, table: Table) -> TableCodec:
        columns = (("scope", "text"), *((c.name, str(c.type)) for c in table.columns))
        decoded = tuple((i, t) for i, (_, t) in enumerate(columns) if t in ("json", "bool"))
        encoded = tuple((i, t) for i, (_, t) in enumerate(columns) if t not in _PLAIN)
        names = tuple(n for n, _ in columns)
        return cls(table.name, frozenset(names), columns, decoded, names, encoded)

    def encode_row(self, row: Row) -> list[Any]:
        """The row's values in column order (``scope`` first, a missing column ``None``),
        encoded. A column the table does not declare raises
        :class:`~veil.tape.store.UnknownName`; a row without a text ``scope``
        :class:`~veil.tape.events.InvalidEvent`."""
        if not row.keys() <= self.names:
            unknown = set(row) - self.names
            raise UnknownName(f"{self.table}: unknown columns {sorted(unknown)}")
        out: list[Any] = list(map(row.get, self.ordered))
        if not isinstance(out[0], str):
            raise InvalidEvent(f"{self.table}: every row needs a scope")
        for i, type_ in self.encoded:
            value = out[i]
            if value is None:
                continue
            if type_ == "time" and isinstance(value, str) and _CANONICAL_TIME.match(value):
                continue  # already fixed-width UTC text
            out[i] = encode_value(type_, value)
        return out

    def decode_rows(self, rows: Sequence[Sequence[Any]]) -> list[tuple[JSONValue, ...]]:
        """Rows as the database returned them, in column order, decoded to JSON values."""
        if not self.decoded:
            return [tuple(row) for row in rows]
        out: list[tuple[JSONValue, ...]] = []
        for row in rows:
            values = list(row)
            for i, type_ in self.decoded:
                value = values[i]
                if value is None:
                    continue
                if type_ == "bool":
                    values[i] = bool(value)
                elif value == "[]":
                    values[i] = []
                else:
                    values[i] = json.loads(value)
            out.append(tuple(values))
        return out
