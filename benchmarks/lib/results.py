"""Results as JSON under ``benchmarks/results/``: where a run writes, writing, reading back.

A benchmark ``NAME`` writes ``NAME.json`` (a full run) or ``NAME-quick.json`` (``--quick``), so a
quick run never overwrites a full result; ``--out`` sends either elsewhere. The report reads the
full result when it exists, else the quick one (:func:`load`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.lib.paths import RESULTS, shown

Report = dict[str, Any]


def path_for(
    name: str, *, quick: bool = False, out: Path | None = None, results: Path = RESULTS
) -> Path:
    """``out`` if given, else ``benchmarks/results/NAME.json`` (``NAME-quick.json``)."""
    return out or results / (f"{name}-quick.json" if quick else f"{name}.json")


def save(
    data: Report,
    name: str,
    *,
    quick: bool = False,
    out: Path | None = None,
    indent: int = 2,
) -> Path:
    """Write ``data`` where :func:`path_for` says, say so on stdout, return the path."""
    path = path_for(name, quick=quick, out=out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent) + "\n")
    print(f"wrote {shown(path)}", flush=True)
    return path


def read(name: str, results: Path = RESULTS) -> Report | None:
    """``results/NAME.json`` (``NAME`` may end in ``-quick``), ``None`` when absent."""
    path = results / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


@dataclass(frozen=True)
class Loaded:
    """One benchmark's JSON report and where it came from."""

    name: str
    data: Report
    path: Path
    quick: bool


def load(name: str, results: Path = RESULTS) -> Loaded | None:
    """The full result of ``name`` if present, else the quick one, else ``None``."""
    for quick in (False, True):
        path = path_for(name, quick=quick, results=results)
        if path.exists():
            return Loaded(name, json.loads(path.read_text()), path, quick)
    return None


def load_other(loaded: Loaded, results: Path = RESULTS) -> Loaded | None:
    """The run of the other size (the quick one beside a full one, and the reverse)."""
    quick = not loaded.quick
    path = path_for(loaded.name, quick=quick, results=results)
    return Loaded(loaded.name, json.loads(path.read_text()), path, quick) if path.exists() else None
