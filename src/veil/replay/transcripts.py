"""An agent's own session file as a :class:`Transcript`: the :class:`~veil.replay.trajectory.
Trajectory` of its requests and the input tokens the provider reported for each. Pure but for
reading the file.

Two formats, one module each: Claude Code's transcripts (``~/.claude/projects/*/*.jsonl``,
:mod:`veil.replay.claude_code`) and Codex's rollouts (``~/.codex/sessions/YYYY/MM/DD/
rollout-*.jsonl``, :mod:`veil.replay.codex`). Both readers hand this module what the file says,
in order — user-side text the model read (:meth:`Builder.prompt`), each model reply with its text
and tool calls and the usage its request reported (:meth:`Builder.reply`), each tool's result
(:meth:`Builder.result`), the host's own compactions (:meth:`Builder.compacted`) — and
:meth:`Builder.build` makes the steps (:mod:`veil.replay.trajectory`): one per tool call, the
calls of one reply consecutive (the later ones ``parallel``: no request of their own), a reply
without a call a step without a tool.

The fixed part: the file does not hold the system prompt nor the tool schemas; what the first
request's recorded usage says beyond the text before the first reply is
:attr:`~veil.replay.trajectory.Trajectory.extra_fixed`. Every later request is then rebuilt
from the file, and :attr:`Transcript.recorded` is what to check it against.

A line that is not JSON is skipped and counted (:attr:`Transcript.corrupt_lines`); a file with no
line of either format, or no request at all, is a :class:`TranscriptError` naming it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from veil.replay.calls import describe
from veil.replay.trajectory import Step, Trajectory
from veil.tokens import estimate_tokens


class TranscriptError(Exception):
    """A file that cannot be replayed; the message names it and says why, in one line."""


@dataclass(frozen=True)
class Transcript:
    """One session file, rebuilt."""

    path: str
    host: str
    """``claude`` (Claude Code) or ``codex`` (Codex)."""
    id: str
    model: str
    trajectory: Trajectory
    recorded: tuple[int | None, ...]
    """Per step: the input tokens the provider reported for the step's request (cached and
    uncached together); None for a parallel call (no request of its own) or a request whose
    usage the file does not hold."""
    corrupt_lines: int = 0
    compacted_at: int | None = None
    """The first step after the host compacted the conversation itself (None: it never did).
    The requests from there on are not the whole history: the fit is measured before it."""
    compactions: int = 0
    skipped_requests: int = 0
    """Requests the file records beside the conversation (sub-agents), not replayed."""

    @property
    def requests(self) -> int:
        return sum(1 for s in self.trajectory.steps if s.request)


Call = tuple[str, str, Mapping[str, Any]]
"""A tool call: its id, the tool's name and its input."""


@dataclass
class Reply:
    """One model reply: its text (and thinking), its tool calls ``(id, name, input)``, the user
    text read just before its request, and the usage its request reported."""

    key: str
    prompt: str = ""
    thought: str = ""
    calls: list[Call] = field(default_factory=list[Call])
    recorded: int | None = None


class Builder:
    """Collects a session in file order and makes its :class:`Transcript` (see the module
    docstring)."""

    def __init__(self, path: Path, host: str) -> None:
        self.path = path
        self.host = host
        self.id = path.stem
        self.model = ""
        self.cwd: str | None = None
        self.system = ""
        self.corrupt = 0
        self.skipped = 0
        self.compactions = 0
        self.compacted_at: int | None = None
        self._compacted_before: int | None = None
        self._instance: list[str] = []
        self._pending: list[str] = []
        self._replies: list[Reply] = []
        self._by_key: dict[str, Reply] = {}
        self._results: dict[str, str] = {}

    def prompt(self, text: str) -> None:
        """User-side text the model reads with its next request (a prompt, attached context)."""
        if not text:
            return
        (self._pending if self._replies else self._instance).append(text)

    def reply(self, key: str) -> Reply:
        """The reply ``key`` (a message id): a new one takes the text read since the last."""
        found = self._by_key.get(key)
        if found is None:
            found = self._by_key[key] = Reply(key, prompt="\n".join(self._pending))
            self._pending.clear()
            self._replies.append(found)
        return found

    @property
    def replies(self) -> Sequence[Reply]:
        return self._replies

    def result(self, call_id: str, text: str) -> None:
        self._results[call_id] = text

    def compacted(self) -> None:
        """The host compacted the conversation here (its own summary follows); the marks of
        one compaction (a boundary, then the summary) count once."""
        if self._compacted_before == len(self._replies):
            return
        self._compacted_before = len(self._replies)
        self.compactions += 1
        if self.compacted_at is None:
            self.compacted_at = len(self._replies)

    def build(self) -> Transcript:
        if not self._replies:
            side = f" (only {self.skipped} of sub-agents, not replayed)" if self.skipped else ""
            raise TranscriptError(f"{self.path}: no model request recorded in it{side}")
        steps: list[Step] = []
        recorded: list[int | None] = []
        compacted_at: int | None = None
        for n, reply in enumerate(self._replies):
            if n == self.compacted_at:
                compacted_at = len(steps)
            prompt = reply.prompt
            calls = reply.calls or [("", "", {})]
            for c, (call_id, name, args) in enumerate(calls):
                steps.append(self._step(len(steps), reply, c, call_id, name, args, prompt))
                recorded.append(reply.recorded if c == 0 else None)
        instance = "\n".join(self._instance)
        first = recorded[0]
        visible = estimate_tokens(self.system) + estimate_tokens(instance)
        extra = max(0, first - visible) if first is not None else 0
        trajectory = Trajectory(
            id=self.id, set=self.host, task=self._instance[-1] if self._instance else "",
            system=self.system, instance=instance, steps=tuple(steps), resolved=False,
            extra_fixed=extra,
        )  # fmt: skip
        return Transcript(
            path=str(self.path), host=self.host, id=self.id, model=self.model,
            trajectory=trajectory, recorded=tuple(recorded), corrupt_lines=self.corrupt,
            compacted_at=compacted_at, compactions=self.compactions,
            skipped_requests=self.skipped,
        )  # fmt: skip

    def _step(
        self,
        i: int,
        reply: Reply,
        c: int,
        call_id: str,
        name: str,
        args: Mapping[str, Any],
        prompt: str,
    ) -> Step:
        first = c == 0
        thought = reply.thought if first else ""
        prompt = prompt if first else ""
        observation = self._results.get(call_id, "") if name else ""
        if name:
            action, kind, paths = describe(name, args, self.cwd)
            call = json.dumps(dict(args), ensure_ascii=False)
            call_tokens = estimate_tokens(name + call)
            shown = f"{name} {call}"
        else:
            action, kind, paths, call_tokens, shown = "", "text", (), 0, ""
        # what the request that follows carries of this step, counted as the proxy counts it
        assistant_tokens = estimate_tokens(prompt) + estimate_tokens(thought) + call_tokens
        return Step(
            i=i, thought=thought, action=action, tool=name, kind=kind, paths=paths,
            observation=observation,
            assistant="\n".join(t for t in (prompt, thought, shown) if t),
            obs_tokens=estimate_tokens(observation), assistant_tokens=assistant_tokens,
            input=dict(args) if name else None, prompt=prompt,
            prompt_tokens=estimate_tokens(prompt), parallel=not first, request=first,
        )  # fmt: skip


def json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """``(line number, object)`` for each non-blank line; ``None`` for a line that is not a JSON
    object (corrupt). Raises :class:`TranscriptError` when the file cannot be read as text."""
    try:
        with path.open(encoding="utf-8") as fh:
            for number, raw in enumerate(fh, 1):
                line = raw.strip()
                if not line:
                    continue
                try:
                    value = json.loads(line)
                except ValueError:
                    yield number, None
                    continue
                if isinstance(value, dict):
                    yield number, cast(dict[str, Any], value)
                else:
                    yield number, None
    except UnicodeDecodeError:
        raise TranscriptError(f"{path}: not a text file (not a JSON lines transcript)") from None
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def text_of(content: object) -> str:
    """The text of a message's content: a string, or the text of its blocks (``text``,
    ``input_text``, ``output_text``; an image as ``[image]``)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in cast(list[object], content):
        if isinstance(block, str):
            parts.append(block)
            continue
        if not isinstance(block, Mapping):
            continue
        item = cast(Mapping[str, Any], block)
        text = item.get("text")
        if isinstance(text, str):
            parts.append(text)
        elif str(item.get("type", "")).endswith("image"):
            parts.append("[image]")
    return "\n".join(parts)


def count(value: object) -> int:
    """A token count as the file holds it (anything else: 0)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(0, int(value))


def kind_of(line: Mapping[str, Any], key: str = "type") -> str:
    """A line's ``type`` (or ``key``) when it is text, else ``""``."""
    value = line.get(key)
    return value if isinstance(value, str) else ""


def as_list(value: object) -> list[object]:
    return cast(list[object], value) if isinstance(value, list) else []


def as_mapping(value: object) -> Mapping[str, Any]:
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else {}


def read_transcript(path: Path) -> Transcript:
    """The session in ``path``, whichever agent wrote it (:class:`TranscriptError` if
    neither)."""
    from veil.replay import claude_code, codex

    for number, line in json_lines(path):
        if line is None:
            continue
        if codex.recognises(line):
            return codex.read(path)
        if claude_code.recognises(line):
            return claude_code.read(path)
        if number >= SNIFF_LINES:
            break
    raise TranscriptError(
        f"{path}: neither a Claude Code transcript nor a Codex rollout (no line of either in "
        f"its first {SNIFF_LINES})"
    )


SNIFF_LINES = 50
"""Lines read to tell the format."""


def find_transcripts(paths: Sequence[Path]) -> list[tuple[Path, bool]]:
    """Every file to replay: a file as it is, a directory's ``*.jsonl`` recursively (sorted).
    Each with whether it was named (a named file must be a session; a found one may be
    skipped). Raises :class:`TranscriptError` for a path that does not exist or a directory
    with no ``*.jsonl`` under it."""
    out: list[tuple[Path, bool]] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.jsonl") if p.is_file())
            if not found:
                raise TranscriptError(f"{path}: no *.jsonl file under this directory")
            out += [(p, False) for p in found]
        elif path.exists():
            out.append((path, True))
        else:
            raise TranscriptError(f"{path}: no such file or directory")
    return out


__all__ = [
    "Builder",
    "Reply",
    "Transcript",
    "TranscriptError",
    "as_list",
    "as_mapping",
    "count",
    "find_transcripts",
    "json_lines",
    "kind_of",
    "read_transcript",
    "text_of",
]
