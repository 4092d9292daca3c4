"""opencode (npm ``opencode-ai``), as Veil serves it.

Facts observed on the pinned 1.18.33 (a compiled bun executable: its JavaScript read with
``strings``; its requests read off the scripted model server of ``tests/hosts``):

- **Expand.** An MCP server ``veil`` in its configuration gives the model ``veil_expand`` (its
  MCP tools are ``SERVER_TOOL``), sent with the other tools on every request — nothing is
  deferred.
- **Fixed part.** About 9,500 tokens before any message with the anthropic provider (system
  prompt about 2,500, its own ten tools about 5,300, Veil's MCP tools about 1,800); more with
  other MCP servers, skills or an ``AGENTS.md``.
- **Its own compaction** (``SessionCompaction.isOverflow``): after a step whose usage (input,
  cache reads and writes, output) reaches ``limit.input − reserved`` when the model states an
  input limit (``reserved``: ``compaction.reserved``, else ``min(20,000, max output)``), else
  ``limit.context − max output``; max output is ``min(limit.output, 32,000)`` (the cap is
  ``OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX``). The limits are its models.dev entry (bundled;
  ``claude-sonnet-4-5`` has a 1M context there) or the configuration's
  ``provider.P.models.M.limit``. ``compaction.auto: false`` or ``OPENCODE_DISABLE_AUTOCOMPACT``
  switch it off. A provider's overflow refusal also starts a compaction. Old tool outputs are
  pruned only with ``compaction.prune: true`` (off by default). The compaction request is an
  request without tools whose one user message holds the conversation as text and ends with a
  template ("Output exactly the Markdown structure shown inside <template>…"); observed: with
  ``limit: {context: 30000, output: 4000}`` it compacted after the step of 27,544 tokens, not
  after the one of 25,549 (the threshold 26,000).
- **Model.** ``-m/--model provider/model``, else the configuration's ``model``, else the last
  one used (its state's ``model.json``), else the best of the first configured provider's
  models; with only the anthropic provider that is ``claude-sonnet-4-6`` (:data:`DEFAULT_MODEL`).
  Titles go to its small model (``claude-haiku-4-5…``) as a request without tools.
- **Tools** (:func:`describe`): ``read`` (``filePath``, ``offset``: the first line, 1-based,
  ``limit``: how many), ``write``/``edit`` (``filePath``), ``apply_patch`` (``patchText``, the
  ``*** Update/Add/Delete File:`` format; offered to GPT models instead of edit/write),
  ``bash`` (``command``), ``glob``/``grep`` (``pattern``, ``path``), ``webfetch`` (``url``),
  ``websearch`` (``query``). Paths are absolute. It has no ``list`` tool in this version.
- **Versions.** :data:`TESTED`: only the pin of ``tests/hosts/binaries.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from veil.hosts.host import Env, Host, Use, command, read, relative, text, whole

TESTED = ("1.18.33", "1.18.33")
"""The oldest and the newest opencode Veil is tested with."""
DEFAULT_MODEL = "claude-sonnet-4-6"
"""What the pinned opencode picks when nothing names a model and anthropic is its provider."""
EXPAND = "veil_expand"
WRITES = frozenset({"write", "edit"})
SEARCHES = frozenset({"glob", "grep"})
WEB = {"webfetch": "url", "websearch": "query"}
PATCHED = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$", re.MULTILINE)

OUTPUT_CAP = 32_000
"""opencode's cap on a reply (``OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX`` moves it)."""
RESERVED_CAP = 20_000
"""Its compaction buffer under an input limit, at most (``compaction.reserved`` sets it)."""
TRUE = frozenset({"1", "true"})

LIMITS_VARIABLE = "VEIL_OPENCODE_LIMITS"
"""Set by the launcher (:func:`veil.launch.opencode.settings`): the configuration's model
limits as JSON, ``{"model id": {"context", "input", "output"}}``."""
AUTO_VARIABLE = "VEIL_OPENCODE_COMPACTION_AUTO"
"""Set by the launcher: ``false`` when the configuration says ``compaction.auto: false``."""
RESERVED_VARIABLE = "VEIL_OPENCODE_COMPACTION_RESERVED"
"""Set by the launcher: the configuration's ``compaction.reserved``."""


def _limits(model: str, env: Env) -> dict[str, int]:
    """The configuration's ``limit`` for ``model`` (its id with or without ``provider/``)."""
    try:
        table = json.loads(env.get(LIMITS_VARIABLE, "") or "{}")
    except ValueError:
        return {}
    if not isinstance(table, dict):
        return {}
    entry = cast(dict[str, Any], table).get(model) or cast(dict[str, Any], table).get(
        model.split("/", 1)[-1]
    )
    if not isinstance(entry, dict):
        return {}
    found = {k: whole(v) for k, v in cast(dict[str, Any], entry).items()}
    return {k: v for k, v in found.items() if v is not None and v > 0}


def _output(model: str, env: Env) -> int:
    """opencode's max output for ``model``: its limit, capped at :data:`OUTPUT_CAP` (or the
    cap's variable)."""
    from veil.llm.catalog import max_output_tokens

    cap_text = env.get("OPENCODE_EXPERIMENTAL_OUTPUT_TOKEN_MAX", "")
    cap = int(cap_text) if cap_text.isdigit() and int(cap_text) > 0 else OUTPUT_CAP
    limit = _limits(model, env).get("output") or max_output_tokens(model)
    return min(limit, cap) or cap


def window(model: str, known: int, env: Env) -> int:
    """The window opencode uses for ``model``: the configuration's ``limit.context`` when it
    sets one, else the table's (opencode's own models.dev entry may be larger: Veil's table,
    which knows the long-context prices, is the one it keeps to)."""
    return _limits(model, env).get("context") or known


def compaction(model: str, window: int, env: Env) -> int | None:
    """Where opencode compacts on its own (None: switched off)."""
    if (
        env.get("OPENCODE_DISABLE_AUTOCOMPACT", "").lower() in TRUE
        or env.get(AUTO_VARIABLE, "") == "false"
    ):
        return None
    output = _output(model, env)
    limit_input = _limits(model, env).get("input")
    if limit_input:
        reserved_text = env.get(RESERVED_VARIABLE, "")
        reserved = int(reserved_text) if reserved_text.isdigit() else min(RESERVED_CAP, output)
        return max(0, limit_input - reserved)
    return max(0, window - output)


def describe(name: str, arguments: Mapping[str, Any], root: Path | None = None) -> Use | None:
    """What a call of opencode's tool ``name`` addresses (see :class:`~veil.hosts.host.Use`),
    or None: not one of its tools, or a call without the path, command or patch its tool
    needs."""
    if name == "read":
        path = text(arguments, "filePath")
        if not path:
            return None
        rel = relative(path, root)
        first, count = whole(arguments.get("offset")), whole(arguments.get("limit"))
        return read(rel, first, count)
    if name in WRITES:
        path = text(arguments, "filePath")
        rel = relative(path, root) if path else ""
        return Use("write", rel, (rel,)) if rel else None
    if name == "apply_patch":
        patch = text(arguments, "patchText")
        if not patch.strip():
            return None
        files = tuple(dict.fromkeys(relative(f, root) for f in PATCHED.findall(patch)))
        return Use("write", " ".join(files) or "apply_patch", files)
    if name == "bash":
        return command(text(arguments, "command"))
    if name in SEARCHES:
        path = text(arguments, "path")
        words = (name, text(arguments, "pattern"), relative(path, root) if path else "")
        return Use("look", " ".join(w for w in words if w))
    if name in WEB:
        found = text(arguments, WEB[name])
        return Use("look", found) if found else None
    return None


HOST = Host(
    name="opencode",
    title="opencode",
    expand_tool=EXPAND,
    fixed_tokens=10_000,
    window=window,
    compaction=compaction,
    default_model=DEFAULT_MODEL,
    compaction_markers=("Output exactly the Markdown structure shown inside <template>",),
    model_variable="VEIL_OPENCODE_MODEL",
    describe=describe,
    expand_calls=(EXPAND,),
    resume="--session {session}",
    package="opencode-ai",
    tested=TESTED,
)
