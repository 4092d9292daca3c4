"""What the scripted model server replays: a script's entries, and the request a turn sees.

A script (SPEC 7.1: ``{"turns": [{"content": "...", "tool_calls": [{"name": ...,
"arguments": {...}}]}]}``) is a list of entries, one per model request the server answers
from it (:class:`~veil.llm.scripted_server.ScriptedServer`). An entry is a
:class:`~veil.llm.scripted_wire.Turn`, a SPEC 7.1 turn object, or a callable that sees the
request (:class:`ModelRequest`) and returns one of those. Turn objects are validated when the
script is loaded (:func:`load_script`), a callable's result when it is called
(:func:`resolve_turn`); a malformed one raises :class:`~veil.llm.scripted.ScriptError` naming
the field.

Whether a request consumes a script turn at all is the side-call rule; the default
(:func:`default_side_call`) answers a request that offers no tools (Claude Code's titles and
summaries) aside.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from veil.llm.scripted import ScriptError, parse_script
from veil.llm.scripted_requests import (
    ToolCallSeen,
    ToolResultSeen,
    tool_calls_in,
    tool_names,
    tool_results_in,
)
from veil.llm.scripted_wire import Api, ToolUse, Turn


@dataclass(frozen=True)
class ModelRequest:
    """A model request as a turn callable and the side-call rule see it."""

    api: Api
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    turn: int = 0
    """The script turn this request consumes (from 1); 0 while deciding whether it is a side
    call."""

    def tool_calls(self) -> list[ToolCallSeen]:
        """The tool calls in the request's history, in order."""
        return tool_calls_in(self.api, self.body)

    def tool_results(self) -> list[ToolResultSeen]:
        """The tool results in the request's history, in order."""
        return tool_results_in(self.api, self.body)

    def tool_names(self) -> list[str]:
        """The names of the tools the request offers (``NAMESPACE.TOOL`` inside a Responses
        namespace tool)."""
        return tool_names(self.api, self.body)


TurnFunction = Callable[[ModelRequest], "Turn | Mapping[str, Any]"]
TurnSource = Turn | Mapping[str, Any] | TurnFunction
"""A script entry: a :class:`Turn`, a SPEC 7.1 turn object, or a callable producing one."""


def default_side_call(request: ModelRequest) -> bool:
    """The default side-call rule: a request that offers the model no tools."""
    return not request.body.get("tools")


def turn_from_mapping(entry: Mapping[str, Any]) -> Turn:
    """A SPEC 7.1 turn object as a :class:`Turn`; a malformed one raises
    :class:`~veil.llm.scripted.ScriptError` naming the field."""
    (response,) = parse_script({"turns": [dict(entry)]})
    usage = response.usage
    explicit = entry.get("usage") is not None
    return Turn(
        content=response.message.content,
        tool_calls=tuple(ToolUse(c.name, dict(c.arguments)) for c in response.message.tool_calls),
        usage=(usage.input_tokens, usage.output_tokens) if explicit else None,
        stop_reason=cast(str | None, entry.get("stop_reason")),
    )


def load_script(script: str | Path | Mapping[str, Any] | Sequence[TurnSource]) -> list[TurnSource]:
    """The entries of a script given as a JSON file's path, a parsed ``{"turns": [...]}``
    object, or a sequence of :class:`Turn`, turn objects and turn callables. Turn objects are
    validated at once (:class:`~veil.llm.scripted.ScriptError`)."""
    if isinstance(script, str | Path):
        path = Path(script)
        try:
            data: object = json.loads(path.read_text())
        except FileNotFoundError:
            raise ScriptError(f"script file not found: {path}") from None
        except json.JSONDecodeError as exc:
            raise ScriptError(f"{path} is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ScriptError('a script is a JSON object {"turns": [...]}')
        script = cast(dict[str, Any], data)
    if isinstance(script, Mapping):
        parse_script(dict(script))  # validates the whole script, naming the turn
        turns = cast(list[Mapping[str, Any]], script["turns"])
        return [turn_from_mapping(entry) for entry in turns]
    out: list[TurnSource] = []
    for entry in script:
        if isinstance(entry, Mapping):
            out.append(turn_from_mapping(cast(Mapping[str, Any], entry)))
        else:
            out.append(entry)
    return out


def resolve_turn(source: TurnSource, request: ModelRequest) -> Turn:
    """The turn an entry answers ``request`` with (a callable is called here: what it raises,
    the server answers as a failed turn)."""
    if isinstance(source, Turn):
        return source
    if isinstance(source, Mapping):
        return turn_from_mapping(cast(Mapping[str, Any], source))
    produced = source(request)
    if isinstance(produced, Turn):
        return produced
    if isinstance(produced, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        return turn_from_mapping(produced)
    raise TypeError(f"a turn callable returned {type(produced).__name__}, not a Turn or dict")


__all__ = [
    "ModelRequest",
    "TurnFunction",
    "TurnSource",
    "default_side_call",
    "load_script",
    "resolve_turn",
    "turn_from_mapping",
]
