"""What a replay replays: a :class:`Trajectory` of :class:`Step` s. Pure values.

A step is one tool call and its result. Its *assistant* part is the text the model saw before
the call, in the order it saw it — the user's prompt (for a step that follows one), the
assistant's own text and thinking, and the call itself (its name and input) — and its
*observation* the result as the model read it. Parallel calls of one assistant message are
consecutive steps, the later ones marked ``parallel``; an assistant message without a call is a
step without a tool (an empty observation).

The prompt at step ``k`` — what the model had when it chose step ``k``'s action — is the fixed
part (the system prompt, the tool schemas, the first message), then every earlier step's
assistant part and observation. For an agent's transcript the fixed part is mostly not in the
file (:attr:`Trajectory.extra_fixed` is what was inferred for it) and the request at a step
also carries the user text just before it (:attr:`Step.prompt_tokens`), which every policy
keeps. Token counts are :func:`veil.tokens.estimate_tokens` (about characters / 4).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from veil.tokens import estimate_tokens


@dataclass(frozen=True)
class Step:
    """One step: the action the model chose and what it saw back."""

    i: int
    thought: str
    """The assistant's text before the action (a transcript: its text and thinking)."""
    action: str
    """The action as text, what the need detector reads: a command, or the tool and what it
    names (``Read src/a.py``, an edit's file and its old and new text, a patch)."""
    tool: str
    """The tool's name as the agent called it (``bash`` for the data sets' commands)."""
    kind: str
    """``view``, ``edit``, ``search``, ``run``, ``test``, ``text`` (no call), ``other``…"""
    paths: tuple[str, ...]
    observation: str
    """The observation as rendered into the prompt."""
    assistant: str
    """The assistant message as rendered into the prompt (thought + fenced action; in a
    transcript also the user's prompt before it)."""
    obs_tokens: int
    assistant_tokens: int
    open_file: str | None = None
    """SWE-agent only: the file open when the action was chosen."""
    input: Mapping[str, Any] | None = field(default=None, hash=False, compare=False)
    """The call's input as the agent sent it (a transcript); None: the data sets' steps."""
    prompt: str = ""
    """User-side text the model read just before this step's assistant message (a prompt,
    context the agent attached); part of :attr:`assistant` too."""
    prompt_tokens: int = 0
    parallel: bool = False
    """The call is in the same assistant message as the step before it."""
    request: bool = True
    """A model request was made for this step's assistant message (and recorded)."""


@dataclass(frozen=True)
class Trajectory:
    id: str
    set: str
    """The source: ``A`` / ``B`` (the data sets), ``claude`` / ``codex`` (transcripts)."""
    task: str
    system: str
    instance: str
    """The first user message (the task; a transcript: the prompt and the context before the
    first assistant message)."""
    steps: tuple[Step, ...]
    resolved: bool
    extra_fixed: int = 0
    """Tokens of the fixed part that are not in :attr:`system` or :attr:`instance` (inferred
    for a transcript: its system prompt and tool schemas)."""

    @property
    def system_tokens(self) -> int:
        return estimate_tokens(self.system)

    @property
    def instance_tokens(self) -> int:
        return estimate_tokens(self.instance)

    @property
    def fixed_tokens(self) -> int:
        """System + instance message: in every policy's prompt at every step."""
        return self.system_tokens + self.instance_tokens + self.extra_fixed

    def keep_all_peak(self) -> int:
        """The prompt at the last step with every earlier message in full."""
        return self.fixed_tokens + sum(s.assistant_tokens + s.obs_tokens for s in self.steps[:-1])

    def message_start(self, k: int) -> int:
        """The first step of step ``k``'s assistant message (``k`` unless it is a parallel
        call after others)."""
        while k > 0 and self.steps[k].parallel:
            k -= 1
        return k
