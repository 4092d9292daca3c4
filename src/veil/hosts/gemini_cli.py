"""Gemini CLI (npm ``@google/gemini-cli``), as Veil serves it.

Facts observed on the pinned 0.61.0 (its bundle, ``bundle/chunk-*.js``, and its requests to a
scripted server on 127.0.0.1):

- **Wire.** Gemini's ``generateContent`` API (:mod:`veil.dialects.gemini`): the loop streams
  ``POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`` with the whole conversation;
  side calls — the model router before a turn, later a loop detector — are
  ``:generateContent`` with a ``responseJsonSchema`` and no tools. ``:countTokens`` only for a
  new message holding media. Every ``functionCall`` it sends back carries an ``id`` (its own
  when the model gave none), and each ``functionResponse`` the same ``id``; a result's value is
  ``{"output": text}``.
- **Expand.** Veil's MCP server ``veil`` gives the model ``mcp_veil_expand`` (MCP tools are
  ``mcp_SERVER_TOOL``), offered directly among its tools.
- **Fixed part.** About 12,100 tokens (chars / 4) before any message: a system instruction of
  ~8,100 and 15 tool declarations of ~3,800, plus a first user part of session context (date,
  directory tree) of a few hundred; Veil's MCP server adds 10 tools, ~2,700 more: 15,000 in
  all under ``veil gemini``.
- **Its own compaction.** It compresses the chat (a summariser call and a check of it, asking
  for a ``<state_snapshot>``) when the last answer's ``usageMetadata.promptTokenCount`` — on
  ``--resume``, its own estimate of the whole history — reaches ``model.compressionThreshold``
  (default 0.5; 0 means the default) of its token limit: 1,048,576 for every Gemini model
  (``tokenLimit``), 256,000 for Gemma 4. Only what came before the latest user prompt is
  compressed: a headless run of one prompt never is. It also masks old tool outputs on its
  own: once more than 50,000 tokens of newer outputs are kept and 30,000 could go, each older
  output becomes a ``<tool_output_masked>`` preview and a file path; 0.61 takes the thresholds
  only from its experiment flags (``contextManagement.tools.outputMasking`` in the settings is
  not read), which is how ``veil gemini`` switches it off (:mod:`veil.launch.gemini_cli`).
- **MCP answers** reach the model wrapped: ``<untrusted_context>\nTEXT\n</untrusted_context>``.
- **Resume.** ``--resume`` sends every ``functionResponse`` of the earlier run twice (the same
  ``id``, back to back): the first is the result (stubbed or not), the copy a short note
  (:mod:`veil.context.window`: a result repeated word for word).
- **Model.** ``auto`` unless ``-m``/``--model`` or ``GEMINI_MODEL`` say otherwise: with an API
  key the loop asks ``gemini-3.1-pro-preview`` (the router asks ``gemini-3.5-flash-lite``).
- **Tools** (:func:`describe`): ``read_file`` (``file_path``, ``start_line``/``end_line``:
  1-based, inclusive), ``read_many_files`` (``include``: paths or globs), ``write_file`` and
  ``replace`` (``file_path``), ``run_shell_command`` (``command``), ``grep_search`` (earlier
  ``search_file_content``; ``pattern``, ``dir_path``), ``glob`` (``pattern``, ``dir_path``),
  ``list_directory`` (``dir_path``), ``web_fetch`` (``prompt``), ``google_web_search``
  (``query``). Paths are as the model wrote them (relative to the project, or absolute).
- **Versions.** :data:`TESTED`: only the pin of ``tests/hosts/binaries.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from veil.hosts.host import Env, Host, Use, command, read, relative, text, whole

TESTED = ("0.61.0", "0.61.0")
"""The oldest and the newest Gemini CLI Veil is tested with (``veil doctor`` warns outside)."""

TOKEN_LIMIT = 1_048_576
"""Gemini CLI's ``tokenLimit`` for every Gemini model (its ``DEFAULT_TOKEN_LIMIT`` too)."""
GEMMA_LIMIT = 256_000
"""…and for the Gemma 4 models it knows (``gemma-4-*``)."""
COMPRESSION_THRESHOLD = 0.5
"""The share of the token limit at which it compresses the chat (``model.compressionThreshold``
in its settings; passed here as :data:`THRESHOLD_VARIABLE` by :mod:`veil.launch.gemini_cli`)."""
THRESHOLD_VARIABLE = "GEMINI_COMPRESSION_THRESHOLD"
"""Not Gemini CLI's: the variable the launcher folds the settings' threshold into."""
MASKING_TAG = "tool_output_masked"
"""The tag Gemini CLI wraps a masked tool output in (absent from every request under Veil)."""
COMPRESSION_MARKER = "<state_snapshot>"
"""What its compression request asks the model to write (its last user message names it)."""

WRITES = frozenset({"write_file", "replace"})
SEARCHES = {"grep_search": "grep", "search_file_content": "grep", "glob": "glob"}
WEB = {"web_fetch": "prompt", "google_web_search": "query"}


def window(model: str, known: int, env: Env) -> int:
    """The token limit Gemini CLI uses for ``model`` (its own table, not the model's)."""
    return GEMMA_LIMIT if model.startswith("gemma-4-") else TOKEN_LIMIT


def compaction(model: str, window: int, env: Env) -> int | None:
    """Where Gemini CLI compresses the chat: its threshold (0.5 by default; a setting of 0 or
    none means the default) of its token limit. It cannot be switched off."""
    try:
        share = float(env.get(THRESHOLD_VARIABLE, "") or 0)
    except ValueError:
        share = 0.0
    return int(window * (share if 0 < share <= 1 else COMPRESSION_THRESHOLD))


def _lines(arguments: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """``read_file``'s first line and how many lines, from ``start_line``/``end_line``."""
    first, last = whole(arguments.get("start_line")), whole(arguments.get("end_line"))
    if last is None:
        return first, None
    return first, last - (first or 1) + 1


def describe(name: str, arguments: Mapping[str, Any], root: Path | None = None) -> Use | None:
    """What a call of Gemini CLI's tool ``name`` addresses (see :class:`~veil.hosts.host.Use`),
    or None: not one of its tools, or a call without the path or command its tool needs."""
    if name == "read_file":
        path = text(arguments, "file_path", "absolute_path")
        if not path:
            return None
        rel = relative(path, root)
        first, count = _lines(arguments)
        return read(rel, first, count)
    if name == "read_many_files":
        raw: object = arguments.get("include") or arguments.get("paths")
        given = [str(p) for p in raw if isinstance(p, str) and p] if isinstance(raw, list) else []  # pyright: ignore[reportUnknownVariableType]
        files = tuple(dict.fromkeys(relative(p, root) for p in given))
        return Use("read", " ".join(files), files) if files else None
    if name in WRITES:
        path = text(arguments, "file_path")
        rel = relative(path, root) if path else ""
        return Use("write", rel, (rel,)) if rel else None
    if name == "run_shell_command":
        return command(text(arguments, "command"))
    if name in SEARCHES:
        path = text(arguments, "dir_path", "path")
        words = (SEARCHES[name], text(arguments, "pattern"), relative(path, root) if path else "")
        return Use("look", " ".join(w for w in words if w))
    if name == "list_directory":
        path = text(arguments, "dir_path", "path")
        return Use("look", f"ls {relative(path, root)}") if path else None
    if name in WEB:
        found = text(arguments, WEB[name])
        return Use("look", found) if found else None
    return None


HOST = Host(
    name="gemini",
    title="Gemini CLI",
    expand_tool="mcp_veil_expand",
    fixed_tokens=15_000,
    window=window,
    compaction=compaction,
    default_model="gemini-3.1-pro-preview",
    compaction_markers=(COMPRESSION_MARKER,),
    model_variable="GEMINI_MODEL",
    describe=describe,
    expand_calls=("mcp_veil_expand",),
    package="@google/gemini-cli",
    tested=TESTED,
)
