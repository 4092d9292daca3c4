"""The guardrails' rules as data: per language, the words each guardrail looks for, and why.

:mod:`veil.memory.guardrails` applies these tables with a few generic functions; nothing in it
names an English word. To add a rule, add its marker to the rule's tuple for its language — a
marker is a fragment of a regular expression, matched case-insensitively between word
boundaries (``promis\\w*`` is "promise", "promised", "promising"). To add a language, give it
a :class:`Language` (its function words make it recognisable) and its markers in each table; a
language with no markers for a rule is recognised but not judged by it (the guardrails that
judge by absence then stand aside, see docs/memory.md, "Guardrails and languages").

Every marker is here because a model got something wrong without it (the English ones were taken
from a real model's recorded output, tests/data/recorded/; the others translate them). Tests in
tests/memory/test_guardrails*.py pin each language's rules with cases that fail without them.

The languages themselves (how a text's language is told) are :mod:`veil.memory.languages`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from veil.memory.languages import words as _words


@dataclass(frozen=True)
class Markers:
    """One rule: why it exists and, per language, what in the evidence it looks for."""

    reason: str
    words: Mapping[str, tuple[str, ...]]
    """Language code → markers (regular-expression fragments, case-insensitive)."""
    common: tuple[str, ...] = ()
    """Markers of every language (an ISO date)."""
    open_ended: bool = False
    """A marker may end inside a word ("as a " before the job's name): no boundary after it."""


@dataclass(frozen=True)
class Reporting:
    """Reported speech in one language: a reporter ("my landlord", "Ana") then a verb."""

    determiners: tuple[str, ...]
    """Words before a reporter's description (case-insensitive; one ending in an apostrophe,
    French l', joins the next word without a space)."""
    verbs: tuple[str, ...]
    """Verbs of saying after the reporter (case-sensitive: they follow it mid-sentence)."""


@dataclass(frozen=True)
class Days:
    """The words that name a day relative to the evidence's own day, in one language."""

    relative: Mapping[str, int]
    """Casefolded word → days after the evidence's day ("tomorrow": 1)."""
    weekdays: tuple[str, str, str, str, str, str, str]
    """Monday first, casefolded."""
    not_days: tuple[str, ...] = field(default=())
    """Phrases that contain a day word but name a time of day ("esta mañana", this morning):
    removed before the day words are read."""


REPORTED_SPEECH_REASON: Final = (
    "Reported speech is the reporter's claim, whatever claimant the model wrote: a fact in "
    "what someone else says is a third-party claim, quarantined."
)
REPORTED_SPEECH: Final[Mapping[str, Reporting]] = {
    "en": Reporting(
        ("my", "our", "the", "a", "an", "his", "her", "their"),
        (
            "says", "said", "claims", "claimed", "told me", "tells me", "thinks", "reckons",
            "insists", "alleges", "swears", "mentioned", "wrote", "reports", "reported",
            "believes", "warned me", "informed me",
        ),
    ),
    "fr": Reporting(
        (
            "mon", "ma", "mes", "notre", "nos", "le", "la", "les", "l'", "l’", "un", "une",
            "son", "sa", "ses", "leur", "leurs", "ton", "ta", "tes", "votre", "vos",
        ),
        (
            "dit", "disait", "a dit", "me dit", "me disait", "m['’]a dit", "prétend",
            "prétendait", "a prétendu", "affirme", "a affirmé", "soutient", "assure",
            "m['’]assure", "a assuré", "pense", "croit", "trouve", "estime", "raconte",
            "m['’]a raconté", "jure", "insiste", "écrit", "a écrit", "m['’]a écrit",
            "mentionne", "a mentionné", "rapporte", "m['’]a prévenu\\w*", "m['’]a informé\\w*",
            "m['’]a averti\\w*",
        ),
    ),
    "de": Reporting(
        (
            "mein", "meine", "meinen", "meinem", "meiner", "unser", "unsere", "unserem",
            "unseren", "der", "die", "das", "den", "dem", "ein", "eine", "einen", "einem",
            "sein", "seine", "ihr", "ihre", "dein", "deine",
        ),
        (
            "sagt", "sagte", "meint", "meinte", "behauptet", "behauptete", "glaubt", "glaubte",
            "denkt", "dachte", "findet", "fand", "erzählt", "erzählte", "schreibt", "schrieb",
            "erwähnt", "erwähnte", "schwört", "versichert", "berichtet", "berichtete",
            "warnt mich", "warnte mich", "hat gesagt", "hat mir gesagt", "hat behauptet",
            "hat geschrieben", "hat erzählt", "hat mir erzählt", "hat erwähnt",
            "hat mich gewarnt",
        ),
    ),
    "es": Reporting(
        (
            "mi", "mis", "nuestro", "nuestra", "nuestros", "nuestras", "el", "la", "los",
            "las", "un", "una", "su", "sus", "tu", "tus",
        ),
        (
            "dice", "decía", "dijo", "ha dicho", "me dice", "me dijo", "me ha dicho", "afirma",
            "afirmó", "asegura", "aseguró", "me asegura", "cree", "creía", "piensa", "opina",
            "insiste", "insistió", "jura", "juró", "cuenta", "contó", "me contó", "comenta",
            "comentó", "mencionó", "ha mencionado", "escribió", "me escribió", "me advirtió",
            "me avisó", "me informó", "sostiene",
        ),
    ),
}  # fmt: skip


# ---- episodes ---------------------------------------------------------------------------------

_WEEKDAYS_EN = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_WEEKDAYS_FR = r"lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche"
_WEEKDAYS_DE = r"montag|dienstag|mittwoch|donnerstag|freitag|samstag|sonntag"
_WEEKDAYS_ES = r"lunes|martes|miércoles|jueves|viernes|sábado|domingo"

EPISODE_KINDS: Final[Mapping[str, Markers]] = {
    "commitment": Markers(
        "A commitment needs something to be done (with a time, to be due); a model gives "
        "every episode a kind and a due date.",
        {
            "en": (
                "will", "'ll", "going to", "gonna", r"promis\w*", r"plan\w* to", "need to",
                "needs to", "have to", "has to", "must", "should", "appointment", "meeting",
                "deadline", "due", "remind me", r"schedul\w*", r"book\w*", r"fly\w*", "flight",
                "trip", r"renew\w*", r"submit\w*", r"send\w*", r"call\w* back", "tomorrow",
                "tonight",
                rf"(?:by|before|on|next) (?:the end|tomorrow|tonight|{_WEEKDAYS_EN}|week|month|"
                r"year|\d)",
            ),
            "fr": (
                "vais", "allons", "vont", "dois", "doit", "devons", "devez", "doivent",
                r"devr\w+", "faut", r"promi\w*", r"promet\w*", r"prévu\w*", r"prévoi\w*",
                "rendez-vous", "rdv", "réunion", "échéance", "date limite", "rappelle-moi",
                r"rappeler?", r"réserv\w*", "vol", "voyage", r"renouvel\w*", r"envoy\w*",
                "enverrai", "rendre", "soumettre", "demain", "ce soir", r"\w{2,}erai",
                r"\w{2,}irai", "ferai", "serai", "aurai",
                rf"(?:d['’]ici|avant|pour|jusqu['’]à) (?:demain|ce soir|{_WEEKDAYS_FR}|la fin|\d)",
                r"(?:la semaine|le mois|l['’]année) prochaine?",
            ),
            "de": (
                "werde", "wirst", "wird", "werden", "muss", "müssen", "musst", "sollte",
                "soll", "sollen", r"versproch\w*", "verspreche", r"plan\w*", r"vorhab\w*",
                r"\w*termin\w*", "treffen", "besprechung", "frist", "deadline", "fällig",
                r"erinner\w* mich", r"buch\w*", "flug", "fliege", "reise", r"erneuer\w*",
                r"einreich\w*", r"schick\w*", r"send\w*", "zurückrufen", "morgen",
                "übermorgen", "heute abend",
                rf"bis (?:morgen|{_WEEKDAYS_DE}|ende|nächste\w*|\d)",
                r"nächste\w* (?:woche|monat|jahr)",
            ),
            "es": (
                "voy a", "vas a", "va a", "vamos a", "van a", "tengo que", "tiene que",
                "hay que", "debo", "debe", "debería", "necesito", r"promet\w*", r"prometí",
                r"plane\w*", "cita", "reunión", "plazo", "fecha límite", "recuérdame",
                r"reserv\w*", "vuelo", "viaje", r"renov\w*", r"envi\w*", "mandar", "entregar",
                r"llamar\w*", "mañana", "esta noche", r"\w{2,}aré", r"\w{2,}eré", r"\w{2,}iré",
                rf"(?:antes del?|para el|hasta el|el próximo|el) (?:{_WEEKDAYS_ES}|fin|\d)",
                r"(?:la )?próxima semana", r"(?:el )?próximo (?:mes|año)",
            ),
        },
    ),
    "failure": Markers(
        "A failure needs something that failed.",
        {
            "en": (
                r"fail\w*", r"error\w*", r"broke\w*", "broken", r"crash\w*", "didn'?t work",
                "doesn'?t work", "does not work", "did not work", "couldn'?t", "can'?t",
                "cannot", r"bug\w*", "exception", "timeout", "timed out", "lost", "missed",
                "wrong", r"problem\w*", r"issue\w*", r"regress\w*", r"flak\w*",
            ),
            "fr": (
                r"échou\w*", r"échec\w*", r"erreur\w*", r"planté\w*", r"cass\w*",
                "(?:marche|marchait|fonctionne|fonctionnait) (?:pas|plus)",
                "n['’]a pas (?:marché|fonctionné)", "impossible", r"bug\w*", r"bogue\w*",
                "exception", "timeout", "délai dépassé", r"perdu\w*", r"raté\w*",
                r"manqué\w*", r"problème\w*", r"souci\w*", r"régress\w*", "panne",
                r"crash\w*",
            ),
            "de": (
                "fehlgeschlagen", "schlägt fehl", "schlug fehl", r"scheiter\w*", "gescheitert",
                r"\w*fehler\w*", r"kaputt\w*", "abgestürzt", "stürzt ab", r"absturz\w*",
                "funktioniert nicht", "funktionierte nicht", "nicht funktioniert",
                "geht nicht", "ging nicht", "klappt nicht", "hat nicht geklappt", "kann nicht",
                "konnte nicht", r"bug\w*", "ausnahme", "exception", "timeout",
                "zeitüberschreitung", "verloren", "verpasst", "falsch", r"problem\w*",
                "regression", "flaky", "defekt",
            ),
            "es": (
                r"fall(?:ó|a|an|aba|aron|ido|ida|o)", r"error\w*", "roto", "rota",
                r"rompi\w*", r"colg\w*", "no funciona", "no funcionó", "no funcionaba",
                "no pude", "no puedo", "no se puede", r"bug\w*", "excepción", "timeout",
                "tiempo de espera", "perdí", "perdido", "perdió", r"fracas\w*",
                r"problema\w*", "incorrecto", "regresión",
            ),
        },
    ),
    "fix": Markers(
        "A fix needs something fixed.",
        {
            "en": (
                r"fix\w*", r"solv\w*", r"resolv\w*", "works now", "working now", "work now",
                r"patch\w*", "workaround", r"repair\w*", "retry", "retries", "corrected",
            ),
            "fr": (
                r"corrig\w*", r"répar\w*", r"résolu\w*", r"résou\w*", r"réglé\w*", "régler",
                "(?:fonctionne|marche) (?:maintenant|enfin|de nouveau)", "contournement",
                r"patch\w*", "correctif", r"réessay\w*", "relancé",
            ),
            "de": (
                "behoben", r"beheb\w*", "repariert", r"reparier\w*", "gelöst", r"lös\w*",
                "gefixt", r"fix\w*", "korrigiert",
                "(?:funktioniert|geht|klappt) (?:jetzt|wieder)", "workaround", r"patch\w*",
                "erneut versucht",
            ),
            "es": (
                r"arregl\w*", r"corregi\w*", r"correg\w*", r"solucion\w*", r"resol\w*",
                r"resuel\w*", r"repar\w*", "funciona ahora", "ya funciona", r"parche\w*",
                r"reintent\w*",
            ),
        },
    ),
    "outcome": Markers(
        "An outcome needs a result.",
        {
            "en": (
                r"pass\w*", r"succeed\w*", r"success\w*", r"result\w*", "won", r"finish\w*",
                r"complet\w*", r"ship\w*", r"launch\w*", r"accept\w*", r"reject\w*", "got",
                "turned out", "ended up", "outcome",
            ),
            "fr": (
                r"réussi\w*", "succès", r"résultat\w*", "gagné", r"fini\w*", r"terminé\w*",
                r"complété\w*", r"livré\w*", r"lancé\w*", r"accepté\w*", r"refusé\w*",
                r"rejeté\w*", "obtenu", "eu", "s['’]est avéré", "finalement",
            ),
            "de": (
                "bestanden", r"erfolg\w*", r"ergebnis\w*", "gewonnen", "fertig",
                "abgeschlossen", "beendet", "ausgeliefert", "veröffentlicht", "gestartet",
                "angenommen", "abgelehnt", "bekommen", "erhalten", "stellte sich heraus",
                "am ende", "geschafft",
            ),
            "es": (
                r"aprob\w*", "éxito", r"exitos\w*", r"resultado\w*", "gané", "ganó",
                "ganamos", r"termin\w*", r"acab\w*", r"complet\w*", r"lanz\w*", r"acept\w*",
                r"rechaz\w*", r"consegu\w*", "obtuve", "al final",
            ),
        },
    ),
}  # fmt: skip
"""Episode kind → what its evidence must say. A kind the evidence lacks becomes another that
fits (the first of ``fix``, ``failure``, ``commitment``, ``outcome``) or ``interaction``."""

NAMES_A_TIME: Final = Markers(
    "'due' belongs to commitments whose evidence states or implies a time: 'I moved to Porto "
    "last week' is not 'due soon'.",
    {
        "en": (
            r"\d{1,2}(?::\d{2})?\s?(?:am|pm)", "today", "tonight", "tomorrow", _WEEKDAYS_EN,
            "weekend", "next (?:week|month|year)", "this (?:week|month|year)",
            r"in \w+ (?:days?|weeks?|months?)",
            "january|february|march|april|may|june|july|august|september|october|november|"
            "december",
            "deadline", "end of (?:the )?(?:day|week|month)",
        ),
        "fr": (
            r"\d{1,2}\s?h(?:\s?\d{2})?", r"\d{1,2}:\d{2}", "aujourd['’]hui", "ce soir",
            "demain", "après-demain", _WEEKDAYS_FR, "week-end", "weekend",
            "(?:la semaine|le mois|l['’]année) prochaine?",
            "cette (?:semaine|année)", "ce mois-ci", r"dans \w+ (?:jours?|semaines?|mois)",
            "janvier|février|mars|avril|mai|juin|juillet|août|septembre|octobre|novembre|"
            "décembre",
            "échéance", "date limite", "fin (?:de la|du) (?:journée|semaine|mois)",
        ),
        "de": (
            r"\d{1,2}(?::\d{2})?\s?uhr", r"\d{1,2}:\d{2}", "heute", "heute abend", "morgen",
            "übermorgen", _WEEKDAYS_DE, "wochenende", r"nächste\w* (?:woche|monat|jahr)",
            r"diese\w* (?:woche|monat|jahr)",
            r"in \w+ (?:tag|tagen|woche|wochen|monat|monaten)",
            "januar|februar|märz|april|mai|juni|juli|august|september|oktober|november|"
            "dezember",
            "frist", "deadline", "ende (?:der|des) (?:woche|monats|tages)",
        ),
        "es": (
            r"a las \d{1,2}", r"\d{1,2}:\d{2}", "hoy", "esta noche", "mañana",
            "pasado mañana", _WEEKDAYS_ES, "fin de semana", "(?:la )?próxima semana",
            "(?:el )?próximo (?:mes|año)", "(?:la semana|el mes) que viene",
            "est[ae] (?:semana|mes|año)", r"en \w+ (?:días?|semanas?|meses?)",
            "enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|octubre|noviembre|"
            "diciembre",
            "plazo", "fecha límite", "fin de (?:mes|semana|día)",
        ),
    },
    common=(r"\d{4}-\d{2}-\d{2}",),
)  # fmt: skip

DAYS: Final[Mapping[str, Days]] = {
    "en": Days(
        {"today": 0, "tonight": 0, "tomorrow": 1},
        ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    ),
    "fr": Days(
        {"aujourd'hui": 0, "aujourd’hui": 0, "ce soir": 0, "après-demain": 2, "demain": 1},
        ("lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"),
    ),
    "de": Days(
        {"heute": 0, "übermorgen": 2, "morgen": 1},
        ("montag", "dienstag", "mittwoch", "donnerstag", "freitag", "samstag", "sonntag"),
        not_days=("heute morgen", "guten morgen", "jeden morgen", "am morgen"),
    ),
    "es": Days(
        {"hoy": 0, "esta noche": 0, "pasado mañana": 2, "mañana": 1},
        ("lunes", "martes", "miércoles", "jueves", "viernes", "sábado", "domingo"),
        not_days=(
            "toda la mañana",
            "cada mañana",
            "esta mañana",
            "por la mañana",
            "de la mañana",
            "la mañana",
        ),
    ),
}
"""What "tomorrow" or "Friday" means, counted from the evidence's own day: a due date the model
computed is corrected to it (the model's arithmetic is not trusted)."""


# ---- relations --------------------------------------------------------------------------------

RELATIONS: Final[Mapping[str, Markers]] = {
    "works_as": Markers(
        "A job needs evidence that speaks of work: 'I have a dentist appointment' is not "
        "works_as dentist.",
        {
            "en": (
                r"work\w*", r"job\w*", r"employ\w*", r"profession\w*", "career", "hired",
                r"promot\w*", "quit", r"retir\w*", "occupation", "role", "position", "title",
                "i'?m an? ", "(?:am|is|are|was|'s|'re) an? ", "became", "become", "as an? ",
            ),
            "fr": (
                r"travail\w*", r"travaill\w*", "boulot", r"emploi\w*", r"employé\w*",
                "métier", r"profession\w*", "carrière", r"embauch\w*", r"promu\w*",
                "promotion", r"démission\w*", "retraite", "poste", "rôle", "fonction",
                "(?:suis|es|est|sommes|sont|étais|était) (?:une? )?", r"devenu\w*", "devenir",
                "comme ", "en tant que ",
            ),
            "de": (
                r"arbeit\w*", r"job\w*", r"beruf\w*", "stelle", "angestellt", "beschäftigt",
                "karriere", "eingestellt", "befördert", "beförderung", "gekündigt",
                r"kündig\w*", "rente", "ruhestand", r"pension\w*", "rolle", "position",
                "titel", "(?:bin|bist|ist|sind|war) (?:eine? )?", "wurde", "geworden",
                "werden", "als ",
            ),
            "es": (
                r"trabaj\w*", r"emple\w*", r"profesi\w*", "carrera", r"contrat\w*",
                r"ascend\w*", "ascenso", r"renunci\w*", r"dimit\w*", r"jubil\w*", r"retir\w*",
                "puesto", "cargo", "rol", "(?:soy|eres|es|somos|son|era) (?:una? )?",
                "me hice", "se hizo", "como ",
            ),
        },
        open_ended=True,
    ),
    "uses_tool": Markers(
        "A tool needs evidence that speaks of using something (or a value that is a known "
        "tool).",
        {
            "en": (
                "us(?:e|es|ed|ing)", r"switch\w*", r"start\w*", r"stop\w*", r"avoid\w*",
                r"install\w*", r"tool\w*", "editor", "formatter", "linter", "laptop", "phone",
                "computer", r"app\w*", "language", r"prefer\w*", r"run\w*", r"work\w* with",
                r"play\w*", r"replac\w*", "mode", "back to", "moved to", "write", "code",
            ),
            "fr": (
                r"utilis\w*", "emploie", "sers de", r"pass\w* (?:à|a|sur|sous)",
                r"chang\w*", r"commenc\w*", r"arrêt\w*", r"évit\w*", r"install\w*",
                r"outil\w*", "éditeur", "formateur", "linter", "portable", "ordinateur",
                "ordi", "téléphone", r"appli\w*", r"app\w*", "langage", r"préf\w*",
                r"lanc\w*", r"exécut\w*", r"travaill\w* (?:avec|sous|sur)", r"jou\w*",
                r"remplac\w*", "mode", r"revenu\w* à", "retour à", r"écri\w*", r"code\w*",
                r"programm\w*",
            ),
            "de": (
                r"benutz\w*", r"nutz\w*", r"verwend\w*", r"gebrauch\w*", r"wechsel\w*",
                "gewechselt", "umgestiegen", r"steig\w* .{0,20}um", r"start\w*", "angefangen",
                "aufgehört", r"vermeide\w*", r"meide\w*", r"installier\w*", r"werkzeug\w*",
                r"tool\w*", "editor", "formatter", "linter", "laptop", "handy", "telefon",
                "computer", "rechner", r"app\w*", "sprache", r"bevorzug\w*", "lieber",
                r"lauf\w*", r"arbeite\w* mit", r"spiel\w*", r"ersetz\w*", "modus",
                "zurück zu", r"schreib\w*", "code", r"programmier\w*",
            ),
            "es": (
                r"us(?:o|as|a|amos|an|é|ó|ar|ando|ado)", r"utiliz\w*", r"cambi\w*",
                r"pas\w* a", r"empez\w*", r"empiez\w*", r"comenc\w*", r"dej\w* de",
                r"evit\w*", r"instal\w*", r"herramienta\w*", "editor", "formateador",
                "linter", "portátil", "laptop", "móvil", "teléfono", "ordenador",
                "computadora", r"app\w*", r"aplicaci\w*", "lenguaje", r"prefier\w*",
                r"prefer\w*", r"ejecut\w*", r"trabaj\w* con", r"jueg\w*", r"jug\w*",
                r"reemplaz\w*", r"sustitu\w*", "modo", "volví a", "volver a", r"escrib\w*",
                r"códig\w*", r"program\w*",
            ),
        },
    ),
}  # fmt: skip
"""Relation → what its evidence must speak of; ``avoids_tool`` reads as ``uses_tool``."""
RELATIONS_ALIASES: Final[Mapping[str, str]] = {"avoids_tool": "uses_tool"}

TRANSIENT_PLACE: Final = Markers(
    "A place where the person is for now ('I'm at the airport') sits beside where they live "
    "instead of superseding it.",
    {
        "en": (
            "i'?m at", "i am at", "i'?m in", "currently (?:at|in)", "right now",
            "at the moment", "waiting", "on my way", "this (?:week|weekend)",
            "for the (?:day|week|weekend)", "visiting",
        ),
        "fr": (
            "je suis (?:à|au|en|chez)", "actuellement", "en ce moment", "pour l['’]instant",
            "pour le moment", "en train de", "j['’]attends", "en attendant", "en route",
            "en chemin", "cette semaine", "ce week-end", "pour la (?:journée|semaine)",
            "pour le week-end", "de passage", "en visite",
        ),
        "de": (
            "bin (?:gerade |jetzt )?(?:in|im|am|an|auf|bei|zu)", "gerade", "momentan",
            "im moment", "zurzeit", "derzeit", r"warte\w*", "unterwegs", "auf dem weg",
            "diese woche", "dieses wochenende", "für den tag", "für die woche",
            "übers wochenende", "zu besuch",
        ),
        "es": (
            "estoy en", "ahora mismo", "en este momento", "actualmente", "por ahora",
            "esperando", "de camino", "en camino", "esta semana", "este fin de semana",
            "por el día", "de visita", "visitando",
        ),
    },
)  # fmt: skip

AVOIDING: Final = Markers(
    "'I avoid Docker' is avoids_tool, whatever the model wrote.",
    {
        "en": (
            r"avoid\w*", r"stop\w* using", "stopped", "quit", "don'?t use", "do not use",
            "no longer use", "gave up", "dropped", "hate", "dislike",
        ),
        "fr": (
            r"évit\w*", r"arrêt\w* d['’]utiliser", "arrêté", "n['’]utilise (?:plus|pas)",
            "abandonné", "laissé tomber", "lâché", "déteste", "n['’]aime pas",
        ),
        "de": (
            r"vermeide\w*", r"meide\w*", "aufgehört", "nicht mehr", r"benutze kein\w*",
            r"nutze kein\w*", r"verzichte\w*", "aufgegeben", "hasse", r"mag kein\w*",
            "mag nicht",
        ),
        "es": (
            r"evit\w*", r"dej\w* de usar", "ya no uso", "no uso", r"abandon\w*", "odio",
            "no me gusta", "detesto",
        ),
    },
)  # fmt: skip

USING: Final = Markers(
    "'I started using Docker again' is uses_tool, whatever the model wrote.",
    {
        "en": (
            r"start\w* using", "us(?:e|es|ing) .{0,20}again", "went back to",
            r"switch\w* (?:back )?to", "moved to", r"adopt\w*", "picked up",
        ),
        "fr": (
            r"commenc\w* à utiliser", r"me suis mis\w* à", "utilise .{0,20}(?:de|à) nouveau",
            r"réutilis\w*", r"revenu\w* à", "retour à", r"pass\w* (?:à|sur)", r"adopt\w*",
            "repris",
        ),
        "de": (
            "angefangen", r"(?:be)?nutze .{0,20}wieder", "zurück zu", "zurückgekehrt",
            "gewechselt zu", "wechsle zu", "umgestiegen auf", r"steige .{0,20}um auf",
            r"übernomm\w*",
        ),
        "es": (
            r"empe[zc]\w* a usar", r"comenc\w* a usar", "vuelvo a usar", "volví a",
            "de nuevo", "otra vez", r"cambi\w* a", "me pasé a", r"adopt\w*", r"retom\w*",
        ),
    },
)  # fmt: skip


# ---- names of tools ---------------------------------------------------------------------------

TOOLS: Final = _words(
    "vim neovim nvim emacs vscode code sublime atom nano helix zed intellij pycharm "
    "webstorm goland clion rider xcode eclipse git github gitlab docker podman kubernetes "
    "kubectl terraform ansible pytest unittest tox nox npm yarn pnpm ruff black flake8 mypy "
    "pyright jest vitest cargo rustc make cmake bazel gradle maven postgres postgresql "
    "mysql sqlite redis mongodb zsh bash fish tmux slack jira notion figma chrome firefox "
    "safari linux macos windows ubuntu python javascript typescript java golang rust ruby "
    "php sql excel"
)
"""Names that are tools, editors or languages (in any language): a value of ``works_as`` that
is one of these is a tool the person uses, not their job."""


# ---- English grammar, for statements written in the first person -----------------------------

ADVERBS: Final = _words(
    "also really just now still never always often usually sometimes actually currently "
    "recently finally mostly already even only longer honestly"
)
MODALS: Final = _words("will would can could should must may might shall")
PAST: Final = _words(
    "went was were had did got made said saw took came knew thought told found gave left felt "
    "kept began ran wrote bought brought sold paid met sent spent built lost won quit put set "
    "read hit cut let became chose drove flew forgot grew heard held led meant rode sat slept "
    "spoke stood taught threw understood woke wore"
)
IRREGULAR: Final[Mapping[str, str]] = {
    "am": "is", "have": "has", "do": "does", "go": "goes", "was": "was", "be": "is",
}  # fmt: skip
"""English only: "I live" → "the user lives" needs a conjugation; a statement in another
language is left as the model wrote it."""
