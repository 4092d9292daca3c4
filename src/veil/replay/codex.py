"""Codex's rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) as
:class:`~veil.replay.transcripts.Transcript` s.

Each line is ``{"timestamp", "type", "payload"}``:

- ``session_meta``: the session's id, working directory and base instructions (the system
  prompt, in the fixed part);
- ``turn_context``: the model of the turn;
- ``response_item``: what the model read and wrote, in order — ``message`` (``developer`` and
  ``user`` ones are read by the next request; ``assistant`` ones are a reply's text),
  ``reasoning`` (its summary is the reply's thinking), ``function_call`` (its ``arguments`` a
  JSON text), ``custom_tool_call`` (``apply_patch``: its ``input`` the patch),
  ``local_shell_call``, and their ``*_output`` by ``call_id``;
- ``event_msg`` of type ``token_count``: the usage of the request just answered,
  ``info.last_token_usage.input_tokens`` (OpenAI counts cached tokens inside the input). The
  items the model wrote since the previous count are one reply; a count with nothing new (a
  rate-limit update) is no request;
- ``compacted``: Codex compacted the conversation itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from veil.replay.transcripts import (
    Builder,
    Reply,
    Transcript,
    as_mapping,
    count,
    json_lines,
    kind_of,
    text_of,
)

HOST = "codex"
_KINDS = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


def recognises(line: Mapping[str, Any]) -> bool:
    """A line only Codex writes."""
    return kind_of(line) in _KINDS and isinstance(line.get("payload"), Mapping)


def _arguments(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    kind = kind_of(payload)
    if kind == "custom_tool_call":
        return {"input": str(payload.get("input") or "")}
    if kind == "local_shell_call":
        return {"command": as_mapping(payload.get("action")).get("command") or []}
    raw = payload.get("arguments")
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {"arguments": raw}
        return as_mapping(value) or {"arguments": raw}
    return as_mapping(raw)


def _output(payload: Mapping[str, Any]) -> str:
    output = payload.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, Mapping):
        inner = cast(Mapping[str, Any], output)
        return text_of(inner.get("content")) or str(inner.get("output") or "")
    return text_of(output)


class _Reader:
    def __init__(self, path: Path) -> None:
        self.builder = Builder(path, HOST)
        self.current: Reply | None = None
        self.responses = 0
        self.last_total: object = None

    def open_reply(self) -> Reply:
        if self.current is None:
            self.responses += 1
            self.current = self.builder.reply(f"response-{self.responses}")
        return self.current

    def item(self, payload: Mapping[str, Any]) -> None:
        kind = kind_of(payload)
        if kind == "message":
            text = text_of(payload.get("content"))
            if payload.get("role") == "assistant":
                reply = self.open_reply()
                reply.thought = "\n".join(t for t in (reply.thought, text) if t)
            else:  # developer or user: read by the next request
                self.current = None
                self.builder.prompt(text)
        elif kind == "reasoning":
            summary = text_of(payload.get("summary"))
            reply = self.open_reply()
            reply.thought = "\n".join(t for t in (reply.thought, summary) if t)
        elif kind in _CALLS:
            call_id = str(payload.get("call_id") or payload.get("id") or "")
            name = "local_shell" if kind == "local_shell_call" else str(payload.get("name") or "")
            self.open_reply().calls.append((call_id, name, _arguments(payload)))
        elif kind in _OUTPUTS:
            self.builder.result(str(payload.get("call_id") or ""), _output(payload))

    def token_count(self, payload: Mapping[str, Any]) -> None:
        info = as_mapping(payload.get("info"))
        if not info:
            return
        total = info.get("total_token_usage")
        if total == self.last_total:  # the same count again: no new request
            return
        self.last_total = total
        if self.current is not None:
            last = as_mapping(info.get("last_token_usage"))
            self.current.recorded = count(last.get("input_tokens")) or None
            self.current = None


def read(path: Path) -> Transcript:
    """The session in a Codex rollout."""
    reader = _Reader(path)
    builder = reader.builder
    for _, line in json_lines(path):
        if line is None:
            builder.corrupt += 1
            continue
        kind = kind_of(line)
        payload = as_mapping(line.get("payload"))
        if kind == "session_meta":
            builder.id = str(payload.get("id") or builder.id)
            builder.cwd = str(payload.get("cwd") or "") or builder.cwd
            instructions = payload.get("base_instructions") or payload.get("instructions")
            builder.system = text_of([instructions]) if instructions else builder.system
        elif kind == "turn_context":
            builder.model = str(payload.get("model") or builder.model)
            builder.cwd = builder.cwd or str(payload.get("cwd") or "") or None
        elif kind == "response_item":
            reader.item(payload)
        elif kind == "event_msg" and payload.get("type") == "token_count":
            reader.token_count(payload)
        elif kind == "compacted":
            reader.current = None
            builder.compacted()
    return builder.build()


__all__ = ["HOST", "read", "recognises"]
