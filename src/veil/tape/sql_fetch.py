"""The SELECT of a scoped projection read (``Store.fetch``), built from its filter. Pure.

:func:`select_rows` turns a table, a scope, a filter (column equality, a list value meaning
"one of", ``None`` meaning null, a :class:`~veil.tape.store.Range`), an order and a limit into
portable SQL with ``?`` placeholders and its parameters, every value encoded by its column's
type (:func:`~veil.tape.sql_codec.encode_value`). It names only columns the table declares
(anything else is :class:`~veil.tape.store.UnknownName`), so no caller's text reaches the SQL
but as a parameter. The backend runs it (:meth:`veil.tape.sql_tape.SqlTape.fetch_values`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, cast

from veil.tape.events import JSONValue
from veil.tape.projection import Table
from veil.tape.sql_codec import encode_value
from veil.tape.store import Range, UnknownName


def select_rows(
    spec: Table,
    *,
    scope: str,
    where: Mapping[str, object] | None,
    order_by: Sequence[str],
    limit: int | None,
    no_index: Callable[[str], str],
) -> tuple[str, list[Any]] | None:
    """The SQL and parameters of a read of ``spec``'s rows in ``scope``, in
    ``Table.column_names()`` order; ``None`` when the filter matches nothing (an empty "one
    of"). ``order_by`` names columns (prefix ``-`` for descending); the key follows as a
    tiebreak, wrapped by ``no_index`` (the dialect's way to keep it from steering the plan)."""
    table = spec.name
    types = {c.name: c.type for c in spec.columns}
    clauses = ["scope = ?"]
    params: list[Any] = [scope]
    for name, value in (where or {}).items():
        if name not in types:
            raise UnknownName(f"{table}.{name}")
        if value is None:
            clauses.append(f"{name} IS NULL")
        elif isinstance(value, Range):
            for op, bound in ((">=", value.low), ("<=", value.high)):
                if bound is not None:
                    clauses.append(f"{name} {op} ?")
                    params.append(encode_value(types[name], bound))
        elif isinstance(value, (list, tuple, set, frozenset)):
            values = sorted(cast(Collection[JSONValue], value), key=repr)
            if not values:
                return None
            clauses.append(f"{name} IN ({', '.join('?' for _ in values)})")
            params.extend(encode_value(types[name], v) for v in values)
        else:
            clauses.append(f"{name} = ?")
            params.append(encode_value(types[name], cast(JSONValue, value)))
    order: list[str] = []
    for item in order_by:
        name = item.removeprefix("-")
        if name not in types:
            raise UnknownName(f"{table}.{name}")
        order.append(f"{name} {'DESC' if item.startswith('-') else 'ASC'}")
    # The key tiebreak must not make the planner walk the primary key instead of the
    # filter's index (a full scope scan): SQLite's unary + hides it from the planner.
    order.extend(f"{no_index(k)} ASC" for k in spec.key)
    sql = (
        f"SELECT {', '.join(spec.column_names())} FROM {table} "
        f"WHERE {' AND '.join(clauses)} ORDER BY {', '.join(order)}"
    )
    if limit is not None:
        sql += " LIMIT ?"
        params.append(max(0, int(limit)))
    return sql, params
