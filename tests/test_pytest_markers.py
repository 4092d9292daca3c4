"""The pytest markers pyproject.toml registers are the ones the suite uses (issue 28, L: a
``slow`` marker said ``make test`` skipped it unless ``VEIL_SLOW=1``; nothing did either)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_registered_marker_is_used_and_no_environment_switch_is_promised() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    markers = config["tool"]["pytest"]["ini_options"]["markers"]
    names = [m.split(":", 1)[0].strip() for m in markers]
    here = Path(__file__).resolve()
    sources = "\n".join(
        p.read_text() for p in (ROOT / "tests").rglob("*.py") if p.resolve() != here
    )
    for name in names:
        assert re.search(rf"pytest\.mark\.{name}\b", sources), f"marker {name} is unused"
    for marker in markers:
        for variable in re.findall(r"\b(VEIL_[A-Z_]+)=", marker):
            assert variable in sources, f"{variable} is promised but nothing reads it"
