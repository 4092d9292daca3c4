"""Parsing the combined log format with a trailing response time (ms)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

LINE = re.compile(
    r"^(?P<client>\S+) \S+ (?P<user>\S+) \[(?P<time>[^\]]+)\] "
    r'"(?P<method>[A-Z]+) (?P<target>\S+) (?P<protocol>HTTP/[0-9.]+)" '
    r"(?P<status>\d{3}) (?P<bytes>\d+|-) "
    r'"(?P<referrer>[^"]*)" "(?P<agent>[^"]*)" (?P<ms>\d+)$'
)
TIME_FORMAT = "%d/%b/%Y:%H:%M:%S %z"


@dataclass(frozen=True)
class Hit:
    client: str
    time: datetime
    method: str
    path: str
    query: str
    status: int
    size: int
    referrer: str
    agent: str
    ms: int

    @property
    def ok(self) -> bool:
        return self.status < 400

    @property
    def endpoint(self) -> str:
        """The path with numeric segments replaced by ``{id}``: ``/users/42`` → ``/users/{id}``."""
        parts = ["{id}" if p.isdigit() else p for p in self.path.split("/")]
        return "/".join(parts)


class ParseError(ValueError):
    """A line that is not in the expected format."""


def parse_line(line: str) -> Hit:
    m = LINE.match(line.rstrip("\n"))
    if m is None:
        raise ParseError(line[:80])
    path, _, query = m.group("target").partition("?")
    size = m.group("bytes")
    return Hit(
        client=m.group("client"),
        time=datetime.strptime(m.group("time"), TIME_FORMAT),
        method=m.group("method"),
        path=path,
        query=query,
        status=int(m.group("status")),
        size=0 if size == "-" else int(size),
        referrer=m.group("referrer"),
        agent=m.group("agent"),
        ms=int(m.group("ms")),
    )


def parse_lines(lines: Iterable[str], errors: list[str] | None = None) -> Iterator[Hit]:
    """The hits of ``lines``; a line that does not parse is appended to ``errors``."""
    for line in lines:
        if not line.strip():
            continue
        try:
            yield parse_line(line)
        except ParseError:
            if errors is not None:
                errors.append(line)


def parse_file(path: Path | str, errors: list[str] | None = None) -> list[Hit]:
    with open(path, encoding="utf-8") as handle:
        return list(parse_lines(handle, errors))
