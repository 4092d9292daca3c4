"""What several sections of the report share: the machine and source lines, formatting."""

from __future__ import annotations

from typing import Any

Report = dict[str, Any]


def machine_line(machine: dict[str, Any]) -> str:
    """Platform, CPUs, Python (and SQLite when recorded) of one result's machine."""
    parts = [
        f"{machine.get('platform', '?')}",
        f"{machine.get('cpus', machine.get('cores', '?'))} CPUs",
        f"Python {machine.get('python', '?')}",
    ]
    if "sqlite" in machine:
        parts.append(f"SQLite {machine['sqlite']}")
    return ", ".join(parts)


def source_line(source: dict[str, Any]) -> str:
    commit = source.get("commit")
    if not commit:
        return "source revision unknown"
    dirty = " with uncommitted changes in `src/`" if source.get("src_dirty") else ""
    return f"measured at commit `{str(commit)[:12]}`{dirty}"


def body(markdown: str) -> str:
    """A section's markdown without its own ``##`` heading (the document adds it)."""
    lines = markdown.splitlines()
    if lines and lines[0].startswith("## "):
        lines = lines[1:]
    while lines and not lines[0].strip():
        lines = lines[1:]
    return "\n".join(lines)


def pct(x: float | None) -> str:
    """A share as a percentage with one decimal; ``–`` when unknown."""
    return "–" if x is None else f"{100 * x:.1f}%"


def ms(value: float | None) -> str:
    """Milliseconds with one decimal and thousands separators; ``—`` when unknown."""
    return "—" if value is None else f"{value:,.1f}"
