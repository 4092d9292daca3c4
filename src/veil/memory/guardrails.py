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
from datetime import date

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
    r"(?P<who>\b(?:my|our|the|a|an|his|her|their)\s+(?:[A-Za-z][\w'-]*\s+){0,3}?[A-Za-z][\w'-]*"
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
_IRREGULAR = {"am": "is", "have": "has", "do": "does", "go": "goes", "was": "was", "be": "is"}

_KIND_SHAPES: dict[EpisodeKind, re.Pattern[str]] = {
    "commitment": re.compile(
        r"\b(will|'ll|going to|gonna|promis\w*|plan\w* to|need to|needs to|have to|has to|"
        r"must|should|appointment|meeting|deadline|due|remind me|schedul\w*|book\w*|"
        r"fly\w*|flight|trip|renew\w*|submit\w*|send\w*|call\w* back|before|by|tomorrow|"
        r"tonight|next (?:week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|"
        r"sunday))\b",
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
_TIME = re.compile(
    r"\b(\d{4}-\d{2}-\d{2}|\d{1,2}(?::\d{2})?\s?(?:am|pm)|today|tonight|tomorrow|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend|next (?:week|month|year)|"
    r"this (?:week|month|year)|in \w+ (?:days?|weeks?|months?)|january|february|march|april|"
    r"may|june|july|august|september|october|november|december|deadline|by \w+|before \w+|"
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


def sane_relation(relation: str, value: str) -> tuple[str, str | None]:
    """``(relation, note)``: a job that is a tool's name is the tool the person uses."""
    words = content_words(value)
    if relation == "works_as" and set(words) & TOOL_WORDS and len(words) <= 2:
        return "uses_tool", f"works_as {value!r} is a tool, not a job: stored as uses_tool"
    return relation, None


# ---- episodes ---------------------------------------------------------------------------------


def checked_episode(item: EpisodeItem, evidence: str) -> tuple[EpisodeItem, list[str]]:
    """The episode with a kind the evidence supports (else ``interaction``) and a ``due``
    only on a commitment whose evidence states or implies a time."""
    notes: list[str] = []
    kind: EpisodeKind = item.kind
    shape = _KIND_SHAPES.get(kind)
    if shape is not None and not shape.search(evidence):
        notes.append(f"episode kind {kind} is not supported by the evidence: interaction")
        kind = "interaction"
    due = item.due
    if due is not None and kind != "commitment":
        notes.append(f"due {due} dropped: only commitments are due")
        due = None
    elif due is not None and not _TIME.search(evidence):
        notes.append(f"due {due} dropped: the evidence names no time")
        due = None
    return replace(item, kind=kind, due=due), notes


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
            verb = re.match(r"(\s+)((?:[a-z]+\s+)??)([a-z]+)\b", rest)
            if verb and (not verb.group(2) or verb.group(2).strip() in _ADVERBS):
                out.append(verb.group(1) + verb.group(2) + _conjugate(verb.group(3)))
                pos = match.end() + verb.end()
                continue
        pos = match.end()
    out.append(text[pos:])
    result = "".join(out)
    return result[0].upper() + result[1:] if result else result


def _conjugate(verb: str) -> str:
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb in _MODALS or verb.endswith("ed") or verb in _ADVERBS or verb.endswith("s"):
        return verb
    if verb.endswith(("sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 2 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


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
) -> Vetted:
    """Every guardrail over one extraction. ``shown`` are the current facts the prompt showed
    (a fact's ``supersedes`` target lends it words); ``calendar`` the days the prompt listed
    (a date copied from it for "tomorrow" is grounded)."""
    by_id = {f.id: f for f in shown}
    notes: list[str] = []
    out_facts: list[FactItem] = []
    for item in facts:
        relation, note = sane_relation(item.relation, item.object)
        if note:
            notes.append(note)
        claimant = item.claimant
        reporter = reported_by(evidence, item.object)
        if reporter is not None and claimant.strip().casefold() == "user":
            notes.append(f"{item.object!r} is what {reporter} says: a third-party claim")
            claimant = reporter
        target = by_id.get(item.supersedes or "")
        lent = [target.object, target.statement] if target is not None else []
        grounded = object_grounded(item.object, evidence, lent)
        missing = tuple(
            ungrounded_specifics(
                f"{item.object} {item.statement}",
                " ".join([evidence, *lent]),
                calendar=set(calendar),
            )
        )
        if not grounded:
            notes.append(f"{item.object!r} is not in the evidence: ungrounded")
        out_facts.append(
            replace(
                item,
                relation=relation,
                claimant=claimant,
                statement=third_person(item.statement),
                grounded=grounded and not missing,
                missing=tuple(dict.fromkeys([*([] if grounded else [item.object]), *missing])),
            )
        )
    out_episodes: list[EpisodeItem] = []
    for episode in episodes:
        checked, episode_notes = checked_episode(episode, evidence)
        notes.extend(episode_notes)
        out_episodes.append(replace(checked, text=third_person(checked.text)))
    return Vetted(tuple(out_facts), tuple(out_episodes), (), tuple(notes))
