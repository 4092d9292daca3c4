"""pi (npm ``@mariozechner/pi-coding-agent``), as Veil serves it.

Facts observed on the pinned 0.73.1 (its ``dist/`` and requests to the scripted server):

- **Expand.** pi has no MCP client. ``veil pi`` loads Veil's pi extension
  (``veil/launch/pi_extension.ts``), which registers the tool ``veil_expand`` — Veil's MCP
  ``expand`` (description and schema from ``veil mcp --project``) under the name the adapters
  use — sent as an ordinary tool beside pi's own; its answer is the restored result itself.
- **Fixed part.** About 1,500 tokens before any message (its system prompt — which also holds
  the paths of its own docs, the date and the working directory — four tools and
  ``veil_expand``), plus any ``AGENTS.md``/``CLAUDE.md`` it finds: :data:`FIXED_TOKENS` leaves
  room for a short one.
- **Its own compaction** (``core/compaction/compaction.js``, ``shouldCompact``): after a reply
  whose usage (input, output and cache, ``totalTokens``) exceeds ``contextWindow −
  reserveTokens`` — ``reserveTokens`` 16,384 unless its ``settings.json`` says otherwise
  (``compaction.reserveTokens``; ``compaction.enabled: false`` switches it off); it then
  summarises all but about the last ``keepRecentTokens`` (20,000) in a request without tools
  whose user message asks for "a structured context checkpoint summary". ``contextWindow`` is
  its model table's, or for a model of ``models.json`` its ``contextWindow`` (128,000 when
  not given). The launcher passes these as ``PI_MODEL_WINDOWS`` (a JSON object: model id →
  window), ``PI_COMPACTION_ENABLED`` and ``PI_COMPACTION_RESERVE``.
- **Model.** The one ``--model`` (``ID`` or ``PROVIDER/ID``) names, else its settings'
  ``defaultModel``, else the first provider with a key: ``claude-opus-4-7`` with an Anthropic
  key. Requests carry the bare model id.
- **Tools** (:func:`describe`; lower-case names, paths relative to its working directory or
  absolute, a leading ``@`` ignored): ``read`` (``path``, ``offset``: the first line,
  1-indexed, ``limit``: how many), ``write`` (``path``, ``content``), ``edit`` (``path``,
  ``edits``), ``bash`` (``command``); off by default: ``grep`` (``pattern``, ``path``),
  ``find`` (``pattern``, ``path``), ``ls`` (``path``).
- **Versions.** :data:`TESTED`: only the pin of ``tests/hosts/binaries.py`` (it runs on
  Node 20: ``engines: node >=20.6.0``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from veil.hosts.host import Env, Host, Use, command, read, relative, text, whole

TESTED = ("0.73.1", "0.73.1")
"""The oldest and the newest pi Veil is tested with."""
EXPAND = "veil_expand"
"""Veil's expand as the pi extension registers it (the adapters' name for it, too)."""
FIXED_TOKENS = 3_000
"""About 1,500 tokens measured on the pinned pi (chars/4 of its system prompt and tools, with
``veil_expand``), and room for a short ``AGENTS.md``."""
RESERVE = 16_384
"""pi's default ``compaction.reserveTokens``."""
SEARCHES = frozenset({"grep", "find"})
FALSE = frozenset({"0", "false", "no", "off"})


def _path(arguments: Mapping[str, Any], root: Path | None) -> str:
    """The ``path`` argument relative to ``root`` ("" without one); pi drops a leading ``@``
    (models sometimes write one)."""
    path = text(arguments, "path").removeprefix("@")
    return relative(path, root) if path else ""


def window(model: str, known: int, env: Env) -> int:
    """The window pi uses for ``model``: its ``models.json`` entry's when it has one
    (``PI_MODEL_WINDOWS``), else the model table's."""
    try:
        windows: object = json.loads(env.get("PI_MODEL_WINDOWS", "") or "{}")
    except ValueError:
        windows = {}
    found = cast(dict[str, object], windows).get(model) if isinstance(windows, dict) else None
    return found if isinstance(found, int) and not isinstance(found, bool) and found > 0 else known


def compaction(model: str, window: int, env: Env) -> int | None:
    """Where pi compacts on its own: ``window − reserveTokens`` (None: switched off)."""
    if env.get("PI_COMPACTION_ENABLED", "").lower() in FALSE:
        return None
    reserve = env.get("PI_COMPACTION_RESERVE", "")
    return window - (int(reserve) if reserve.isdigit() else RESERVE)


def describe(name: str, arguments: Mapping[str, Any], root: Path | None = None) -> Use | None:
    """What a call of pi's tool ``name`` addresses (see :class:`~veil.hosts.host.Use`), or
    None: not one of its tools, or a call without the path or command its tool needs (so a
    host whose tool shares the name but not the arguments — opencode's ``read {filePath}`` —
    is asked next)."""
    if name == "read":
        rel = _path(arguments, root)
        if not rel:
            return None
        first, count = whole(arguments.get("offset")), whole(arguments.get("limit"))
        return read(rel, first, count)
    if name in ("write", "edit"):
        rel = _path(arguments, root)
        return Use("write", rel, (rel,)) if rel else None
    if name == "bash":
        return command(text(arguments, "command"))
    if name in SEARCHES:
        pattern = text(arguments, "pattern")
        if not pattern:
            return None
        words = (name, pattern, _path(arguments, root))
        return Use("look", " ".join(w for w in words if w))
    if name == "ls":
        return Use("look", " ".join(w for w in ("ls", _path(arguments, root)) if w))
    return None


HOST = Host(
    name="pi",
    title="pi",
    expand_tool=EXPAND,
    fixed_tokens=FIXED_TOKENS,
    window=window,
    compaction=compaction,
    default_model="claude-opus-4-7",
    compaction_markers=(
        "Create a structured context checkpoint summary",
        "incorporate into the existing summary provided in <previous-summary>",
        "This is the PREFIX of a turn that was too large to keep",
    ),
    describe=describe,
    expand_calls=(EXPAND,),
    package="@mariozechner/pi-coding-agent",
    tested=TESTED,
)
