"""The need detector: when does a later step need an earlier observation? Pure.

A *need* is a step ``k`` whose action requires the content of some earlier observation; its
*sources* are every earlier step ``j < k`` whose observation would satisfy it. Under a policy, a
need is a **miss** when none of its sources is in the prompt in full at step ``k`` (evicted,
stubbed, summarised or dropped). Three rules, tried in this order for each step:

1. **region** — step ``k`` views a file region (``cat``/``nl``/``head``/``tail``/``sed -n
   'a,bp'`` of one file, SWE-agent ``open``/``goto``/``scroll_*``) and an earlier step showed an
   overlapping region of the same file, with no edit to that file in between. Lines come from
   the numbers printed in the observation (``nl``/``cat -n``, SWE-agent's ``N:`` window), else
   from the action (``sed -n 'a,bp'``: a..b, ``head -n N``: 1..N, plain ``cat``/``tail``: the
   whole file). A view piped through a filter (``| grep``) or a pattern-addressed ``sed``/``awk``
   without line numbers has no region, nor has one whose printed numbers cover less than half
   of their min..max span (``nl | grep``).
   SWE-agent ``edit``/``create`` observations (the window after the edit) are sources too.
   One need per view step. Views with a region never fall through to rule 2.
2. **command** — step ``k`` re-runs exactly an earlier action (whitespace collapsed; for
   SWE-agent interface commands the open file is part of the command), with no edit step
   (any file) in between. Edits, submits, format errors, ``goto`` and ``scroll_*`` never count.
   One need per step.
3. **identifier** — step ``k``'s action names an identifier that an earlier observation
   printed: a path (``a/b.py``, ``x.py``), a symbol (``snake_case``, ``_private`` or
   ``CamelCase``, at least 4 characters, or a dotted name of 8+ characters such as
   ``astropy.modeling.core``; not a Python keyword or builtin, not a dunder) or an error text
   (a quoted phrase of 12-120 characters: words of letters, digits and ``.:'-`` separated by
   spaces, at least 8 letters).
   The identifier must not occur in the system or instance message (always in the prompt) —
   nor, for a path, as the dotted module name (``a/b.py`` vs ``a.b``) — nor in any earlier action
   (the agent wrote it itself). Sources: every earlier observation
   containing it as a whole word. One need per (step, identifier).

Paths are compared without a leading ``/testbed/``, ``/<owner>__<repo>/`` or ``./``.

The same rules read the data sets' trajectories (``benchmarks/replay``) and the agents' own
transcripts (:mod:`veil.replay.claude_code`, :mod:`veil.replay.codex`), whose tool calls
become actions of the same shape (:mod:`veil.replay.calls`): a ``Read`` is a view of its file
(Claude Code prints the line numbers, ``N<tab>``, as ``cat -n`` does), an edit or a patch names
its file and carries its text, a shell command is itself.
"""

from __future__ import annotations

import builtins
import keyword
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

Rule = Literal["region", "command", "identifier", "copy"]
RULES: tuple[Rule, ...] = ("region", "command", "identifier")
"""The detector's rules. ``copy`` is the second detector's (:func:`copied_lines`), reported
apart: it is not part of the miss rate the goals read."""


class StepLike(Protocol):
    @property
    def action(self) -> str: ...
    @property
    def observation(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def paths(self) -> tuple[str, ...]: ...
    @property
    def open_file(self) -> str | None: ...


@dataclass(frozen=True)
class SimpleStep:
    """A step for tests and callers without a trajectory record."""

    action: str
    observation: str
    kind: str = "other"
    tool: str = "bash"
    paths: tuple[str, ...] = ()
    open_file: str | None = None


@dataclass(frozen=True)
class Need:
    step: int
    rule: Rule
    evidence: str
    """The file region (``path:lo-hi``), the command, or the identifier."""
    sources: tuple[int, ...]
    """Earlier steps whose observation, in the prompt in full, satisfies the need."""


@dataclass(frozen=True)
class Region:
    path: str
    lo: float
    hi: float

    @property
    def lines(self) -> float:
        return self.hi - self.lo + 1

    def overlaps(self, other: Region) -> bool:
        """Same file, and the shared lines are at least half of the smaller region (so
        SWE-agent's scroll windows, which share a line or two, do not overlap)."""
        if self.path != other.path:
            return False
        shared = min(self.hi, other.hi) - max(self.lo, other.lo) + 1
        return shared > 0 and shared >= 0.5 * min(self.lines, other.lines)

    def label(self) -> str:
        hi = "end" if math.isinf(self.hi) else str(int(self.hi))
        return f"{self.path}:{int(self.lo)}-{hi}"


_ROOT = re.compile(r"^(?:/testbed/|/[\w.-]+__[\w.-]+/|\./)")
_NUMBERED_NL = re.compile(r"^ *(\d+)\t", re.MULTILINE)
_NUMBERED_SWE = re.compile(r"^(\d+):", re.MULTILINE)
_FILE_HEADER = re.compile(r"^\[File: (\S+) \(\d+ lines total\)\]", re.MULTILINE)
_SED_RANGE = re.compile(r"sed\s+-n\s+['\"]?(\d+)(?:\s*,\s*(\d+))?p")
_HEAD = re.compile(r"\bhead\s+(?:-n\s*|-)(\d+)")
_FILTER = re.compile(r"\|\s*(?:grep|awk|sed|head|tail|cut|sort|uniq|wc)\b")
_SWE_NAV = frozenset({"goto", "scroll_up", "scroll_down"})
_SWE_VIEW = frozenset({"open", "goto", "scroll_up", "scroll_down"})
_NOT_COMMANDS = frozenset({"edit", "submit", "format_error"})

_PATHLIKE = re.compile(
    r"(?<![\w/.-])(?:/?[\w.-]+/)+[\w.-]*\w|(?<![\w/.-])[\w-]+\.(?:py|pyx|pyi|txt|cfg|ini|toml|"
    r"json|yaml|yml|rst|md|c|h|cpp|js|html|sh)\b"
)
_SYMBOL = re.compile(r"(?<![\w.])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_QUOTED = re.compile(r"'([^'\n]{12,120})'|\"([^\"\n]{12,120})\"")
_PHRASE = re.compile(r"[A-Za-z][\w.:'-]*(?: [\w.:'-]+)+")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z][a-z]+[A-Z]")
_WORD = re.compile(r"\w+")
_SKIP_SYMBOLS = frozenset(dir(builtins)) | frozenset(keyword.kwlist)
_REPO_ROOT = re.compile(r"/[A-Za-z][\w.-]*__[\w.-]+(?=/)")
"""SWE-bench checkouts live at ``/<owner>__<repo>/``: that directory is not an identifier."""
_SKIP_DOTTED_HEADS = frozenset({"self", "cls", "os", "sys", "np", "re", "json"})


def norm_path(path: str) -> str:
    return _ROOT.sub("", path.strip().strip("'\""))


def _is_symbol(name: str) -> bool:
    if len(name) < 4 or name in _SKIP_SYMBOLS:
        return False
    if name.startswith("__") and name.endswith("__"):
        return False
    return "_" in name or bool(_CAMEL.search(name))


def identifiers(action: str) -> list[str]:
    """The identifiers an action names (rule 3's candidates), in order, without duplicates."""
    found: dict[str, None] = {}
    for m in _PATHLIKE.finditer(action):
        path = norm_path(m.group(0)).rstrip(".")
        if len(path) >= 5 and not path.startswith(("/dev/", "/tmp/", "/usr/", "/bin/")):
            found[path] = None
    for m in _QUOTED.finditer(action):
        text = m.group(1) or m.group(2) or ""
        if _PHRASE.fullmatch(text) and sum(c.isalpha() for c in text) >= 8:
            found[text] = None
    for m in _SYMBOL.finditer(_REPO_ROOT.sub(" ", action)):
        name = m.group(0)
        parts = name.split(".")
        if (
            len(parts) >= 2
            and parts[0] not in _SKIP_DOTTED_HEADS
            and len(name) >= 8
            and all(parts)
            and not re.fullmatch(r"[\w-]+\.\w{1,4}", name)
        ):
            found[name] = None
        for part in parts:
            if _is_symbol(part):
                found[part] = None
    return list(found)


def _numbered_range(observation: str, swe: bool) -> tuple[int, int] | None:
    """The printed line numbers as one range — only when they are mostly contiguous (at least
    half of min..max printed), so a ``| grep`` over numbered lines is not a region."""
    nums = {int(n) for n in (_NUMBERED_SWE if swe else _NUMBERED_NL).findall(observation)}
    if not nums:
        return None
    lo, hi = min(nums), max(nums)
    return (lo, hi) if len(nums) >= 0.5 * (hi - lo + 1) else None


def region_of(step: StepLike) -> Region | None:
    """The file region a step's observation shows (views, and SWE-agent edit windows)."""
    swe = step.tool in _SWE_VIEW or step.tool in ("edit", "create")
    header = _FILE_HEADER.search(step.observation) if swe else None
    if step.tool in ("edit", "create"):
        if header is None:
            return None
        numbered = _numbered_range(step.observation, True)
        return Region(norm_path(header.group(1)), *numbered) if numbered else None
    if step.kind != "view":
        return None
    if swe:
        path = header.group(1) if header else (step.open_file or "")
        numbered = _numbered_range(step.observation, True)
        if not path or numbered is None:
            return None
        return Region(norm_path(path), *numbered)
    paths = {norm_path(p) for p in step.paths}
    if len(paths) != 1:
        return None
    path = paths.pop()
    numbered = _numbered_range(step.observation, False)
    if numbered is not None:
        return Region(path, *numbered)
    sed = _SED_RANGE.search(step.action)
    if sed:
        lo = int(sed.group(1))
        return Region(path, lo, int(sed.group(2) or lo))
    head = _HEAD.search(step.action)
    if head:
        return Region(path, 1, int(head.group(1)))
    if _FILTER.search(step.action) or re.search(r"\b(?:sed|awk)\b", step.action):
        return None  # filtered, or a pattern-addressed sed/awk: which lines is unknown
    return Region(path, 1, math.inf)


def _command_key(step: StepLike) -> str | None:
    action = " ".join(step.action.split())
    if not action or step.kind in _NOT_COMMANDS or step.tool in _NOT_COMMANDS:
        return None
    if step.tool in _SWE_NAV:
        return None
    if step.tool not in ("bash", "submit", "format_error"):
        return f"{action} @{step.open_file or ''}"
    return action


def _edited(step: StepLike) -> set[str]:
    if step.kind != "edit":
        return set()
    files = {norm_path(p) for p in step.paths}
    if step.tool in ("edit", "create") and step.open_file:
        files.add(norm_path(step.open_file))
    header = _FILE_HEADER.search(step.observation)
    if header:
        files.add(norm_path(header.group(1)))
    return files


def _contains_word(text: str, words: set[str], needle: str) -> bool:
    if "." not in needle and "/" not in needle and " " not in needle and "-" not in needle:
        return needle in words
    start = text.find(needle)
    while start >= 0:
        end = start + len(needle)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            return True
        start = text.find(needle, start + 1)
    return False


def detect_needs(steps: Sequence[StepLike], context: str = "") -> list[Need]:
    """Every need of a trajectory, in step order. ``context`` is the text always in the prompt
    (system + instance message); identifiers found there are never needs."""
    needs: list[Need] = []
    regions = [region_of(s) for s in steps]
    keys = [_command_key(s) for s in steps]
    edits = [_edited(s) for s in steps]
    words: list[set[str]] = []
    earlier_actions = ""
    for k, step in enumerate(steps):
        # rule 1: region
        region = regions[k] if step.kind == "view" else None
        if region is not None:
            sources: list[int] = []
            for j in range(k):
                rj = regions[j]
                if rj is None or not rj.overlaps(region):
                    continue
                if any(region.path in edits[e] for e in range(j + 1, k)):
                    continue
                sources.append(j)
            if sources:
                needs.append(Need(k, "region", region.label(), tuple(sources)))
        else:
            # rule 2: command
            key = keys[k]
            if key is not None:
                last_edit = max((e for e in range(k) if steps[e].kind == "edit"), default=-1)
                sources = [j for j in range(last_edit + 1, k) if keys[j] == key]
                if sources:
                    needs.append(Need(k, "command", key, tuple(sources)))
        # rule 3: identifier
        for ident in identifiers(step.action):
            if ident in context or ident in earlier_actions:
                continue
            if "/" in ident and ident.replace("/", ".").removesuffix(".py") in context:
                continue  # a path spelled as the dotted module the task names
            sources = [
                j
                for j in range(k)
                if ident in steps[j].observation
                and _contains_word(steps[j].observation, words[j], ident)
            ]
            if sources:
                needs.append(Need(k, "identifier", ident, tuple(sources)))
        words.append(set(_WORD.findall(step.observation)))
        earlier_actions += "\n" + step.action
    return needs


_LINE_NUMBER = re.compile(r"^\s*\d+[:\t]\s?")
COPY_MIN_CHARS = 24


def _lines(text: str) -> set[str]:
    out: set[str] = set()
    for raw in text.splitlines():
        line = _LINE_NUMBER.sub("", raw).strip()
        if len(line) >= COPY_MIN_CHARS:
            out.add(line)
    return out


def copied_lines(steps: Sequence[StepLike], context: str = "") -> list[Need]:
    """A second detector, of another kind than :func:`detect_needs`: step ``k`` needs an
    earlier observation when its action carries a line (at least 24 characters, stripped)
    that the observation printed verbatim as a line (line-number prefixes removed) — an edit's
    old text, a pasted error, a copied signature: the model could not have written it without
    that text in front of it. Lines in the task or in an earlier action never count (the agent
    had them anyway). One need per (step, distinct set of sources).

    It shares no rule with the identifier scan the engine's re-reference touch uses, so it
    checks whether that touch helps needs it was not shaped on."""
    always = {line.strip() for line in context.splitlines()}
    printed = [_lines(s.observation) for s in steps]
    written: set[str] = set()
    needs: list[Need] = []
    for k, step in enumerate(steps):
        seen: set[tuple[int, ...]] = set()
        lines = [line.strip() for line in step.action.splitlines()]
        for line in lines:
            if len(line) < COPY_MIN_CHARS or line in always or line in written:
                continue
            sources = tuple(j for j in range(k) if line in printed[j])
            if sources and sources not in seen:
                seen.add(sources)
                needs.append(Need(k, "copy", line[:80], sources))
        written.update(lines)
    return needs


def misses(needs: Sequence[Need], live: Sequence[frozenset[int]]) -> list[bool]:
    """For each need, whether it is a miss: none of its sources in ``live[need.step]`` (the
    observations in the prompt in full when that step's action was chosen)."""
    return [not any(j in live[n.step] for j in n.sources) for n in needs]
