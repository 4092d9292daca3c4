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
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass, replace
from datetime import date, timedelta

from veil.memory.extraction import EpisodeItem, FactItem, PromptFact
from veil.memory.grounding import ISO_DATE as _ISO_DATE
from veil.memory.grounding import ungrounded_specifics
from veil.memory.model import EpisodeKind, InvalidItem


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = _words(
    "a an the of to in on at for from by with and or but not no is are was were be been am "
    "my our your his her their its i me we you he she they it this that these those there "
    "user users very really just also now then than as into onto out up down off over "
    "about after before again new old some any all one more most"
)
TOOL_WORDS = _words(
    "vim neovim nvim emacs vscode code sublime atom nano helix zed intellij pycharm "
    "webstorm goland clion rider xcode eclipse git github gitlab docker podman kubernetes "
    "kubectl terraform ansible pytest unittest tox nox npm yarn pnpm ruff black flake8 mypy "
    "pyright jest vitest cargo rustc make cmake bazel gradle maven postgres postgresql "
    "mysql sqlite redis mongodb zsh bash fish tmux slack jira notion figma chrome firefox "
    "safari linux macos windows ubuntu python javascript typescript java golang rust ruby "
    "php sql excel"
)
"""Names that are tools, editors or languages: a value of ``works_as`` that is one of these
is a tool the person uses, not their job."""

_REPORT = re.compile(
    r"(?P<who>\b(?i:my|our|the|a|an|his|her|their)\s+(?:[A-Za-z][\w'-]*\s+){0,3}?[A-Za-z][\w'-]*"
    r"|\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)"
    r"\s+(?:says|said|claims|claimed|told me|tells me|thinks|reckons|insists|alleges|swears|"
    r"mentioned|wrote|reports|reported|believes|warned me|informed me)\b",
)
_DETERMINER = re.compile(r"^(?:my|our|the|a|an|his|her|their)\s+", re.IGNORECASE)
_FIRST_PERSON = re.compile(
    r"\b(I'm|I am|I've|I have|I'd|I'll|I was|I|my|mine|me|myself)\b", re.IGNORECASE
)
_ADVERBS = _words(
    "also really just now still never always often usually sometimes actually currently "
    "recently finally mostly already even only longer honestly"
)
_MODALS = _words("will would can could should must may might shall")
_PAST = _words(
    "went was were had did got made said saw took came knew thought told found gave left felt "
    "kept began ran wrote bought brought sold paid met sent spent built lost won quit put set "
    "read hit cut let became chose drove flew forgot grew heard held led meant rode sat slept "
    "spoke stood taught threw understood woke wore"
)
_IRREGULAR = {"am": "is", "have": "has", "do": "does", "go": "goes", "was": "was", "be": "is"}

_KIND_SHAPES: dict[EpisodeKind, re.Pattern[str]] = {
    "commitment": re.compile(
        r"\b(will|'ll|going to|gonna|promis\w*|plan\w* to|need to|needs to|have to|has to|"
        r"must|should|appointment|meeting|deadline|due|remind me|schedul\w*|book\w*|"
        r"fly\w*|flight|trip|renew\w*|submit\w*|send\w*|call\w* back|tomorrow|tonight|"
        r"(?:by|before|on|next) (?:the end|tomorrow|tonight|monday|tuesday|wednesday|thursday|"
        r"friday|saturday|sunday|week|month|year|\d))\b",
        re.IGNORECASE,
    ),
    "failure": re.compile(
        r"\b(fail\w*|error\w*|broke\w*|broken|crash\w*|didn'?t work|doesn'?t work|"
        r"does not work|did not work|couldn'?t|can'?t|cannot|bug\w*|exception|timeout|"
        r"timed out|lost|missed|wrong|problem\w*|issue\w*|regress\w*|flak\w*)\b",
        re.IGNORECASE,
    ),
    "fix": re.compile(
        r"\b(fix\w*|solv\w*|resolv\w*|works now|working now|work now|patch\w*|workaround|"
        r"repair\w*|retry|retries|corrected)\b",
        re.IGNORECASE,
    ),
    "outcome": re.compile(
        r"\b(pass\w*|succeed\w*|success\w*|result\w*|won|finish\w*|complet\w*|ship\w*|"
        r"launch\w*|accept\w*|reject\w*|got|turned out|ended up|outcome)\b",
        re.IGNORECASE,
    ),
}
_KIND_PRIORITY: tuple[EpisodeKind, ...] = ("fix", "failure", "commitment", "outcome")
"""When the model's kind does not fit the evidence, the first kind here that does (a fix of a
failure is a fix)."""
_DATETIME = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?")
_TIME = re.compile(
    r"\b(\d{4}-\d{2}-\d{2}|\d{1,2}(?::\d{2})?\s?(?:am|pm)|today|tonight|tomorrow|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|next (?:week|month|year)|"
    r"this (?:week|month|year)|in \w+ (?:days?|weeks?|months?)|january|february|march|april|"
    r"may|june|july|august|september|october|november|december|deadline|"
    r"end of (?:the )?(?:day|week|month))\b",
    re.IGNORECASE,
)


# ---- grounding --------------------------------------------------------------------------------


def content_words(text: str) -> list[str]:
    """The words that carry meaning: lower-cased, no stopwords, digits kept at any length."""
    words = re.findall(r"[a-z0-9]+", text.casefold())
    return [w for w in words if w.isdigit() or (len(w) >= 3 and w not in STOPWORDS)]


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
    words = content_words(_ISO_DATE.sub(" ", value))
    if not words:
        return True
    source = " ".join([evidence, *also])
    source_words = content_words(source)
    numbers = [w for w in words if w.isdigit()]
    if numbers and ungrounded_specifics(" ".join(numbers), source):
        return False
    named = [w for w in words if not w.isdigit()]
    return not named or any(_same_word(w, s) for w in named for s in source_words)


# ---- claims -----------------------------------------------------------------------------------


def reported_by(evidence: str, value: str) -> str | None:
    """The reporter when ``value`` is part of what someone else is reported to say ("My
    landlord says I owe him $500" → "landlord"), else None."""
    words = content_words(value)
    for match in _REPORT.finditer(evidence):
        said = evidence[match.end() :]
        if not words or any(_same_word(w, s) for w in words for s in content_words(said)):
            who = re.sub(
                r"^(?:my|our|the|a|an|his|her|their)\s+", "", match.group("who"), flags=re.I
            )
            return who.strip().casefold() if who.strip().casefold() not in {"i", "user"} else None
    return None


# ---- relations --------------------------------------------------------------------------------


_RELATION_SHAPES: dict[str, re.Pattern[str]] = {
    "works_as": re.compile(
        r"\b(work\w*|job\w*|employ\w*|profession\w*|career|hired|promot\w*|quit|retir\w*|"
        r"occupation|role|position|title|i'?m an? |(?:am|is|are|was|'s|'re) an? |became|become|"
        r"as an? )",
        re.IGNORECASE,
    ),
    "uses_tool": re.compile(
        r"\b(us(?:e|es|ed|ing)|switch\w*|start\w*|stop\w*|avoid\w*|install\w*|tool\w*|"
        r"editor|formatter|linter|laptop|phone|computer|app\w*|language|prefer\w*|run\w*|"
        r"work\w* with|play\w*|replac\w*|mode|back to|moved to|write|code)\b",
        re.IGNORECASE,
    ),
}
_RELATION_SHAPES["avoids_tool"] = _RELATION_SHAPES["uses_tool"]
_TRANSIENT_PLACE = re.compile(
    r"\b(i'?m at|i am at|i'?m in|currently (?:at|in)|right now|at the moment|waiting|"
    r"on my way|this (?:week|weekend)|for the (?:day|week|weekend)|visiting)\b",
    re.IGNORECASE,
)


def unsupported_relation(relation: str, value: str, evidence: str) -> str | None:
    """Why the evidence does not support ``relation`` at all, or None: a job needs the
    evidence to speak of work ("I have a dentist appointment" is not ``works_as dentist``), a
    tool needs it to speak of using something (or the value to be a known tool)."""
    shape = _RELATION_SHAPES.get(relation)
    if shape is None or shape.search(evidence):
        return None
    if relation != "works_as" and set(content_words(value)) & TOOL_WORDS:
        return None
    return f"{relation} {value!r}: the evidence says nothing of that kind"


def transient_place(relation: str, evidence: str) -> bool:
    """Whether a location is where the person is for now ("I'm at the airport"), not where
    they live: such a value sits beside the lasting one instead of superseding it."""
    return relation == "located_at" and bool(_TRANSIENT_PLACE.search(evidence))


_AGAINST = re.compile(
    r"\b(avoid\w*|stop\w* using|stopped|quit|don'?t use|do not use|no longer use|gave up|"
    r"dropped|hate|dislike)\b",
    re.IGNORECASE,
)
_FOR = re.compile(
    r"\b(start\w* using|us(?:e|es|ing) .{0,20}again|went back to|switch\w* (?:back )?to|"
    r"moved to|adopt\w*|picked up)\b",
    re.IGNORECASE,
)


def polarity(relation: str, value: str, evidence: str) -> tuple[str, str | None]:
    """``uses_tool`` and ``avoids_tool`` as the evidence says them: "I avoid Docker" is
    ``avoids_tool``, "I started using Docker again" ``uses_tool``, whatever the model wrote.
    Only when the evidence's words around the value say so (within the same clause)."""
    if relation not in ("uses_tool", "avoids_tool"):
        return relation, None
    words = content_words(value)
    for clause in re.split(r"[.;,!?]| but | and ", evidence):
        if not any(_same_word(w, c) for w in words for c in content_words(clause)):
            continue
        against, for_ = _AGAINST.search(clause), _FOR.search(clause)
        if against and not for_ and relation == "uses_tool":
            return "avoids_tool", f"the evidence avoids {value!r}: avoids_tool"
        if for_ and not against and relation == "avoids_tool":
            return "uses_tool", f"the evidence uses {value!r}: uses_tool"
    return relation, None


def sane_relation(relation: str, value: str) -> tuple[str, str | None]:
    """``(relation, note)``: a job that is a tool's name is the tool the person uses."""
    words = content_words(value)
    if relation == "works_as" and set(words) & TOOL_WORDS and len(words) <= 2:
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
    to_do = _KIND_SHAPES["commitment"].search(evidence) and _TIME.search(evidence)
    if due is not None and kind != "commitment" and to_do:
        notes.append(f"episode kind {kind} with a due date on something to be done: commitment")
        kind = "commitment"
    shape = _KIND_SHAPES.get(kind)
    if shape is not None and not shape.search(evidence):
        fitting: list[EpisodeKind] = [
            k
            for k in _KIND_PRIORITY
            if _KIND_SHAPES[k].search(evidence) and (k != "commitment" or _TIME.search(evidence))
        ]
        instead: EpisodeKind = fitting[0] if fitting else "interaction"
        notes.append(f"episode kind {kind} is not supported by the evidence: {instead}")
        kind = instead
    if due is not None and kind != "commitment":
        notes.append(f"due {due} dropped: only commitments are due")
        due = None
    elif due is not None and not _TIME.search(evidence):
        notes.append(f"due {due} dropped: the evidence names no time")
        due = None
    elif due is not None:
        named = resolve_due(evidence, today)
        if named is not None and named != due:
            notes.append(f"due {due} corrected to {named}: the date the evidence names")
            due = named
    return replace(item, kind=kind, due=due), notes


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_RELATIVE = re.compile(r"\b(today|tonight|tomorrow|" + "|".join(_WEEKDAYS) + r")\b", re.I)


def resolve_due(evidence: str, today: date | None) -> str | None:
    """The date the evidence itself names, when it names exactly one: an ISO date it states,
    else "today"/"tonight", "tomorrow" or a weekday (its next occurrence, today excluded)
    counted from ``today``. None when it names none or several (the model's date stands)."""
    stated = sorted(set(_ISO_DATE.findall(evidence)))
    if len(stated) == 1:
        return "-".join(stated[0])
    if stated or today is None:
        return None
    words = {m.group(1).casefold() for m in _RELATIVE.finditer(evidence)}
    if len(words) != 1:
        return None
    (word,) = words
    if word in ("today", "tonight"):
        return today.isoformat()
    if word == "tomorrow":
        return (today + timedelta(days=1)).isoformat()
    ahead = (_WEEKDAYS.index(word) - today.weekday()) % 7 or 7
    return (today + timedelta(days=ahead)).isoformat()


# ---- third person -----------------------------------------------------------------------------


def third_person(text: str, subject: str = "the user") -> str:
    """``text`` about ``subject`` instead of in the first person: "I moved to Porto" → "The
    user moved to Porto", "my sister" → "the user's sister", "I live" → "the user lives"."""
    if not _FIRST_PERSON.search(text):
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
                if first in _ADVERBS and second:
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
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb in _MODALS or verb in _PAST or verb.endswith("ed") or verb in _ADVERBS:
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
    words = content_words(text)
    if not words:
        return True
    source = content_words(evidence)
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
        statement_words = content_words(item.statement)
        about = any(_same_word(w, s) for w in statement_words for s in content_words(source))
        if not grounded and (not about or not content_words(_DATETIME.sub(" ", item.object))):
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
