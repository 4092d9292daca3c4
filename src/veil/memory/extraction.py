"""The extraction contract (SPEC 4.1): the prompt, the JSON schema, tolerant parsing and
per-item validation. Pure: the LLM call itself happens in :mod:`veil.memory.write_path`.

The model is shown the evidence tagged with its author, a calendar for the evidence's week and
the next (so it copies dates instead of computing them), the relation registry, and the current
facts of the subjects the evidence mentions, with ids, so it can name a supersession target.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, cast

from veil.memory.config import MemoryConfig
from veil.memory.model import EPISODE_KINDS, VOLATILITIES, EpisodeKind, InvalidItem, Volatility

EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "subject": {"type": "string"},
                    "relation": {"type": "string"},
                    "object": {"type": "string"},
                    "statement": {"type": "string"},
                    "volatility": {"type": "string", "enum": list(VOLATILITIES)},
                    "claimant": {"type": "string"},
                    "supersedes": {"type": ["string", "null"]},
                },
                "required": ["subject", "relation", "object", "statement", "claimant"],
            },
        },
        "episodes": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": list(EPISODE_KINDS)},
                    "text": {"type": "string"},
                    "due": {"type": ["string", "null"]},
                },
                "required": ["kind", "text"],
            },
        },
    },
    "required": ["facts", "episodes"],
}

MAX_FIELD_CHARS = 2_000

SYSTEM_PROMPT = """You extract durable memory from evidence about one person, called "user".
Return only JSON: {"facts": [...], "episodes": [...]}.
A fact is {"subject", "relation", "object", "statement", "volatility", "claimant", "supersedes"}:
- subject: "user" for the person whose memory this is, otherwise the entity's name.
- relation: one of the registered relations when one fits, else a short snake_case verb phrase.
- object: the value, copied from the evidence (a tool or an editor is not a job).
- statement: one sentence in the third person: "The user lives in Porto.", never "I ...".
- volatility: permanent | durable | slow | transient | ephemeral.
- claimant: "user" when the author of the evidence asserts the fact first-hand; otherwise who
  asserts it ("landlord", "web page", "tool output"). When the evidence reports what someone
  else says or claims ("my landlord says ..."), the claimant is that someone.
- supersedes: the id of a current fact (listed with the evidence) this fact replaces, or null.
  Never repeat a current fact the evidence does not mention.
An episode is {"kind": interaction|failure|fix|commitment|outcome, "text", "due"}: a failure
only when something failed, a fix only when something was fixed, a commitment only for
something to be done; "due" is an ISO date copied from the calendar, only for a commitment
whose evidence names a time, else null.
Copy dates from the calendar; never compute them. Extract nothing that the evidence does not say.
If there is nothing to remember, return {"facts": [], "episodes": []}."""


def calendar_lines(at: datetime) -> list[str]:
    """The evidence's week (from Monday) and the next: one line per day."""
    start: date = at.date() - timedelta(days=at.weekday())
    lines: list[str] = []
    for offset in range(14):
        day = start + timedelta(days=offset)
        marker = "  <- today" if day == at.date() else ""
        lines.append(f"{day.isoformat()} {day.strftime('%A')}{marker}")
    return lines


@dataclass(frozen=True)
class PromptFact:
    id: str
    subject: str
    relation: str
    object: str
    statement: str


def build_messages(
    *,
    evidence: str,
    author: str,
    at: datetime,
    config: MemoryConfig,
    current_facts: Sequence[PromptFact],
) -> list[dict[str, str]]:
    relations = "\n".join(
        f"- {r.name}{' (functional: one current value)' if r.functional else ''}"
        f" [{r.volatility}]: {r.description}"
        for r in config.relations.values()
    )
    facts = (
        "\n".join(
            f"- id={f.id} | {f.subject} | {f.relation} | {f.object} | {f.statement}"
            for f in current_facts
        )
        or "(none)"
    )
    # What is the same for every call (the instructions, the relation registry) comes first, so
    # a provider's prompt cache serves it; what changes (the calendar, the current facts, the
    # evidence) comes last.
    system = f"{SYSTEM_PROMPT}\n\nRegistered relations:\n{relations}"
    user = (
        "Calendar:\n" + "\n".join(calendar_lines(at)) + "\n\n"
        f"Current facts for the subjects mentioned:\n{facts}\n\n"
        f'<evidence author="{author}" at="{at.isoformat(timespec="minutes")}">\n'
        f"{evidence}\n</evidence>"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def repair_messages(
    messages: list[dict[str, str]], output: str, error: str
) -> list[dict[str, str]]:
    """The one repair retry: the bad output and why it was rejected."""
    return [
        *messages,
        {"role": "assistant", "content": output[:4000]},
        {
            "role": "user",
            "content": f"That output was rejected: {error}. Reply with only the JSON "
            "object described, nothing else.",
        },
    ]


class ExtractionParseError(ValueError):
    """The model's output is not a JSON object with ``facts`` and ``episodes`` lists."""


def parse_output(output: str) -> dict[str, list[Any]]:
    """Tolerant parse: code fences and prose around the JSON are ignored; the top level must be
    an object with ``facts`` and/or ``episodes`` lists (an object with neither is not an
    extraction — it gets the repair retry rather than passing as "nothing to remember")."""
    if not isinstance(output, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ExtractionParseError(f"model returned {type(output).__name__}, not text")
    data = first_json_object(output)
    if data is None:
        raise ExtractionParseError("no JSON object found in the output")
    if "facts" not in data and "episodes" not in data:
        raise ExtractionParseError('the JSON object has neither "facts" nor "episodes"')
    facts = data.get("facts", [])
    episodes = data.get("episodes", [])
    if not isinstance(facts, list) or not isinstance(episodes, list):
        raise ExtractionParseError('"facts" and "episodes" must be lists')
    return {"facts": cast(list[Any], facts), "episodes": cast(list[Any], episodes)}


MAX_JSON_STARTS = 200
"""Opening braces tried per candidate text. Every failed try costs time proportional to its
offset (the decoder's error counts the lines before it), so a flood of braces would make the
parse quadratic; the extraction object is the first or nearly the first brace of real output,
and past this many the output is unparseable (the repair retry asks again)."""


def first_json_object(text: str) -> dict[str, Any] | None:
    # \s*+ is possessive: giving whitespace back cannot help the lazy body find a fence, and
    # retrying it made an unclosed fence before a long run of blank lines quadratic.
    fenced = re.findall(r"```(?:json)?\s*+(.*?)```", text, flags=re.DOTALL)
    decoder = json.JSONDecoder()
    for candidate in [*fenced, text]:
        for attempt, match in enumerate(re.finditer(r"\{", candidate)):
            if attempt == MAX_JSON_STARTS:
                break
            try:
                value, _ = decoder.raw_decode(candidate, match.start())
            except (ValueError, RecursionError):  # ValueError: also integers over 4300 digits
                continue
            if isinstance(value, dict):
                return cast(dict[str, Any], value)
    return None


@dataclass(frozen=True)
class FactItem:
    subject: str
    relation: str
    object: str
    statement: str
    volatility: Volatility | None
    claimant: str
    supersedes: str | None
    grounded: bool = True
    """False when the guardrails found the value (or a specific) absent from the evidence: the
    fact is kept and flagged, but cannot supersede a trusted fact or reinforce one."""
    missing: tuple[str, ...] = ()
    """What the guardrails did not find in the evidence."""


@dataclass(frozen=True)
class EpisodeItem:
    kind: EpisodeKind
    text: str
    due: str | None


def _text(item: Mapping[str, Any], key: str, *, required: bool) -> str | None:
    value = item.get(key)
    if value is None:
        if required:
            raise ValueError(f"missing {key!r}")
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key!r} must be a string, got {type(value).__name__}")
    value = value.strip()
    if required and not value:
        raise ValueError(f"empty {key!r}")
    if len(value) > MAX_FIELD_CHARS:
        raise ValueError(f"{key!r} longer than {MAX_FIELD_CHARS} characters")
    if not _is_unicode(value):
        raise ValueError(f"{key!r} holds a lone surrogate (not valid Unicode)")
    return value or None


def _is_unicode(text: str) -> bool:
    """False for text with lone surrogates (``"\\ud800"`` in JSON): the tape stores UTF-8."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def validate_fact(item: object) -> FactItem:
    if not isinstance(item, dict):
        raise ValueError(f"a fact must be an object, got {type(item).__name__}")
    fact = cast(dict[str, Any], item)
    relation = _text(fact, "relation", required=True) or ""
    relation = re.sub(r"[^a-z0-9_]+", "_", relation.lower()).strip("_")[:64]
    if not relation:
        raise ValueError("relation has no usable characters")
    volatility = fact.get("volatility")
    claimant = _text(fact, "claimant", required=False) or "user"
    return FactItem(
        subject=_text(fact, "subject", required=True) or "",
        relation=relation,
        object=_text(fact, "object", required=True) or "",
        statement=_text(fact, "statement", required=False) or "",
        volatility=volatility if volatility in VOLATILITIES else None,
        claimant=claimant,
        supersedes=_text(fact, "supersedes", required=False),
    )


def validate_episode(item: object) -> EpisodeItem:
    if not isinstance(item, dict):
        raise ValueError(f"an episode must be an object, got {type(item).__name__}")
    episode = cast(dict[str, Any], item)
    kind = episode.get("kind")
    if kind not in EPISODE_KINDS:
        raise ValueError(f"episode kind must be one of {', '.join(EPISODE_KINDS)}")
    due = _text(episode, "due", required=False)
    if due is not None:
        try:
            due = date.fromisoformat(due[:10]).isoformat()
        except ValueError:
            raise ValueError(f"due {due!r} is not an ISO date") from None
    return EpisodeItem(kind=kind, text=_text(episode, "text", required=True) or "", due=due)


def validate_items(
    parsed: Mapping[str, list[Any]],
) -> tuple[list[FactItem], list[EpisodeItem], list[InvalidItem]]:
    facts: list[FactItem] = []
    episodes: list[EpisodeItem] = []
    invalid: list[InvalidItem] = []
    for item in parsed["facts"]:
        try:
            facts.append(validate_fact(item))
        except ValueError as exc:
            invalid.append(InvalidItem(item=_preview(item), reason=f"fact: {exc}"))
    for item in parsed["episodes"]:
        try:
            episodes.append(validate_episode(item))
        except ValueError as exc:
            invalid.append(InvalidItem(item=_preview(item), reason=f"episode: {exc}"))
    return facts, episodes, invalid


def _preview(item: object) -> object:
    """The invalid item as the report and the tape keep it: the item itself when it is short
    and writable as canonical JSON, else at most 500 characters of its (ASCII) JSON text —
    never NaN/Infinity or a lone surrogate, which the tape would refuse."""
    try:
        exact = json.dumps(item, ensure_ascii=False, allow_nan=False)
    except (ValueError, RecursionError):
        exact = None
    if exact is not None and len(exact) <= 500 and _is_unicode(exact):
        return item
    try:
        text = json.dumps(item, default=str)
    except (ValueError, RecursionError):
        return f"<{type(item).__name__} nested too deeply to show>"
    return text if len(text) <= 500 else text[:500] + "…"
