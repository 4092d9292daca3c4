"""Tool calls that a model wrote into its message text instead of the API's tool-call field.

Local models served through an OpenAI-compatible API often do this (a 1.5B Qwen did, every
time, when offered tools): the reply's ``content`` holds the call and ``tool_calls`` is empty,
so a harness that reads only the field sees no calls and the run ends on what looks like a final
answer. :func:`recover` finds them, in the shapes models write:

- Qwen / Hermes tags: ``<tool_call>{"name": …, "arguments": {…}}</tool_call>``;
- a fenced block: ```` ```json {"name": …, "arguments": …} ``` ```` (or a list of such objects);
- a bare JSON object (or list) in the text.

``arguments`` may also be called ``parameters`` or ``args``, may be a JSON string, and the object
may be wrapped as ``{"function": {...}}`` or ``{"tool": …}``. A candidate counts only when its
name is one of the tools offered and its arguments pass that tool's schema; the text around the
calls is kept as the message's content. Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from veil.llm.messages import ToolCall, ToolSpec
from veil.llm.tool_schema import validate_arguments

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FENCED = re.compile(r"```(?:json|tool_call|tool)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Recovered:
    calls: tuple[ToolCall, ...]
    content: str
    """The message text without the calls."""
    problems: tuple[str, ...] = ()
    """Why candidates that looked like calls were not taken (unknown tool, bad arguments)."""


def recover(text: str, tools: Sequence[ToolSpec], *, id_prefix: str = "text") -> Recovered:
    """The tool calls written in ``text`` (see the module doc); none when nothing valid."""
    if not text or not tools or "{" not in text:
        return Recovered((), text)
    offered = {t.name: t for t in tools}
    spans: list[tuple[int, int]] = []
    candidates: list[object] = []
    for pattern in (_TAGGED, _FENCED):
        for match in pattern.finditer(text):
            found = _json_values(match.group(1))
            if found:
                candidates.extend(found)
                spans.append(match.span())
        if candidates:
            break
    if not candidates:
        decoder = json.JSONDecoder()
        index = 0
        while (start := _next_start(text, index)) != -1:
            try:
                value, end = decoder.raw_decode(text, start)
            except ValueError:
                index = start + 1
                continue
            if _looks_like_call(value):
                candidates.append(value)
                spans.append((start, end))
            index = end
    calls: list[ToolCall] = []
    problems: list[str] = []
    for value in candidates:
        for item in cast(list[object], value) if isinstance(value, list) else [value]:
            call = _as_call(item, offered, problems)
            if call is not None:
                name, arguments = call
                calls.append(ToolCall(f"{id_prefix}_{len(calls) + 1}", name, arguments))
    if not calls:
        return Recovered((), text, tuple(problems))
    kept = text
    for start, end in sorted(spans, reverse=True):
        kept = kept[:start] + kept[end:]
    return Recovered(tuple(calls), kept.strip(), tuple(problems))


def _next_start(text: str, index: int) -> int:
    """Where the next JSON object or list may start at or after ``index`` (-1: nowhere)."""
    found = [i for i in (text.find("{", index), text.find("[", index)) if i != -1]
    return min(found) if found else -1


def _json_values(body: str) -> list[object]:
    body = body.strip()
    try:
        return [json.loads(body)]
    except ValueError:
        pass
    out: list[object] = []
    decoder = json.JSONDecoder()
    index = 0
    while (start := body.find("{", index)) != -1:
        try:
            value, end = decoder.raw_decode(body, start)
        except ValueError:
            index = start + 1
            continue
        out.append(value)
        index = end
    return out


def _looks_like_call(value: object) -> bool:
    if isinstance(value, list):
        items = cast(list[object], value)
        return bool(items) and all(_looks_like_call(v) for v in items)
    if not isinstance(value, dict):
        return False
    obj = cast(dict[str, Any], value)
    if isinstance(obj.get("function"), dict):
        return True
    return isinstance(obj.get("name") or obj.get("tool"), str) and any(
        k in obj for k in ("arguments", "parameters", "args", "input")
    )


def _as_call(
    item: object, offered: dict[str, ToolSpec], problems: list[str]
) -> tuple[str, dict[str, Any]] | None:
    if not isinstance(item, dict):
        return None
    obj = cast(dict[str, Any], item)
    if isinstance(obj.get("function"), dict):
        obj = cast(dict[str, Any], obj["function"])
    name = obj.get("name") or obj.get("tool")
    if not isinstance(name, str):
        return None
    key = next((k for k in ("arguments", "parameters", "args", "input") if k in obj), None)
    raw: object = obj[key] if key is not None else {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except ValueError:
            problems.append(f"{name}: arguments are not JSON")
            return None
    if not isinstance(raw, dict):
        problems.append(f"{name}: arguments are not an object")
        return None
    spec = offered.get(name)
    if spec is None:
        problems.append(f"{name!r} is not an offered tool")
        return None
    arguments = cast(dict[str, Any], raw)
    bad = validate_arguments(spec.parameters, arguments)
    if bad:
        problems.append(f"{name}: {'; '.join(bad)}")
        return None
    return name, arguments
