"""The redactor: find every secret in a text or a JSON value and replace it by its placeholder.

Contracts:

- Only the secret is replaced (``AWS_SECRET_ACCESS_KEY=`` stays, a URL keeps its user and
  host) by ``[secret:KIND …LAST4]`` (:func:`veil.redaction.findings.placeholder`).
- Idempotent: redacting a redacted text returns it unchanged — every candidate that
  overlaps a placeholder already in the text is dropped, and :meth:`Redactor.redact` runs
  to a fixed point (a secret hidden by a neighbour is found once the neighbour is replaced).
- Deterministic: the same text and configuration give the same result (no clock, no
  randomness, no network: detect-secrets' verification of live keys is never called).
- Overlaps: when rules find overlapping spans, the lower :data:`~veil.redaction.rules.Rule`
  priority wins (a user pattern, then a specific token kind, then a URL password or header,
  then a generic assignment); among equals the earlier, then the longer span.
- Cheap: a text that none of the rules' triggers hits costs one fast scan per rule
  (see :mod:`veil.redaction.rules` for when detect-secrets is imported).
"""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from .config import RedactionConfig
from .findings import (
    Finding,
    JSONOut,
    JSONPath,
    JSONValue,
    Redacted,
    RedactedJSON,
    placeholder,
    placeholder_pattern,
)

if TYPE_CHECKING:
    from .rules import Rule

DEFAULT_CONFIG = RedactionConfig()


CLEAN_TEXTS = 16_384
CLEAN_CHARS = 4_000_000
"""The texts in which a :class:`Redactor` found nothing are remembered — the last
:data:`CLEAN_TEXTS` of them, :data:`CLEAN_CHARS` characters in all, the oldest dropped first —
and returned as they are when they come again, without a scan: a store writes the same ids,
names and kinds in event after event, and the context engine redacts a tool result as it
captures it before the tape redacts the event that carries the same string. A text with a
secret is never remembered (nor kept alive by the redactor): it is scanned every time."""

_Candidate = tuple["Rule", int, int]
"""A rule's span before overlaps are resolved: (rule, start, end)."""


class Redactor:
    """Redacts texts and JSON values under one :class:`RedactionConfig`.

    Safe to share between threads (it holds no per-call state; its record of texts found
    clean, see :data:`CLEAN_CHARS`, changes under a lock). Building one compiles the
    configuration's allowlist; the rules (built-in and the configuration's own) are compiled
    on the first text that needs them — the built-in ones once per process.
    """

    def __init__(self, config: RedactionConfig = DEFAULT_CONFIG) -> None:
        self.config = config
        self._allow = tuple(re.compile(regex) for regex in config.allowlist)
        self._disabled = frozenset(config.disabled_kinds)
        self._rules: tuple[Rule, ...] | None = None
        self._clean: dict[str, None] = {}
        self._clean_chars = 0
        self._lock = threading.Lock()

    @property
    def rules(self) -> tuple[Rule, ...]:
        """The configuration's own rules, then the built-in rules not disabled."""
        if self._rules is None:
            from .rules import builtin_rules, user_rule

            user = tuple(
                user_rule(n, kind, re.compile(regex))
                for n, (kind, regex) in enumerate(self.config.extra_patterns)
            )
            builtin = tuple(r for r in builtin_rules() if r.kind not in self._disabled)
            self._rules = user + builtin
        return self._rules

    def redact(self, text: str) -> Redacted:
        """``text`` with every secret replaced; the findings in text order.

        Runs to a fixed point: a secret whose boundary check failed only because another
        secret was glued to it (``-----END … KEY-----eyJ…``) is found once that neighbour is
        a placeholder, so the text is scanned again until nothing new turns up (at most
        :data:`MAX_PASSES` times; each later pass costs only for a text that changed).
        """
        if not self.config.enabled or not text:
            return Redacted(text)
        if text in self._clean:  # found clean before (see CLEAN_CHARS)
            return Redacted(text)
        done = self._redact(text)
        if not done.changed:
            self._remember_clean(text)
        return done

    def _remember_clean(self, text: str) -> None:
        with self._lock:
            if text in self._clean or len(text) > CLEAN_CHARS:
                return
            self._clean[text] = None
            self._clean_chars += len(text)
            while len(self._clean) > CLEAN_TEXTS or self._clean_chars > CLEAN_CHARS:
                oldest = next(iter(self._clean))
                del self._clean[oldest]
                self._clean_chars -= len(oldest)

    def _redact(self, text: str) -> Redacted:
        chosen = self._choose(text)
        if not chosen:
            return Redacted(text)
        out = _render(text, chosen)
        for _ in range(MAX_PASSES - 1):
            more = self._choose(out)
            if not more:
                break
            chosen = sorted(chosen + _to_original(more, text, chosen), key=lambda c: c[1])
            out = _render(text, chosen)
        findings = tuple(Finding(rule.kind, rule.name, start, end) for rule, start, end in chosen)
        return Redacted(out, findings)

    def redact_json(self, value: JSONValue) -> RedactedJSON:
        """Every string inside ``value`` redacted (mapping keys are kept as they are).

        A string under a secret-named key (``{"api_token": "…"}``) is also replaced whole when
        it looks generated, as ``NAME=value`` would be in text (kind ``env-assignment``, rule
        ``veil:json-key``). Each finding's ``path`` locates its string; mappings come back as
        dicts and other sequences as lists.
        """
        findings: list[Finding] = []
        out = self._json(value, (), None, findings)
        return RedactedJSON(out, tuple(findings))

    # ---- internals -------------------------------------------------------------------------

    def _choose(self, text: str) -> list[_Candidate]:
        """The candidates that win their overlaps, in text order (placeholders already in the
        text win against everything). Accepted spans never overlap, so a candidate is checked
        against its two neighbours among them only."""
        candidates = self._candidates(text)
        if not candidates:
            return []
        candidates.sort(key=lambda c: (c[0].priority, c[1], -c[2]))
        starts: list[int] = []
        ends: list[int] = []
        if "[secret:" in text:
            for m in placeholder_pattern().finditer(text):
                starts.append(m.start())
                ends.append(m.end())
        chosen: list[_Candidate] = []
        for rule, start, end in candidates:
            i = bisect.bisect_right(starts, start)
            if (i and ends[i - 1] > start) or (i < len(starts) and starts[i] < end):
                continue
            starts.insert(i, start)
            ends.insert(i, end)
            if not any(p.search(text[start:end]) for p in self._allow):
                chosen.append((rule, start, end))
        chosen.sort(key=lambda c: c[1])
        return chosen

    def _candidates(self, text: str) -> list[_Candidate]:
        lowered: str | None = None
        out: list[_Candidate] = []
        for rule in self.rules:
            if rule.trigger:
                if rule.fold:
                    if lowered is None:
                        lowered = text.lower()
                    hay = lowered
                else:
                    hay = text
                if not any(t.search(hay) for t in rule.trigger):
                    continue
            if rule.gate is not None and rule.gate.search(text) is None:
                continue
            out.extend((rule, start, end) for start, end in rule.find(text))
        return out

    def _json(
        self, value: JSONValue, path: JSONPath, key: str | None, findings: list[Finding]
    ) -> JSONOut:
        if isinstance(value, str):
            return self._json_string(value, path, key, findings)
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, Mapping):
            return {k: self._json(v, (*path, k), str(k), findings) for k, v in value.items()}
        return [self._json(v, (*path, i), None, findings) for i, v in enumerate(value)]

    def _json_string(
        self, value: str, path: JSONPath, key: str | None, findings: list[Finding]
    ) -> str:
        done = self.redact(value)
        if done.changed:
            findings.extend(replace(f, path=path) for f in done.findings)
            return done.text
        if key is None or not self.config.enabled:
            return value
        from .shapes import is_secret_name, looks_secret

        if (
            "env-assignment" not in self._disabled
            and is_secret_name(key)
            and looks_secret(value, quoted=True)
            and not placeholder_pattern().search(value)
            and not any(p.search(value) for p in self._allow)
        ):
            findings.append(Finding("env-assignment", "veil:json-key", 0, len(value), path))
            return placeholder("env-assignment", value)
        return value


MAX_PASSES = 4
"""How many times :meth:`Redactor.redact` scans a text that keeps changing."""


def _render(text: str, chosen: list[_Candidate]) -> str:
    parts: list[str] = []
    at = 0
    for rule, start, end in chosen:
        parts.append(text[at:start])
        parts.append(placeholder(rule.kind, text[start:end], last4=rule.last4))
        at = end
    parts.append(text[at:])
    return "".join(parts)


def _to_original(found: list[_Candidate], text: str, chosen: list[_Candidate]) -> list[_Candidate]:
    """Spans found in the rendered text, as offsets into the original ``text``. They never
    overlap a placeholder (placeholders are protected), so each lies in an unchanged stretch:
    shift it back by the growth of every placeholder before it."""
    rendered_ends: list[int] = []
    shifts: list[int] = []
    shift = 0
    for rule, start, end in chosen:
        rendered_end = (
            start + shift + len(placeholder(rule.kind, text[start:end], last4=rule.last4))
        )
        shift = rendered_end - end
        rendered_ends.append(rendered_end)
        shifts.append(shift)
    out: list[_Candidate] = []
    for rule, start, end in found:
        i = bisect.bisect_right(rendered_ends, start)
        back = shifts[i - 1] if i else 0
        out.append((rule, start - back, end - back))
    return out


_default: Redactor | None = None


def redact(text: str) -> Redacted:
    """``Redactor().redact(text)`` with the default configuration (one shared redactor)."""
    global _default  # noqa: PLW0603 - one lazily built default, like re's cache
    if _default is None:
        _default = Redactor()
    return _default.redact(text)
