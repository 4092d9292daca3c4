"""Validating tool arguments against their JSON schemas (the subset tools use). Pure.

In ``llm`` because a tool schema is part of a request (:class:`~veil.llm.messages.ToolSpec`):
the loop checks calls against it, a provider checks tool calls it recovers from text, and
``veil mcp`` checks its own tools' arguments.

Checks required properties, types (string, integer, number, boolean, object, array, null and
unions), ``enum`` and ``additionalProperties: false``. A failed validation becomes an error
result the model reads, never an exception in the loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def _matches(value: Any, type_name: str) -> bool:
    if type_name in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES.get(type_name, (object,)))


def validate_arguments(schema: Mapping[str, Any], arguments: Any) -> list[str]:
    if not isinstance(arguments, dict):
        return ["arguments must be a JSON object"]
    args = cast(dict[str, Any], arguments)
    if "_raw" in args and len(args) == 1:
        return [f"arguments are not valid JSON: {str(args['_raw'])[:200]!r}"]
    problems: list[str] = []
    props = cast(dict[str, Any], schema.get("properties", {}))
    for name in cast(list[str], schema.get("required", [])):
        if name not in args:
            problems.append(f"missing required {name!r}")
    for name, value in args.items():
        spec = props.get(name)
        if spec is None:
            if schema.get("additionalProperties") is False:
                problems.append(f"unexpected {name!r}")
            continue
        spec = cast(dict[str, Any], spec)
        wanted = spec.get("type")
        if wanted is not None:
            names = [wanted] if isinstance(wanted, str) else cast(list[str], wanted)
            if not any(_matches(value, n) for n in names):
                problems.append(
                    f"{name!r} must be {' or '.join(names)}, got {type(value).__name__}"
                )
                continue
        if "enum" in spec and value not in spec["enum"]:
            problems.append(f"{name!r} must be one of {spec['enum']}")
    return problems
