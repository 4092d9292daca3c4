"""Guardrails on what an extraction model wrote, checked against the evidence. Pure.

A model — a 1.5B local one more often, a hosted one less — writes facts the evidence does not
support. The prompt asks for the right thing; these rules check that it came back, so that a
memory that promises "nothing silently wrong" catches the mistakes whatever the model
(each rule has test cases taken from a real model's recorded output, tests/data/recorded/):

- :func:`object_grounded`: the value of a fact must be in the evidence (or in the current fact
  the model says it supersedes). "I live in Lisbon too." stored as ``located_at london`` is
  ungrounded; an ungrounded fact is kept, flagged, but cannot supersede a trusted fact nor
  count as a reinforcement (:mod:`veil.memory.supersession`);
- :func:`reported_by`: reported speech ("my landlord says I owe him $500") is the reporter's
  claim, whatever ``claimant`` the model wrote — a third-party claim, quarantined;
- :func:`sane_relation`: a tool or an editor is not a job (``works_as emacs`` → ``uses_tool``);
- :func:`checked_episode`: an episode's kind must match the shape of the evidence (a
  ``failure`` needs a failure, a ``commitment`` something to be done), and ``due`` belongs to
  commitments whose evidence states or implies a time — so "I moved to Porto last week" is not
  "due soon";
- :func:`third_person`: statements and episode texts are stored about the subject ("The user
  moved to Porto"), never in the first person, which recall would render as if the agent had
  said it.

:func:`vet` applies them all to one extraction and says, in notes, what it changed.

The words each rule looks for are data, per language, in :mod:`veil.memory.guardrail_rules`
(English, French, German and Spanish; Italian, Portuguese and Dutch recognised without rules);
the code here applies them. :func:`identify` says which languages' rules read an evidence: a
rule that judges by absence (a job needs words of work) stands aside for a language it has no
words for, instead of dropping what it cannot read. docs/memory.md ("Guardrails and
languages") says what is and is not covered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, replace
from datetime import date, timedelta
from functools import lru_cache

from veil.memory import guardrail_rules as rules
from veil.memory.extraction import EpisodeItem, FactItem, PromptFact
from veil.memory.grounding import ISO_DATE as _ISO_DATE
from veil.memory.grounding import ungrounded_specifics
from veil.memory.guardrail_rules import Markers
from veil.memory.languages import ENGLISH, LANGUAGES
from veil.memory.model import EpisodeKind, InvalidItem

Languages = tuple[str, ...]
"""Codes of :data:`veil.memory.languages.LANGUAGES` whose rules read a text."""

_FIRST_PERSON = re.compile(
    r"\b(I'm|I am|I've|I have|I'd|I'll|I was|I|my|mine|me|myself)\b", re.IGNORECASE
)
_KIND_PRIORITY: tuple[EpisodeKind, ...] = ("fix", "failure", "commitment", "outcome")
"""When the model's kind does not fit the evidence, the first kind here that does (a fix of a
failure is a fix)."""
_DATETIME = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?")


# ---- the rule table, applied ------------------------------------------------------------------

_TOKEN = re.compile(r"[0-9a-z\u00df-\u00f6\u00f8-\u00ff\u0100-\u024f]+")
"""A word, casefolded: digits and letters of the Latin alphabet, with their accents."""


def _latin(letter: str) -> bool:
    return letter < "\u0250" or "\u1e00" <= letter <= "\u1eff"


@lru_cache(maxsize=4096)
def identify(text: str) -> Languages:
    """The languages whose rules read ``text``: the language it is in when that is not
    English — its function words (those it does not share with English) outnumber English's
    own more than twice over, and no other language's as many (else the words no other
    language shares decide) — then English, always. None at all when most of its letters are
    not Latin: no rule here can read it."""
    letters = [c for c in text if c.isalpha()]
    if 2 * sum(1 for c in letters if not _latin(c)) > len(letters):
        return ()
    words = frozenset(_TOKEN.findall(text.casefold()))
    english = _IDENTIFYING[ENGLISH]
    scores: dict[str, tuple[int, int]] = {}
    for code, own in _IDENTIFYING.items():
        if code != ENGLISH and len(words & (own - english)) > 2 * len(words & (english - own)):
            scores[code] = (len(words & (own - english)), len(words & _UNIQUE[code]))
    ranked = sorted(scores.values(), reverse=True)
    if not ranked or (len(ranked) > 1 and ranked[0] == ranked[1]):
        return (ENGLISH,)
    return (max(scores, key=lambda code: scores[code]), ENGLISH)


_IDENTIFYING = {
    code: language.function_words | language.frequent_words for code, language in LANGUAGES.items()
}
"""The words that tell each language."""
_UNIQUE = {
    code: own.difference(*(other for c, other in _IDENTIFYING.items() if c != code))
    for code, own in _IDENTIFYING.items()
}
"""Those no other language shares: they decide between two languages that score alike."""


@lru_cache(maxsize=64)
def _stopwords(languages: Languages) -> frozenset[str]:
    empty: frozenset[str] = frozenset()
    return empty.union(*(LANGUAGES[code].function_words for code in languages))


@dataclass(frozen=True)
class _Rule:
    """A :class:`~veil.memory.guardrail_rules.Markers` table, compiled: one pattern a
    language."""

    patterns: Mapping[str, re.Pattern[str]]

    def found(self, text: str, languages: Languages) -> bool:
        """Whether one of its markers is in ``text``, in one of ``languages``."""
        return any(
            pattern.search(text)
            for code in languages
            if (pattern := self.patterns.get(code)) is not None
        )

    def says(self, text: str, languages: Languages) -> bool:
        """Whether ``text`` says what the rule looks for, or the rule cannot tell: a language
        it has no markers for (or none recognised) is not judged by their absence."""
        return (
            not languages
            or any(code not in self.patterns for code in languages)
            or self.found(text, languages)
        )


def _rule(markers: Markers) -> _Rule:
    end = "" if markers.open_ended else r"\b"
    return _Rule(
        {
            code: re.compile(r"\b(" + "|".join((*markers.common, *words)) + ")" + end, re.I)
            for code, words in markers.words.items()
        }
    )


def _either(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in words)


def _reporting(code: str, reporting: rules.Reporting) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The pattern of reported speech in one language, and of a reporter's determiner."""
    language = LANGUAGES[code]
    joins = any(d.endswith(("'", "’")) for d in reporting.determiners)
    after = r"(?:\s+|(?<=['’]))" if joins else r"\s+"
    dets = _either(reporting.determiners)
    word = f"[{language.capitals}{language.small}][\\w'-]*"
    cap, small = language.capitals, language.small
    name = rf"\b[{cap}][{small}]+(?:\s+[{cap}][{small}]+)?"
    who = rf"(?P<who>\b(?i:{dets}){after}(?:{word}\s+){{0,3}}?{word}|{name})"
    said = re.compile(who + r"\s+(?:" + "|".join(reporting.verbs) + r")\b")
    return said, re.compile(f"^(?:{dets}){after}", re.IGNORECASE)


@dataclass(frozen=True)
class _Days:
    named: re.Pattern[str]
    not_days: re.Pattern[str] | None
    days: rules.Days

    def ahead(self, word: str, today: date) -> int:
        if word in self.days.relative:
            return self.days.relative[word]
        return (self.days.weekdays.index(word) - today.weekday()) % 7 or 7


def _days(days: rules.Days) -> _Days:
    words = _either([*days.relative, *days.weekdays])
    not_days = re.compile(rf"\b(?:{_either(days.not_days)})\b", re.I) if days.not_days else None
    return _Days(re.compile(rf"\b({words})\b", re.I), not_days, days)


_KIND_SHAPES: dict[str, _Rule] = {kind: _rule(m) for kind, m in rules.EPISODE_KINDS.items()}
_TIME = _rule(rules.NAMES_A_TIME)
_RELATION_SHAPES: dict[str, _Rule] = {rel: _rule(m) for rel, m in rules.RELATIONS.items()}
_RELATION_SHAPES.update(
    {alias: _RELATION_SHAPES[rel] for alias, rel in rules.RELATIONS_ALIASES.items()}
)
_TRANSIENT_PLACE = _rule(rules.TRANSIENT_PLACE)
_AGAINST = _rule(rules.AVOIDING)
_FOR = _rule(rules.USING)
_REPORT = {code: _reporting(code, r) for code, r in rules.REPORTED_SPEECH.items()}
_DAYS = {code: _days(d) for code, d in rules.DAYS.items()}


# ---- grounding --------------------------------------------------------------------------------


def content_words(text: str, languages: Languages = (ENGLISH,)) -> list[str]:
    """The words that carry meaning: lower-cased, none of ``languages``' function words,
    digits kept at any length. Only words of the Latin alphabet (with its accents) count."""
    stop = _stopwords(languages)
    words = _TOKEN.findall(text.casefold())
    return [w for w in words if w.isdigit() or (len(w) >= 3 and w not in stop)]


def _same_word(a: str, b: str) -> bool:
    if a == b:
        return True
    if a.isdigit() or b.isdigit():
        return False
    short, long_ = sorted((a, b), key=len)
    common = 0
    for x, y in zip(short, long_, strict=False):
        if x != y:
            break
        common += 1
    return common >= 4 and common >= 0.6 * len(short)


def object_grounded(value: str, evidence: str, also: Iterable[str] = ()) -> bool:
    """Whether the value of a fact comes from ``evidence`` (or from the texts in ``also``:
    the current fact it supersedes): some word of it is in them (nursing ~ nurse), and every
    number of it is (two ~ 2). ISO dates are left to :func:`ungrounded_specifics`, which knows
    the calendar the model was shown. A value with no content words cannot be judged and
    passes."""
    languages = identify(evidence)
    words = content_words(_ISO_DATE.sub(" ", value), languages)
    if not words:
        return True
    source = " ".join([evidence, *also])
    source_words = content_words(source, languages)
    numbers = [w for w in words if w.isdigit()]
    if numbers and ungrounded_specifics(" ".join(numbers), source):
        return False
    named = [w for w in words if not w.isdigit()]
    return not named or any(_same_word(w, s) for w in named for s in source_words)


# ---- claims -----------------------------------------------------------------------------------


def reported_by(evidence: str, value: str) -> str | None:
    """The reporter when ``value`` is part of what someone else is reported to say ("My
    landlord says I owe him $500" → "landlord"), else None. In every language of
    :data:`~veil.memory.guardrail_rules.REPORTED_SPEECH` ("Mon propriétaire dit que …")."""
    languages = identify(evidence)
    words = content_words(value, languages)
    for code in languages:
        if code not in _REPORT:
            continue
        said_by, determiner = _REPORT[code]
        for match in said_by.finditer(evidence):
            said = content_words(evidence[match.end() :], languages)
            if not words or any(_same_word(w, s) for w in words for s in said):
                who = determiner.sub("", match.group("who")).strip().casefold()
                return who if who not in LANGUAGES[code].self_words else None
    return None


# ---- relations --------------------------------------------------------------------------------


def unsupported_relation(relation: str, value: str, evidence: str) -> str | None:
    """Why the evidence does not support ``relation`` at all, or None: a job needs the
    evidence to speak of work ("I have a dentist appointment" is not ``works_as dentist``), a
    tool needs it to speak of using something (or the value to be a known tool)."""
    shape = _RELATION_SHAPES.get(relation)
    if shape is None or shape.says(evidence, identify(evidence)):
        return None
    if relation != "works_as" and set(content_words(value)) & rules.TOOLS:
        return None
    return f"{relation} {value!r}: the evidence says nothing of that kind"


def transient_place(relation: str, evidence: str) -> bool:
    """Whether a location is where the person is for now ("I'm at the airport"), not where
    they live: such a value sits beside the lasting one instead of superseding it."""
    return relation == "located_at" and _TRANSIENT_PLACE.found(evidence, identify(evidence))


def polarity(relation: str, value: str, evidence: str) -> tuple[str, str | None]:
    """``uses_tool`` and ``avoids_tool`` as the evidence says them: "I avoid Docker" is
    ``avoids_tool``, "I started using Docker again" ``uses_tool``, whatever the model wrote.
    Only when the evidence's words around the value say so (within the same clause)."""
    if relation not in ("uses_tool", "avoids_tool"):
        return relation, None
    languages = identify(evidence)
    words = content_words(value, languages)
    for clause in _clauses(languages).split(evidence):
        if not any(_same_word(w, c) for w in words for c in content_words(clause, languages)):
            continue
        against, for_ = _AGAINST.found(clause, languages), _FOR.found(clause, languages)
        if against and not for_ and relation == "uses_tool":
            return "avoids_tool", f"the evidence avoids {value!r}: avoids_tool"
        if for_ and not against and relation == "avoids_tool":
            return "uses_tool", f"the evidence uses {value!r}: uses_tool"
    return relation, None


@lru_cache(maxsize=64)
def _clauses(languages: Languages) -> re.Pattern[str]:
    breaks = [f" {w} " for code in languages for w in LANGUAGES[code].clause_breaks]
    return re.compile("|".join([r"[.;,!?]", *map(re.escape, breaks)]))


def sane_relation(relation: str, value: str) -> tuple[str, str | None]:
    """``(relation, note)``: a job that is a tool's name is the tool the person uses."""
    words = content_words(value)
    if relation == "works_as" and set(words) & rules.TOOLS and len(words) <= 2:
        return "uses_tool", f"works_as {value!r} is a tool, not a job: stored as uses_tool"
    return relation, None


# ---- episodes ---------------------------------------------------------------------------------


def checked_episode(
    item: EpisodeItem, evidence: str, today: date | None = None
) -> tuple[EpisodeItem, list[str]]:
    """The episode with a kind the evidence supports and a ``due`` only where one belongs.

    - A kind whose shape the evidence lacks (a ``failure`` with nothing failing) becomes
      ``interaction``, except that an episode with a due date whose evidence says something is
      to be done is a ``commitment``, whatever kind the model wrote.
    - ``due`` only on a commitment whose evidence names a time; and the date must be the one
      the evidence names (:func:`resolve_due`): a date it states, or "today", "tomorrow", a
      weekday, resolved on the evidence's own day — the model's arithmetic is not trusted.
    """
    notes: list[str] = []
    kind: EpisodeKind = item.kind
    due = item.due
    languages = identify(evidence)
    named_time = _TIME.found(evidence, languages)
    to_do = _KIND_SHAPES["commitment"].found(evidence, languages) and named_time
    if due is not None and kind != "commitment" and to_do:
        notes.append(f"episode kind {kind} with a due date on something to be done: commitment")
        kind = "commitment"
    shape = _KIND_SHAPES.get(kind)
    if shape is not None and not shape.says(evidence, languages):
        fitting: list[EpisodeKind] = [
            k
            for k in _KIND_PRIORITY
            if _KIND_SHAPES[k].found(evidence, languages) and (k != "commitment" or named_time)
        ]
        instead: EpisodeKind = fitting[0] if fitting else "interaction"
        notes.append(f"episode kind {kind} is not supported by the evidence: {instead}")
        kind = instead
    if due is not None and kind != "commitment":
        notes.append(f"due {due} dropped: only commitments are due")
        due = None
    elif due is not None and not _TIME.says(evidence, languages):
        notes.append(f"due {due} dropped: the evidence names no time")
        due = None
    elif due is not None:
        named = resolve_due(evidence, today)
        if named is not None and named != due:
            notes.append(f"due {due} corrected to {named}: the date the evidence names")
            due = named
    return replace(item, kind=kind, due=due), notes


def resolve_due(evidence: str, today: date | None) -> str | None:
    """The date the evidence itself names, when it names exactly one: an ISO date it states,
    else "today"/"tonight", "tomorrow" or a weekday (its next occurrence, today excluded)
    counted from ``today``. None when it names none or several (the model's date stands)."""
    stated = sorted(set(_ISO_DATE.findall(evidence)))
    if len(stated) == 1:
        return "-".join(stated[0])
    if stated or today is None:
        return None
    ahead: dict[str, int] = {}
    for code in identify(evidence):
        if (days := _DAYS.get(code)) is None:
            continue
        text = days.not_days.sub(" ", evidence) if days.not_days else evidence
        for match in days.named.finditer(text):
            word = match.group(1).casefold()
            ahead[word] = days.ahead(word, today)
    if len(ahead) != 1:
        return None
    return (today + timedelta(days=next(iter(ahead.values())))).isoformat()


# ---- third person -----------------------------------------------------------------------------


def third_person(text: str, subject: str = "the user") -> str:
    """``text`` about ``subject`` instead of in the first person: "I moved to Porto" → "The
    user moved to Porto", "my sister" → "the user's sister", "I live" → "the user lives".
    English grammar: a text in another language is left as it is."""
    if identify(text) != (ENGLISH,) or not _FIRST_PERSON.search(text):
        return text
    possessive = f"{subject}'s"
    out: list[str] = []
    pos = 0
    for match in _FIRST_PERSON.finditer(text):
        out.append(text[pos : match.start()])
        word = match.group(0)
        low = word.casefold()
        rest = text[match.end() :]
        if low in ("my", "mine"):
            out.append(possessive)
        elif low in ("me", "myself"):
            out.append(subject)
        elif low in ("i'm", "i am"):
            out.append(f"{subject} is")
        elif low in ("i've", "i have"):
            out.append(f"{subject} has")
        elif low == "i'd":
            out.append(f"{subject} would")
        elif low == "i'll":
            out.append(f"{subject} will")
        elif low == "i was":
            out.append(f"{subject} was")
        else:  # a bare "I": the verb after it (past one adverb) takes the third person
            out.append(subject)
            words = re.match(r"(\s+)([a-z]+)\b(?:(\s+)([a-z]+)\b)?", rest)
            if words:
                space, first, gap, second = words.groups()
                if first in rules.ADVERBS and second:
                    out.append(f"{space}{first}{gap}{_conjugate(second)}")
                    pos = match.end() + words.end()
                else:
                    out.append(f"{space}{_conjugate(first)}")
                    pos = match.end() + words.end(2)
                continue
        pos = match.end()
    out.append(text[pos:])
    result = "".join(out)
    return result[0].upper() + result[1:] if result else result


def _conjugate(verb: str) -> str:
    if verb in rules.IRREGULAR:
        return rules.IRREGULAR[verb]
    if verb in rules.MODALS or verb in rules.PAST or verb.endswith("ed") or verb in rules.ADVERBS:
        return verb
    if verb.endswith("s") and not verb.endswith("ss"):
        return verb
    if verb.endswith(("sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 2 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


# ---- statements -------------------------------------------------------------------------------

_PHRASES = {
    "prefers": "prefers",
    "works_as": "works as",
    "located_at": "is based in",
    "uses_tool": "uses",
    "avoids_tool": "avoids",
    "has_pet": "has a pet:",
    "works_on": "works on",
    "partner_of": "is the partner of",
    "relative_of": "is related to",
    "deadline": "has a deadline:",
}


def describe(subject: str, relation: str, value: str) -> str:
    """A plain statement of a fact, for when the model's own says something else."""
    who = "The user" if subject.strip().casefold() in ("user", "the user") else subject.strip()
    verb = _PHRASES.get(relation, relation.replace("_", " "))
    return f"{who} {verb} {value}."


def episode_grounded(text: str, evidence: str) -> bool:
    """Whether an episode's text is about the evidence: a third of its words (at least one)
    are the evidence's. "The user lives in Porto." for "The weather is lovely today." is not."""
    languages = identify(evidence)
    words = content_words(text, languages)
    if not words:
        return True
    source = content_words(evidence, languages)
    shared = sum(1 for w in words if any(_same_word(w, s) for s in source))
    return shared >= max(1, len(words) / 3)


# ---- one extraction ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Vetted:
    facts: tuple[FactItem, ...]
    episodes: tuple[EpisodeItem, ...]
    invalid: tuple[InvalidItem, ...]
    notes: tuple[str, ...]


def vet(
    facts: Sequence[FactItem],
    episodes: Sequence[EpisodeItem],
    *,
    evidence: str,
    shown: Sequence[PromptFact] = (),
    calendar: Set[date] = frozenset(),
    today: date | None = None,
) -> Vetted:
    """Every guardrail over one extraction. ``shown`` are the current facts the prompt showed
    (a fact's ``supersedes`` target lends it words); ``calendar`` the days the prompt listed
    (a date copied from it for "tomorrow" is grounded)."""
    by_id = {f.id: f for f in shown}
    languages = identify(evidence)
    notes: list[str] = []
    invalid: list[InvalidItem] = []
    out_facts: list[FactItem] = []
    for item in facts:
        relation, note = sane_relation(item.relation, item.object)
        relation, flipped = polarity(relation, item.object, evidence)
        notes.extend(n for n in (note, flipped) if n)
        reason = unsupported_relation(relation, item.object, evidence)
        if reason is not None:
            invalid.append(InvalidItem(item=item.__dict__, reason=f"fact: {reason}"))
            continue
        volatility = item.volatility
        if transient_place(relation, evidence) and volatility not in ("transient", "ephemeral"):
            notes.append(f"{item.object!r} is where the person is for now: transient")
            volatility = "transient"
        claimant = item.claimant
        reporter = reported_by(evidence, item.object)
        if reporter is not None and claimant.strip().casefold() == "user":
            notes.append(f"{item.object!r} is what {reporter} says: a third-party claim")
            claimant = reporter
        target = by_id.get(item.supersedes or "")
        lent = [target.object, target.statement] if target is not None else []
        grounded = object_grounded(item.object, evidence, lent)
        source = " ".join([evidence, *lent])
        said = ungrounded_specifics(item.statement, source, calendar=set(calendar))
        missing = tuple(
            dict.fromkeys(
                [*ungrounded_specifics(item.object, source, calendar=set(calendar)), *said]
            )
        )
        statement_words = content_words(item.statement, languages)
        source_words = content_words(source, languages)
        about = any(_same_word(w, s) for w in statement_words for s in source_words)
        dated = _DATETIME.sub(" ", item.object)
        if not grounded and (not about or not content_words(dated, languages)):
            invalid.append(
                InvalidItem(
                    item=item.__dict__,
                    reason=f"fact: nothing of {item.object!r} is in the evidence",
                )
            )
            continue
        statement = item.statement
        if grounded and said:
            statement = describe(item.subject, relation, item.object)
            notes.append(f"statement {item.statement!r} says what the evidence does not: {said}")
            missing = tuple(m for m in missing if m not in said)
        if not grounded:
            notes.append(f"{item.object!r} is not in the evidence: ungrounded")
        out_facts.append(
            replace(
                item,
                relation=relation,
                volatility=volatility,
                claimant=claimant,
                statement=third_person(statement),
                grounded=grounded and not missing,
                missing=tuple(dict.fromkeys([*([] if grounded else [item.object]), *missing])),
            )
        )
    out_episodes: list[EpisodeItem] = []
    for episode in episodes:
        if not episode_grounded(episode.text, evidence):
            invalid.append(
                InvalidItem(item=episode.__dict__, reason="episode: not about the evidence")
            )
            continue
        checked, episode_notes = checked_episode(episode, evidence, today)
        notes.extend(episode_notes)
        out_episodes.append(replace(checked, text=third_person(checked.text)))
    return Vetted(tuple(out_facts), tuple(out_episodes), tuple(invalid), tuple(notes))
