"""Shared machinery of the coding tools: argument checks, the project-directory jail, output
truncation and atomic writes.

Private to ``veil.agent.tools``; the public surface is the tools themselves. Everything here is
deliberately small and synchronous: tools run in worker threads of the agent loop.

Contracts kept here so that every tool behaves the same way:

* **Jail.** Every path argument resolves against ``ctx.cwd`` (absolute paths are allowed) and,
  after following symlinks and ``..``, must stay inside that directory; anything else is refused
  with an error result. This is a security boundary: a model must never read or write outside
  the project.
* **Errors are results.** ``BaseTool.run`` turns ``ToolError`` (a refusal the model should read)
  and ``OSError`` (the filesystem said no) into ``ToolResult(is_error=True)``; it never raises for
  those, so a tool can be called without a loop around it.
* **Truncation.** Output the model sees is capped at ``MAX_LINES`` lines and ``MAX_BYTES`` UTF-8
  bytes, whichever comes first; the complete text goes to ``ToolResult.full_output``.
"""

from __future__ import annotations

import contextlib
import math
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from veil.agent.tool import NOTHING, ToolContext, ToolError, ToolResult, Touches
from veil.llm.messages import ToolSpec

MAX_LINES = 2000
"""Lines of output the model sees before truncation (read, bash, edit diffs, grep)."""
MAX_BYTES = 50 * 1024
"""UTF-8 bytes of output the model sees before truncation."""
BINARY_SNIFF_BYTES = 8192
"""A NUL byte within this many leading bytes marks a file as binary (as git and grep do)."""


class BaseTool:
    """Implements the ``Tool`` protocol; subclasses set ``spec``/``mutates``/``parallel_safe``
    and write ``_run``. ``run`` converts refusals and filesystem errors into error results."""

    spec: ClassVar[ToolSpec]
    mutates: ClassVar[bool] = False
    parallel_safe: ClassVar[bool] = False

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            return self._run(arguments, ctx)
        except ToolError as exc:
            return ToolResult(str(exc), is_error=True)
        except OSError as exc:
            return ToolResult(f"{self.spec.name} failed: {exc}", is_error=True)

    def _run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise NotImplementedError

    def touches(self, arguments: dict[str, Any]) -> Touches:
        """What a call with ``arguments`` touches (the default: nothing tracked)."""
        return NOTHING

    def __repr__(self) -> str:
        return f"<tool {self.spec.name}>"


# --- arguments -------------------------------------------------------------------------------


def require_str(arguments: dict[str, Any], name: str, *, allow_empty: bool = False) -> str:
    """The string argument ``name``; a missing or mistyped argument is a ``ToolError``."""
    value = arguments.get(name)
    if not isinstance(value, str):
        got = "missing" if value is None else f"a {type(value).__name__}"
        raise ToolError(f"argument {name!r} must be a string (got {got})")
    if not allow_empty and not value:
        raise ToolError(f"argument {name!r} must not be empty")
    return value


def optional_str(arguments: dict[str, Any], name: str) -> str | None:
    """The string argument ``name`` or None when absent, null or empty."""
    value = arguments.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ToolError(f"argument {name!r} must be a string (got a {type(value).__name__})")
    return value


def optional_number(arguments: dict[str, Any], name: str, *, minimum: float) -> float | None:
    """A number argument (int, float or numeric string: models sometimes quote numbers)."""
    value = arguments.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ToolError(f"argument {name!r} must be a number (got a bool)")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ToolError(f"argument {name!r} must be a number (got {value!r})") from None
    if not isinstance(value, int | float):
        raise ToolError(f"argument {name!r} must be a number (got a {type(value).__name__})")
    number = float(value)
    if math.isnan(number) or number < minimum:
        raise ToolError(f"argument {name!r} must be at least {minimum:g} (got {value})")
    return number


def optional_int(arguments: dict[str, Any], name: str, *, minimum: int) -> int | None:
    """An integer argument; integral floats and numeric strings are accepted."""
    number = optional_number(arguments, name, minimum=minimum)
    if number is None:
        return None
    if number != int(number):
        raise ToolError(f"argument {name!r} must be a whole number (got {number:g})")
    return int(number)


# --- paths -----------------------------------------------------------------------------------


def project_root(ctx: ToolContext) -> Path:
    """The project directory with symlinks resolved: the jail every path must stay in."""
    return ctx.cwd.resolve()


def resolve_path(ctx: ToolContext, raw: str) -> Path:
    """Resolve ``raw`` against the project directory and refuse it if it escapes.

    Relative paths are taken from ``ctx.cwd``; absolute paths are allowed when inside it.
    Symlinks and ``..`` are resolved first, so a link pointing outside is refused too (also a
    dangling one: writing through it would create a file outside). ``~`` is not expanded: it
    would point outside the project anyway.
    """
    if "\0" in raw:
        raise ToolError("path contains a NUL character")
    root = project_root(ctx)
    candidate = Path(raw)
    if not candidate.is_absolute():
        candidate = root / candidate
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # symlink loops
        raise ToolError(f"cannot resolve path {raw!r}: {exc}") from None
    if not resolved.is_relative_to(root):
        raise ToolError(
            f"Refused: path {raw!r} resolves to {resolved}, outside the project directory "
            f"{root}. Tools may only read and write inside the project directory."
        )
    return resolved


def display(root: Path, path: Path) -> str:
    """``path`` relative to the project root, with forward slashes ("." for the root)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return str(path)
    return rel.as_posix() or "."


def not_found(root: Path, path: Path, what: str = "File") -> ToolError:
    """A 'not found' error with a hint: similar names in the directory, or the missing parent."""
    import difflib

    shown = display(root, path)
    parent = path.parent
    if not parent.is_dir():
        return ToolError(
            f"{what} not found: {shown} (directory {display(root, parent)} does not exist)"
        )
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        names = []
    lowered = {name.lower(): name for name in names}
    close = difflib.get_close_matches(path.name, names, n=3, cutoff=0.6)
    same_case = lowered.get(path.name.lower())
    if same_case and same_case not in close:
        close.insert(0, same_case)
    if not close:
        return ToolError(f"{what} not found: {shown}")
    hints = ", ".join(display(root, parent / name) for name in close)
    return ToolError(f"{what} not found: {shown}. Did you mean: {hints}?")


# --- text ------------------------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` kept. Only ``\\n`` ends a line (as in grep, sed and editors), so
    line numbers agree across tools and a CRLF line keeps its ``\\r``."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def is_binary(data: bytes) -> bool:
    return b"\0" in data[:BINARY_SNIFF_BYTES]


def read_text(root: Path, path: Path) -> str:
    """A file's text (UTF-8); binary or undecodable files are a ``ToolError``."""
    data = path.read_bytes()
    if is_binary(data):
        raise ToolError(
            f"{display(root, path)} is a binary file ({len(data)} bytes); not shown. "
            "Use bash (e.g. `file`, `xxd | head`) to inspect it."
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{display(root, path)} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
            "not shown. Use bash (e.g. `iconv` or `xxd`) to inspect it."
        ) from None


@dataclass(frozen=True)
class Cut:
    """A truncation: ``lines`` kept (a run of whole lines, or ``partial`` = one line cut down to
    ``MAX_BYTES``), ``total`` lines before, and whether anything was dropped."""

    lines: list[str]
    total: int
    truncated: bool
    partial: bool = False

    @property
    def text(self) -> str:
        return "".join(self.lines)


def _nbytes(line: str) -> int:
    return len(line.encode("utf-8", "surrogatepass"))


def truncate_head(lines: list[str], max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Cut:
    """Keep the beginning: whole lines while both limits hold. A first line longer than
    ``max_bytes`` is itself cut to its first ``max_bytes`` bytes (``partial``)."""
    used = 0
    kept: list[str] = []
    for line in lines:
        size = _nbytes(line)
        if len(kept) >= max_lines or used + size > max_bytes:
            break
        kept.append(line)
        used += size
    if len(kept) == len(lines):
        return Cut(kept, len(lines), truncated=False)
    if not kept:
        head = lines[0].encode("utf-8", "surrogatepass")[:max_bytes]
        return Cut([head.decode("utf-8", "ignore")], len(lines), truncated=True, partial=True)
    return Cut(kept, len(lines), truncated=True)


def truncate_tail(lines: list[str], max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Cut:
    """Keep the end (where a command's errors and summary are): whole lines while both limits
    hold. A last line longer than ``max_bytes`` is cut to its last ``max_bytes`` bytes."""
    used = 0
    kept: list[str] = []
    for line in reversed(lines):
        size = _nbytes(line)
        if len(kept) >= max_lines or used + size > max_bytes:
            break
        kept.append(line)
        used += size
    kept.reverse()
    if len(kept) == len(lines):
        return Cut(kept, len(lines), truncated=False)
    if not kept:
        tail = lines[-1].encode("utf-8", "surrogatepass")[-max_bytes:]
        return Cut([tail.decode("utf-8", "ignore")], len(lines), truncated=True, partial=True)
    return Cut(kept, len(lines), truncated=True)


# --- writing ---------------------------------------------------------------------------------


def encode(text: str) -> bytes:
    """UTF-8 bytes of ``text``; lone surrogates (possible in JSON) are refused, not written."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(f"text is not valid Unicode ({exc.reason} at {exc.start})") from None


def _umask() -> int:
    """The process umask, read without changing it (Linux); 0o022 elsewhere."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and a rename,
    so a reader (or a crash) never sees a half-written file. An existing file keeps its
    permission bits; a new one gets the usual ``0o666 & ~umask``."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".veil-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
