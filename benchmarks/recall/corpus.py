"""The recall workload: N items in one scope (80% facts, 20% episodes) and a query mix, both
generated deterministically from a seed.

Subjects come from a pool of 2% × N entity names (people and organisations, drawn with a skew so
some entities have many facts), 20% of the facts are about the user; relations from the built-in
registry plus five unclassified ones (``enjoys``, ``studied_at``, ``knows``, ``owns``,
``visited``); objects and statements are short template sentences with varied wording; about 5%
of the facts are superseded values of functional relations and 1.6% quarantined third-party
claims; episodes are interactions, outcomes, failures, fixes and commitments (some due soon),
30% of them in the first person. Times are spread over the two years before :data:`NOW`, in
item order. Each item is the ``memory.fact`` / ``memory.episode`` event ``Writer.apply`` emits.

Queries (:func:`make_queries`): 40% about an entity ("where does <entity> live?"), 20% about the
user ("what do I prefer"), 30% keywords naming no entity, 10% the empty-query briefing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
from numpy.typing import NDArray

from veil.clock import format_time
from veil.memory.config import BUILTIN_RELATIONS
from veil.memory.entities import value_key
from veil.memory.trust import trust_of
from veil.tape import Event, JSONValue

SCOPE = "bench-user"
SEED = 7
BATCH = 2_000
FACT_SHARE = 0.8
ENTITY_SHARE = 0.02
USER_FACT_SHARE = 0.2
TOKEN_BUDGET = 1000
NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SPAN = timedelta(days=730)
QUERY_TYPES = ("entity", "user", "keyword", "briefing")
QUERY_MIX = (0.4, 0.2, 0.3, 0.1)

# ---- vocabulary ------------------------------------------------------------------------------


def _items(text: str, sep: str) -> tuple[str, ...]:
    return tuple(text.split(sep))


FIRST = _items(
    "Ada Alan Amara Anika Arjun Astrid Bea Bilal Bruno Caleb Camila Chen Chiara Dara Dmitri "
    "Elif Emeka Esme Farah Felix Freya Gideon Hana Hugo Ines Ivo Jada Jonas Kai Kamala Keiko "
    "Lars Leila Lena Lucia Luka Mads Malik Mara Marek Mateo Maya Mei Milo Nadia Nikhil Nora "
    "Oskar Otto Paloma Pavel Priya Quinn Rafa Ravi Rhea Rosa Ruth Sami Sana Selin Soren Sven "
    "Tariq Tess Theo Uma Vera Viktor Wanda Wes Xavi Yara Yusuf Zane Zoe Aiko Bodhi Cyrus "
    "Dalia Ezra Greta Idris Juno Kofi Lior Mina Nils Orla Pia Reza Saoirse Tomas Vilja Wren",
    " ",
)
LAST = _items(
    "Abara Adler Alvarez Amsel Berg Bianchi Blake Brandt Castillo Chowdhury Costa Dahl "
    "Demir Dubois Eriksen Farouk Fischer Fontaine Garcia Gupta Haas Hale Horvat Ibarra "
    "Ishikawa Jansen Jovanovic Kaur Keller Kim Kowalski Kruger Laine Larsen Lindqvist Lopez "
    "Mahmoud Marin Meyer Moreau Mori Nakamura Novak Nunez Okafor Olsen Ortiz Park Petrov "
    "Quinlan Rahman Reyes Rossi Sato Schmidt Silva Sokolov Stein Suzuki Tanaka Torres "
    "Ueda Valdez Varga Vogel Wagner Walsh Weber Wojcik Yamamoto Yilmaz Zhang Zimmer Achebe "
    "Baptiste Cohen Dunn Esposito Falk Grant Holm Iyer Jensen Kovac Lund Mbeki Nair Oyelaran "
    "Pereira Rao Strand Thorne Ulrich Vance Wolfe Young Zeller Arslan Brennan Cruz Diallo",
    " ",
)
ORG_STEMS = _items(
    "Acme Birch Cobalt Delta Ember Fjord Granite Harbor Iris Juniper Kestrel Lumen Maple "
    "Nimbus Orchid Pioneer Quartz Riverbend Summit Tidewater Umber Vertex Willow Zephyr "
    "Aurora Beacon Cedar Drift Evergreen Falcon",
    " ",
)
ORG_KINDS = _items(
    "Labs,Bakery,Clinic,Studio,Robotics,Capital,Books,Foods,Dental,Logistics,Architects,"
    "Cycles,Brewing,Analytics,Pharmacy,Gallery,Climbing Gym,Law Office,Coffee,Theatre",
    ",",
)
CITIES = _items(
    "Lisbon,Porto,Berlin,Hamburg,Munich,Vienna,Prague,Krakow,Oslo,Bergen,Stockholm,Malmo,"
    "Helsinki,Tallinn,Riga,Dublin,Cork,Glasgow,Leeds,Bristol,Lyon,Marseille,Nantes,Ghent,"
    "Utrecht,Basel,Turin,Bologna,Seville,Valencia,Bilbao,Athens,Izmir,Cairo,Nairobi,Accra,"
    "Lagos,Cape Town,Toronto,Montreal,Denver,Austin,Portland,Seattle,Chicago,Boston,Atlanta,"
    "Mexico City,Bogota,Lima,Santiago,Sao Paulo,Osaka,Kyoto,Seoul,Taipei,Hanoi,Pune,Chennai,"
    "Melbourne,Auckland",
    ",",
)
JOBS = _items(
    "nurse,data engineer,civil engineer,pastry chef,high school teacher,physiotherapist,"
    "product manager,veterinarian,carpenter,translator,pilot,pharmacist,architect,journalist,"
    "electrician,accountant,graphic designer,social worker,barista,paramedic,librarian,"
    "marine biologist,sound engineer,tax advisor,UX researcher,dentist,firefighter,"
    "landscape gardener,bike mechanic,museum curator,site reliability engineer,midwife,"
    "police officer,historian,welder,wine merchant,radiologist,copy editor,urban planner,"
    "yoga instructor",
    ",",
)
PREFERENCES = _items(
    "dark roast coffee,green tea,window seats,aisle seats,vim,emacs,VS Code,morning meetings,"
    "async updates,spicy food,vegetarian dishes,oat milk,the metric system,paper notebooks,"
    "dark mode,mechanical keyboards,trains over planes,quiet hotels,early flights,late dinners,"
    "short emails,video calls,phone calls,jazz while working,podcasts on walks,hiking boots,"
    "rooibos tea,sourdough bread,Python,Rust,TypeScript,tabs over spaces,standing desks,"
    "audiobooks,sci-fi novels,board games,cold showers,running at dawn,weekend markets,"
    "minimalist apps",
    ",",
)
PETS = _items(
    "a beagle named Biscuit,a tabby cat named Miso,two goldfish,a parrot called Kiwi,"
    "a rescue greyhound named Dash,a corgi named Waffles,a black cat named Pepper,"
    "a rabbit called Clover,a tortoise named Sheldon,a border collie named Scout,"
    "a hamster called Peanut,a labrador named Juniper,three chickens,a gecko named Ziggy,"
    "a husky named Storm",
    ",",
)
PROJECTS = _items(
    "the kitchen renovation,a garden shed,the quarterly budget,a mobile app for the clinic,"
    "the data migration,a novel about the sea,the community choir concert,a bike touring guide,"
    "the wedding plans,a podcast on urban history,the billing service rewrite,"
    "a thesis on soil bacteria,the school fundraiser,an open source parser,the office move,"
    "a photo book of Iceland,the search ranking experiment,a marathon training plan,"
    "the grant application,a board game prototype,the home solar install,the recipe website",
    ",",
)
TOOLS = _items(
    "Obsidian,Notion,Jira,Linear,Figma,Excel,Google Sheets,Postgres,SQLite,Docker,Kubernetes,"
    "Grafana,Slack,Zoom,Todoist,Trello,Anki,Zotero,Blender,Ableton,Photoshop,Lightroom,"
    "Airtable,Tableau,pandas,PyTorch,Terraform,GitHub Actions,Strava,Duolingo",
    ",",
)
PURPOSES = _items(
    "note taking,planning sprints,tracking expenses,design reviews,team chat,language practice,"
    "photo editing,reading papers,home finances,deploys,monitoring,music production,workouts",
    ",",
)
HEALTH = _items(
    "a sprained ankle,a seasonal flu,a pulled hamstring,recovery after knee surgery,"
    "a bad migraine week,a mild concussion,tennis elbow,a broken wrist,back pain,a sinus infection",
    ",",
)
DEADLINES = _items(
    "the tax return,the grant report,the conference talk slides,the apartment deposit,"
    "the visa renewal,the quarterly review,the thesis chapter,the insurance claim,"
    "the client proposal,the passport application",
    ",",
)
HOBBIES = _items(
    "bouldering,salsa dancing,birdwatching,sourdough baking,woodworking,chess,trail running,"
    "watercolour painting,kayaking,pottery,knitting,astronomy,open water swimming,gardening,"
    "photography,jazz piano,fly fishing,rock climbing,cycling,calligraphy",
    ",",
)
SCHOOLS = _items(
    "the University of Porto,TU Munich,Trinity College Dublin,ETH Zurich,the Sorbonne,"
    "the University of Nairobi,McGill,the University of Tokyo,Uppsala University,KTH,"
    "the University of Cape Town,Politecnico di Milano,the University of Texas,Seoul National",
    ",",
)
ITEMS = _items(
    "a vintage Vespa,a sailboat,a cabin by the lake,a film camera,an electric cargo bike,"
    "a grand piano,a 3D printer,a telescope,a campervan,a vinyl collection,an espresso machine,"
    "a rooftop garden",
    ",",
)
RELATIVES = ("a sibling of", "a cousin of", "the parent of", "the child of", "an aunt of")
WHEN = (
    "",
    "",
    " last spring",
    " in March",
    " after the move",
    " since the new year",
    " two weeks ago",
    " this autumn",
    " before the holidays",
    " according to the last chat",
)
TOPICS = _items(
    "the budget spreadsheet,flight options to Osaka,a birthday present,the leaking roof,"
    "a new running route,the sourdough starter,interview preparation,the car insurance renewal,"
    "a reading list,the team offsite,database indexing,a vegetarian lasagne recipe,"
    "the broken dishwasher,holiday photos,a cover letter,the mortgage rates,a hiking trip in "
    "the mountains,the garden irrigation,a piano practice plan,the school enrolment,"
    "a conference schedule,the tax deadline,noise-cancelling headphones,a wine pairing,"
    "the moving boxes,a marathon nutrition plan,the home network,a dentist appointment,"
    "the quarterly report,a sailing course,a language exchange,the electricity bill,"
    "a camping checklist,the kitchen tiles,a podcast episode,the chess opening,"
    "a wedding speech,the bike repair,a slow cooker chili,the museum tickets",
    ",",
)
KEYWORD_QUERIES = (
    "hiking trip mountains",
    "tax deadline paperwork",
    "sourdough bread baking",
    "flight options Osaka",
    "kitchen renovation tiles",
    "marathon training nutrition",
    "database indexing problem",
    "wedding speech draft",
    "leaking roof repair",
    "piano practice plan",
    "vegetarian recipes for dinner",
    "insurance renewal",
    "conference talk slides",
    "bike repair shop",
    "noise cancelling headphones",
    "mortgage rates",
    "dentist appointment next week",
    "home network wifi",
    "camping checklist",
    "language exchange partner",
    "which tool worked for monitoring",
    "what failed during the deploy",
    "museum tickets",
    "electricity bill too high",
)
UNCLASSIFIED = ("enjoys", "studied_at", "knows", "owns", "visited")
RELATIONS = (*(r for r in BUILTIN_RELATIONS if r != "third_party_claim"), *UNCLASSIFIED)
EPISODE_KINDS = ("interaction", "outcome", "failure", "fix", "commitment")
EPISODE_KIND_P = (0.7, 0.08, 0.07, 0.07, 0.08)


# ---- items ---------------------------------------------------------------------------------


def entity_names(count: int) -> list[str]:
    """``count`` distinct entity names, people and organisations, in a seeded order."""
    people = [f"{f} {last}" for f in FIRST for last in LAST]
    orgs = [f"{s} {k}" for s in ORG_STEMS for k in ORG_KINDS]
    names = people + orgs
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(names))
    out = [names[i] for i in order]
    initials = "ABCDEFGHJKLMNPRSTVW"
    extra = 0
    while len(out) < count:  # beyond the plain combinations: a middle initial
        first, last = people[extra % len(people)].split(" ", 1)
        out.append(f"{first} {initials[(extra // len(people)) % len(initials)]}. {last}")
        extra += 1
    return out[:count]


def entity_weights(count: int) -> NDArray[np.float64]:
    """A mild power law over entity ranks: a few entities have many facts, most have some."""
    w = 1.0 / np.power(np.arange(1, count + 1, dtype=np.float64) + 5.0, 0.8)
    return w / w.sum()


@dataclass(frozen=True)
class Corpus:
    """N items (facts and episodes) in one scope, generated per batch from a seed."""

    n: int

    @property
    def n_entities(self) -> int:
        return max(10, int(self.n * ENTITY_SHARE))

    def names(self) -> list[str]:
        return entity_names(self.n_entities)

    def when(self, i: int) -> datetime:
        return NOW - SPAN + SPAN * ((i + 1) / (self.n + 1)) - timedelta(days=1)

    def batches(self) -> Iterator[list[Event]]:
        names = self.names()
        weights = entity_weights(len(names))
        for start in range(0, self.n, BATCH):
            rng = np.random.default_rng([SEED, start])
            stop = min(self.n, start + BATCH)
            subjects = rng.choice(len(names), size=stop - start, p=weights)
            events = [
                self.item(i, rng, names, int(subjects[i - start])) for i in range(start, stop)
            ]
            yield events

    def item(self, i: int, rng: np.random.Generator, names: list[str], subject: int) -> Event:
        at = self.when(i)
        if rng.random() < FACT_SHARE:
            return fact_event(i, at, rng, names, subject)
        return episode_event(i, at, rng, names, subject)


def _pick(rng: np.random.Generator, options: Sequence[str]) -> str:
    return options[int(rng.integers(len(options)))]


def _ids(prefix: str, i: int) -> str:
    digest = hashlib.sha256(f"{SEED}:{prefix}:{i}".encode()).hexdigest()[:20]
    return f"{prefix}_{i:012x}{digest}"


def object_and_statement(
    relation: str, subject: str, rng: np.random.Generator, names: list[str]
) -> tuple[str, str]:
    """A relation's object and a short, varied sentence stating the fact."""
    s = "The user" if subject == "user" else subject
    when = _pick(rng, WHEN)
    other = _pick(rng, names)
    if relation == "located_at":
        o = _pick(rng, CITIES)
        return o, _pick(
            rng, (f"{s} lives in {o}.", f"{s} moved to {o}{when}.", f"{s} is based in {o}.")
        )
    if relation == "works_as":
        o = _pick(rng, JOBS)
        return o, _pick(rng, (f"{s} works as a {o}.", f"{s} started as a {o}{when}."))
    if relation == "prefers":
        o = _pick(rng, PREFERENCES)
        return o, _pick(rng, (f"{s} prefers {o}.", f"{s} likes {o} best{when}."))
    if relation == "deadline":
        due = NOW + timedelta(days=int(rng.integers(-200, 60)))
        o = f"{_pick(rng, DEADLINES)} by {due.date()}"
        return o, f"{s} has to finish {o}."
    if relation == "health_state":
        o = _pick(rng, HEALTH)
        return o, f"{s} is recovering from {o}{when}."
    if relation == "partner_of":
        return other, f"{s} is in a relationship with {other}."
    if relation == "relative_of":
        return other, f"{s} is {_pick(rng, RELATIVES)} {other}."
    if relation == "has_pet":
        o = _pick(rng, PETS)
        return o, _pick(rng, (f"{s} has {o}.", f"{s} adopted {o}{when}."))
    if relation == "works_on":
        o = _pick(rng, PROJECTS)
        return o, f"{s} is working on {o}{when}."
    if relation == "uses_tool":
        o = _pick(rng, TOOLS)
        return o, f"{s} uses {o} for {_pick(rng, PURPOSES)}."
    if relation == "avoids_tool":
        o = _pick(rng, TOOLS)
        return o, f"{s} avoids {o} because it was too slow for {_pick(rng, PURPOSES)}."
    if relation in ("source_reliable", "source_dead_end"):
        o = _pick(rng, TOOLS)
        verdict = "a reliable source" if relation == "source_reliable" else "a dead end"
        return o, f"{o} was {verdict} for {_pick(rng, PURPOSES)}."
    if relation == "enjoys":
        o = _pick(rng, HOBBIES)
        return o, f"{s} enjoys {o} on weekends."
    if relation == "studied_at":
        o = _pick(rng, SCHOOLS)
        return o, f"{s} studied at {o}."
    if relation == "knows":
        return other, f"{s} knows {other} from {_pick(rng, TOPICS)}."
    if relation == "owns":
        o = _pick(rng, ITEMS)
        return o, f"{s} owns {o}."
    o = _pick(rng, CITIES)
    return o, f"{s} visited {o}{when}."


def fact_event(
    i: int, at: datetime, rng: np.random.Generator, names: list[str], subject_ix: int
) -> Event:
    """A ``memory.fact`` event whose payload has exactly the fields ``Writer.apply`` emits."""
    about_user = rng.random() < USER_FACT_SHARE
    subject = "user" if about_user else names[subject_ix]
    relation = _pick(rng, RELATIONS)
    registered = BUILTIN_RELATIONS.get(relation)
    obj, statement = object_and_statement(relation, subject, rng, names)
    author = "assistant" if rng.random() < 0.1 else "user"
    claimant = "user"
    disclosure = "inferred" if author == "assistant" else "first_hand"
    state = "current"
    valid_to: str | None = None
    superseded_by: str | None = None
    reason: str | None = None
    roll = rng.random()
    if roll < 0.02 and not about_user:
        claimant, disclosure, state = (
            names[(subject_ix + 1) % len(names)],
            "reported",
            "quarantined",
        )
    elif registered is not None and registered.functional and roll < 0.2:
        state, reason = "superseded", "a newer value"
        valid_to = format_time(at + timedelta(days=int(rng.integers(1, 90))))
        superseded_by = _ids("f", i + 1)
    trust = 0 if state == "quarantined" else trust_of(author, (), disclosure)
    row: dict[str, JSONValue] = {
        "fact_id": _ids("f", i),
        "subject": subject,
        "subject_key": "user" if about_user else value_key(subject),
        "relation": relation,
        "relation_class": "registered" if registered else "unclassified",
        "object": obj,
        "object_key": value_key(obj),
        "statement": statement,
        "volatility": registered.volatility if registered else "durable",
        "valid_from": format_time(at),
        "valid_to": valid_to,
        "state": state,
        "superseded_by": superseded_by,
        "reason": reason,
        "author": author,
        "disclosure": disclosure,
        "claimant": claimant,
        "event_id": _ids("ev", i),
        "derived_from": [],
        "session_id": None,
        "tool_call_id": None,
        "source": None,
        "trust": trust,
        "last_confirmed_at": format_time(at),
        "flags": [],
        "contested_with": [],
        "times_used": 0,
        "last_outcome": None,
    }
    return Event(
        id=_ids("evf", i),
        scope=SCOPE,
        kind="memory.fact",
        at=at,
        actor=author,
        payload={"fact": row},
        provenance={"evidence_id": _ids("ev", i)},
    )


def episode_text(kind: str, rng: np.random.Generator, names: list[str], subject: str) -> str:
    topic, tool = _pick(rng, TOPICS), _pick(rng, TOOLS)
    first_person = rng.random() < 0.3
    if kind == "interaction":
        if first_person:
            return _pick(
                rng,
                (
                    f"I asked for help with {topic}.",
                    f"I talked through {topic} and {_pick(rng, TOPICS)}.",
                    f"The user wanted a summary of {topic} before the call with {subject}.",
                ),
            )
        return _pick(
            rng,
            (
                f"Talked with {subject} about {topic}.",
                f"{subject} shared an update on {topic}; follow up{_pick(rng, WHEN)}.",
                f"Discussed {topic} with {subject}, who suggested {tool}.",
            ),
        )
    if kind == "outcome":
        return f"{tool} worked well for {topic}."
    if kind == "failure":
        return f"{tool} failed while handling {topic}; the export timed out."
    if kind == "fix":
        return f"Fixed the problem with {topic} by switching to {tool}."
    who = "I" if first_person else subject
    return f"{who} promised to send {_pick(rng, DEADLINES)} to {_pick(rng, names)}."


def episode_event(
    i: int, at: datetime, rng: np.random.Generator, names: list[str], subject_ix: int
) -> Event:
    """A ``memory.episode`` event with the payload ``Writer.apply`` emits."""
    kind = str(rng.choice(EPISODE_KINDS, p=EPISODE_KIND_P))
    text = episode_text(kind, rng, names, names[subject_ix])
    due: str | None = None
    if kind == "commitment":
        due = (NOW + timedelta(days=int(rng.integers(-30, 30)))).date().isoformat()
    return Event(
        id=_ids("eve", i),
        scope=SCOPE,
        kind="memory.episode",
        at=at,
        actor="user",
        payload={
            "episode": {
                "episode_id": _ids("ep", i),
                "kind": kind,
                "text": text,
                "at": format_time(at),
                "due": due,
                "event_id": _ids("ev", i),
                "session_id": None,
            }
        },
        provenance={"evidence_id": _ids("ev", i)},
    )


# ---- queries -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    type: str
    text: str


def make_queries(count: int, names: list[str], seed: int) -> list[Query]:
    """A fixed seeded mix of entity / user / keyword queries and the empty-query briefing."""
    rng = np.random.default_rng([SEED, seed])
    weights = entity_weights(len(names))
    counts = [round(count * p) for p in QUERY_MIX]
    counts[0] += count - sum(counts)
    out: list[Query] = []
    for qtype, n in zip(QUERY_TYPES, counts, strict=True):
        for _ in range(n):
            if qtype == "entity":
                e = names[int(rng.choice(len(names), p=weights))]
                text = _pick(
                    rng,
                    (
                        f"where does {e} live?",
                        f"what does {e} do for work?",
                        f"tell me about {e}",
                        f"who is {e}'s partner?",
                        f"does {e} have any pets?",
                        f"what is {e} working on these days?",
                    ),
                )
            elif qtype == "user":
                text = _pick(
                    rng,
                    (
                        "what do I prefer",
                        "where do I live?",
                        "which tools do I use?",
                        "what am I working on?",
                        "what are my deadlines",
                        "what do I enjoy doing on weekends",
                    ),
                )
            elif qtype == "keyword":
                text = _pick(rng, KEYWORD_QUERIES)
            else:
                text = ""
            out.append(Query(qtype, text))
    order = rng.permutation(len(out))
    return [out[i] for i in order]
