"""Veil's optional extras (``[project.optional-dependencies]`` in ``pyproject.toml``: ``tui``,
``server``, ``postgres``, ``minilm``, ``pydantic-ai``, ``agents``, ``plot``) and the one way
Veil tells a person to install one that is missing.

Veil is not on PyPI, so pip finds no ``veil`` package to install an extra of. What works
wherever Veil was installed from (a clone, ``make install``, pipx, a wheel) is to install the
extra's packages into the Python that runs Veil: :func:`install_command` spells that command,
with the packages as this installation's metadata lists them for the extra.
"""

from __future__ import annotations

import re
import shlex
import sys
from importlib import metadata


def packages(extra: str) -> tuple[str, ...]:
    """The requirements ``extra`` adds, as this installation of Veil declares them (empty when
    the metadata is not there or names no such extra)."""
    try:
        requires = metadata.requires("veil") or []
    except metadata.PackageNotFoundError:
        return ()
    marker = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    return tuple(r.split(";", 1)[0].strip() for r in requires if marker.search(r))


def install_command(extra: str) -> str:
    """The shell command that installs ``extra`` into the Python running Veil:
    ``PYTHON -m pip install 'PKG>=V' …``; without metadata (an uninstalled source tree),
    ``PYTHON -m pip install -e 'CLONE[extra]'`` from Veil's clone."""
    python = shlex.quote(sys.executable)
    wanted = packages(extra)
    if wanted:
        return f"{python} -m pip install {' '.join(shlex.quote(p) for p in wanted)}"
    from pathlib import Path

    clone = Path(__file__).resolve().parents[2]
    return f"{python} -m pip install -e {shlex.quote(f'{clone}[{extra}]')}"


def missing(extra: str, what: str, exc: ImportError) -> str:
    """One line for a missing extra: what needs it, the module Python could not import, and
    :func:`install_command`."""
    module = exc.name or str(exc)
    return f"{what} needs the {extra} extra ({module} is not installed): {install_command(extra)}"
