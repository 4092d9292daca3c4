"""Claude Code's transcripts (``~/.claude/projects/<project>/<session>.jsonl``) as
:class:`~veil.replay.transcripts.Transcript` s.

Each line is one JSON object; the conversation's lines are ``user``, ``assistant``,
``attachment`` and ``system``, chained by ``parentUuid`` (``logicalParentUuid`` across a
compaction). The conversation replayed is the chain that ends at the file's last line — a
rewound branch is left out — and, where a parent is missing (a corrupt line), everything before
the break in file order.

- An ``assistant`` line is one content block of a reply: one API response is split over as
  many lines as it has blocks (text, thinking, each ``tool_use``), all with the same
  ``message.id`` and ``requestId`` and the same ``message.usage``. Lines of one id are one
  reply; its request's input is the usage's ``input_tokens + cache_creation_input_tokens +
  cache_read_input_tokens`` (Anthropic counts cached tokens apart). Claude Code's own
  ``<synthetic>`` replies (an error, an interruption) made no request and are left out.
- A ``user`` line is a prompt (text) or tool results (``tool_result`` blocks by
  ``tool_use_id``), with any text beside them; a compaction's summary (``isCompactSummary``)
  and a ``system`` line of subtype ``compact_boundary`` mark the host's own compaction.
- An ``attachment`` line is context Claude Code attached to the next request (the environment,
  the date, git status…); its ``rendered`` text is what the model read.
- Sub-agents' lines (``isSidechain``) are their own conversations: counted, not replayed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from veil.replay.transcripts import (
    Builder,
    Transcript,
    as_list,
    as_mapping,
    count,
    json_lines,
    kind_of,
    text_of,
)

HOST = "claude"
_KINDS = frozenset({"user", "assistant", "attachment", "system"})
_OTHER_KINDS = frozenset({"summary", "queue-operation", "file-history-snapshot"})
SYNTHETIC = "<synthetic>"


def recognises(line: Mapping[str, Any]) -> bool:
    """A line only Claude Code writes."""
    kind = kind_of(line)
    if kind in _KINDS:
        return "sessionId" in line or "uuid" in line
    return kind in _OTHER_KINDS and ("sessionId" in line or "leafUuid" in line)


def _conversation(
    lines: list[tuple[int, dict[str, Any]]],
) -> tuple[list[dict[str, Any]], set[str]]:
    """The main conversation's lines in file order (see the module docstring), and the reply
    ids of sub-agents' lines."""
    main: list[dict[str, Any]] = []
    side: set[str] = set()
    for _, line in lines:
        if kind_of(line) not in _KINDS:
            continue
        if line.get("isSidechain"):
            if kind_of(line) == "assistant":
                message = as_mapping(line.get("message"))
                side.add(str(message.get("id") or line.get("requestId") or line.get("uuid")))
            continue
        main.append(line)
    if not main:
        return [], side
    index = {str(line["uuid"]): n for n, line in enumerate(main) if line.get("uuid")}
    keep: set[int] = set()
    n = len(main) - 1
    while n not in keep:
        keep.add(n)
        line = main[n]
        parent = line.get("parentUuid") or line.get("logicalParentUuid")
        if not parent:
            break
        found = index.get(str(parent))
        if found is None:  # the chain breaks here: take what came before as it is
            keep.update(range(n))
            break
        n = found
    return [line for k, line in enumerate(main) if k in keep], side


def read(path: Path) -> Transcript:
    """The session in a Claude Code transcript."""
    builder = Builder(path, HOST)
    lines: list[tuple[int, dict[str, Any]]] = []
    for number, line in json_lines(path):
        if line is None:
            builder.corrupt += 1
        else:
            lines.append((number, line))
    conversation, side = _conversation(lines)
    builder.skipped = len(side)
    for line in conversation:
        builder.id = str(line.get("sessionId") or builder.id)
        if builder.cwd is None and isinstance(line.get("cwd"), str):
            builder.cwd = str(line["cwd"])
        kind = kind_of(line)
        if kind == "assistant":
            _assistant(builder, line)
        elif kind == "user":
            _user(builder, line)
        elif kind == "attachment":
            for item in as_list(line.get("rendered")):
                builder.prompt(text_of([item]) or str(as_mapping(item).get("content") or ""))
        elif kind == "system" and line.get("subtype") == "compact_boundary":
            builder.compacted()
    return builder.build()


def _assistant(builder: Builder, line: Mapping[str, Any]) -> None:
    message = as_mapping(line.get("message"))
    model = str(message.get("model") or "")
    if model == SYNTHETIC:
        return
    key = str(message.get("id") or line.get("requestId") or line.get("uuid") or "")
    reply = builder.reply(key)
    builder.model = model or builder.model
    usage = as_mapping(message.get("usage"))
    if usage:
        total = sum(
            count(usage.get(k))
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        reply.recorded = max(reply.recorded or 0, total)
    content = message.get("content")
    if isinstance(content, str):
        reply.thought = "\n".join(t for t in (reply.thought, content) if t)
        return
    for block in as_list(content):
        item = as_mapping(block)
        kind = kind_of(item)
        if kind == "tool_use":
            reply.calls.append(
                (
                    str(item.get("id") or ""),
                    str(item.get("name") or ""),
                    as_mapping(item.get("input")),
                )
            )
        elif kind in ("text", "thinking"):
            text = str(item.get("text") or item.get("thinking") or "")
            reply.thought = "\n".join(t for t in (reply.thought, text) if t)


def _user(builder: Builder, line: Mapping[str, Any]) -> None:
    if line.get("isCompactSummary"):
        builder.compacted()
        return
    if line.get("isVisibleInTranscriptOnly"):
        return
    content = as_mapping(line.get("message")).get("content")
    if isinstance(content, str):
        builder.prompt(content)
        return
    for block in as_list(content):
        item = as_mapping(block)
        if item.get("type") == "tool_result":
            builder.result(str(item.get("tool_use_id") or ""), text_of(item.get("content")))
        else:
            builder.prompt(text_of([block]))


__all__ = ["HOST", "read", "recognises"]
