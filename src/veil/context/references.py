"""Re-references: which earlier items a new action or turn names. Pure.

SPEC's recall signal includes the model *re-referencing* an item. A tool result that printed
``django/db/models/query.py`` or ``_check_ordering`` is re-referenced when a later command or
assistant turn names that path or symbol again: the model is working with what it read there.
The index keeps, for every item, the distinctive names its content carries — paths, dotted
names, snake_case and camelCase identifiers — and answers which items a text names.

A name carried by many items (``self``, a project's top package, a file every command prints)
says nothing about which one is meant; :meth:`ReferenceIndex.named_by` ignores names carried by
more than ``max_items`` items.
"""

from __future__ import annotations

import builtins
import keyword
import re
import threading
from collections.abc import Iterable

_PATH = re.compile(
    r"(?<![\w/.-])(?:[\w.-]+/)+[\w.-]*\w"
    r"|(?<![\w/.-])[\w-]+\.(?:py|pyi|pyx|js|ts|tsx|go|rs|java|rb|c|h|cc|cpp|hpp|cs|json|"
    r"yaml|yml|toml|ini|cfg|md|rst|txt|html|css|sh|sql)\b"
)
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_IDENT = re.compile(r"(?<![\w.])[A-Za-z_]\w{3,}")
_CAMEL = re.compile(r"[a-z0-9][A-Z]")
_COMMON = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {"self", "cls", "None"}
MAX_SCAN_CHARS = 100_000
"""Only the head of a very large output is scanned (the names that matter are usually early)."""


def names(text: str, limit: int = 2_000, *, paths_only: bool = False) -> tuple[str, ...]:
    """The distinctive names in ``text``, each once, in a fixed order (paths first, then dotted
    names, then identifiers, each in order of appearance): paths (with a ``/`` or a known
    extension), dotted names, and identifiers with an underscore or a camelCase hump (at least
    4 characters). Plain words are not names: they would tie unrelated items together.

    An ordered tuple, not a set: which items a text touches is capped, and a set's order
    changes with the process's hash seed — the same run would score differently."""
    head = text[:MAX_SCAN_CHARS]
    found: dict[str, None] = {}
    common = _COMMON
    # findall and plain loops (no match objects, no closure per match): this runs on every
    # captured result, inside the tool-call hook.
    for raw in _PATH.findall(head):
        name = raw.strip("./")
        if len(name) >= 4 and name not in common:
            found[name] = None
    if paths_only:
        return tuple(found)[:limit]
    camel = _CAMEL.search
    for dotted in _DOTTED.findall(head):
        name = dotted.strip("./")
        if len(name) >= 4 and name not in common:
            found[name] = None
        tail = dotted.rsplit(".", 1)[-1]
        if "_" in tail.strip("_") or camel(tail):
            tail = tail.strip("./")
            if len(tail) >= 4 and tail not in common:
                found[tail] = None
    for word in _IDENT.findall(head):
        if "_" in word.strip("_") or camel(word):
            name = word.strip("./")
            if len(name) >= 4 and name not in common:
                found[name] = None
        if len(found) >= limit:
            break
    return tuple(found)[:limit]


class ReferenceIndex:
    """name → the items whose content carries it (items are only ever added).

    Scanning a new item's content for names is the costliest part of a capture, and nothing
    needs those names before the next text is matched. So :meth:`add` only queues the item;
    :meth:`prepare` — which the engine runs on its writer thread while the model request is in
    flight — scans the queued texts (a pure function of immutable strings, nothing of the index
    is touched there); :meth:`named_by` first files every queued item, in the order added, with
    the prepared names or, for an item not prepared yet, by scanning it then. Whatever the
    timing, ``named_by`` sees every item added before it, with the same names."""

    def __init__(self, *, paths_only: bool = False) -> None:
        self._items: dict[str, list[str]] = {}
        self.paths_only = paths_only
        self._queued: list[tuple[str, str]] = []
        self._prepared: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()

    def add(self, item_id: str, text: str) -> None:
        with self._lock:
            self._queued.append((item_id, text))

    def prepare(self) -> None:
        """Scan the queued items' texts for names (any thread; see the class docstring)."""
        with self._lock:
            todo = [(i, t) for i, t in self._queued if i not in self._prepared]
        found = {item_id: names(text, paths_only=self.paths_only) for item_id, text in todo}
        with self._lock:
            self._prepared.update(found)

    def _file_queued(self) -> None:
        with self._lock:
            queued, self._queued = self._queued, []
            prepared, self._prepared = self._prepared, {}
        for item_id, text in queued:
            found = prepared.get(item_id)
            if found is None:
                found = names(text, paths_only=self.paths_only)
            for name in found:
                self._items.setdefault(name, []).append(item_id)

    def named_by(self, text: str, *, max_items: int, exclude: Iterable[str] = ()) -> list[str]:
        """Items sharing a distinctive name with ``text``, most specific names first (names
        carried by more than ``max_items`` items are skipped); each item once."""
        if self._queued:
            self._file_queued()
        skip = set(exclude)
        carriers = [
            self._items[n]
            for n in names(text, paths_only=self.paths_only)
            if 0 < len(self._items.get(n, ())) <= max_items
        ]
        carriers.sort(key=len)  # stable: ties keep the names' order in the text
        out: dict[str, None] = {}
        for ids in carriers:
            for item_id in ids:
                if item_id not in skip:
                    out[item_id] = None
        return list(out)
