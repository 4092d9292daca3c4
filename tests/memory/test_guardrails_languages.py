"""The guardrails in French, German and Spanish, and what they do with languages they cannot read.

The rules are data (:mod:`veil.memory.guardrail_rules`); each case here fails when its
language's rule is taken out of the table. The English cases are in ``test_guardrails.py``."""

from __future__ import annotations

import re
from datetime import date

import pytest

from veil.memory import guardrail_rules as rules
from veil.memory import languages
from veil.memory.extraction import EpisodeItem, FactItem
from veil.memory.guardrails import (
    checked_episode,
    identify,
    object_grounded,
    polarity,
    reported_by,
    resolve_due,
    third_person,
    transient_place,
    unsupported_relation,
    vet,
)

MONDAY = date(2024, 5, 6)


def fact(relation: str, obj: str, statement: str = "", *, claimant: str = "user") -> FactItem:
    return FactItem("user", relation, obj, statement, None, claimant, None)


# ---- which rules read a text ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "languages"),
    [
        ("Mon propriétaire dit que je lui dois 500 euros.", ("fr", "en")),
        ("Je suis infirmière à Lyon.", ("fr", "en")),
        ("Mein Vermieter sagt, ich schulde ihm 500 Euro.", ("de", "en")),
        ("Ich bin Krankenschwester.", ("de", "en")),
        ("Mi casero dice que le debo 500 dólares.", ("es", "en")),
        ("Soy enfermera.", ("es", "en")),
        ("Da gennaio lavoro come infermiera in un ospedale di Milano.", ("it", "en")),
        # English stays English, foreign names and words in it included:
        ("My landlord says I owe him $500.", ("en",)),
        ("I love La Casa de Papel.", ("en",)),
        ("I met Jean-Luc at the café de Flore.", ("en",)),
        ("See ya! Let's plan something.", ("en",)),
        ("I will die on that hill.", ("en",)),
        ("Dentist appointment on Friday at 3pm.", ("en",)),
        # No rule reads another script:
        ("私は看護師です。", ()),
        ("Я работаю медсестрой.", ()),
    ],
)
def test_a_text_is_read_by_its_languages_rules(text: str, languages: tuple[str, ...]) -> None:
    assert identify(text) == languages


# ---- reported speech: third-party claims ------------------------------------------------------


@pytest.mark.parametrize(
    ("evidence", "value", "reporter"),
    [
        ("Mon propriétaire dit que je lui dois 500 euros.", "500 euros", "propriétaire"),
        (
            "Ma mère prétend que j'étais allergique aux fruits de mer.",
            "allergique aux fruits de mer",
            "mère",
        ),
        ("L'avocat de mon frère m'a dit que je devais signer.", "signer", "avocat de mon frère"),
        ("Claire affirme que je ne l'appelle jamais.", "appelle jamais", "claire"),
        ("J'habite à Lyon.", "Lyon", None),
        ("Mein Vermieter sagt, ich schulde ihm 500 Euro.", "500 Euro", "vermieter"),
        ("Meine Mutter behauptet, ich sei als Kind allergisch gewesen.", "allergisch", "mutter"),
        ("Der Tierarzt meint, Bello ist zu dick.", "zu dick", "tierarzt"),
        ("Ich wohne in Berlin.", "Berlin", None),
        ("Mi casero dice que le debo 500 dólares.", "500 dólares", "casero"),
        (
            "Mi jefa Lucía dice que me van a ascender a jefa de equipo.",
            "jefa de equipo",
            "jefa lucía",
        ),
        ("Mi madre me dijo que de niño era alérgico al marisco.", "alérgico al marisco", "madre"),
        ("Vivo en Madrid desde enero.", "Madrid", None),
    ],
)
def test_reported_speech_names_its_reporter(
    evidence: str, value: str, reporter: str | None
) -> None:
    assert reported_by(evidence, value) == reporter


@pytest.mark.parametrize(
    ("evidence", "value", "reporter"),
    [
        ("Mon propriétaire dit que je lui dois 500 euros.", "500 euros", "propriétaire"),
        ("Mein Vermieter sagt, ich schulde ihm 500 Euro.", "500 Euro", "vermieter"),
        ("Mi casero dice que le debo 500 dólares.", "500 dólares", "casero"),
    ],
)
def test_a_first_hand_label_on_reported_speech_becomes_a_claim(
    evidence: str, value: str, reporter: str
) -> None:
    """What the 1.5B model did in English ("My landlord says I owe him $500" labelled as the
    user's own fact), in each language."""
    vetted = vet([fact("owes", value)], [], evidence=evidence)
    assert vetted.facts[0].claimant == reporter
    assert any("third-party claim" in n for n in vetted.notes)


# ---- relations --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("evidence", "value"),
    [
        ("J'ai rendez-vous chez le dentiste vendredi à 15h.", "dentiste"),
        ("Ich habe am Freitag einen Termin beim Zahnarzt.", "Zahnarzt"),
        ("Tengo cita con el dentista el viernes.", "dentista"),
    ],
)
def test_an_appointment_is_not_a_job_nor_a_tool(evidence: str, value: str) -> None:
    """The 1.5B model answered "I have a dentist appointment on Friday" with ``works_as``."""
    vetted = vet([fact("works_as", value), fact("uses_tool", value)], [], evidence=evidence)
    assert vetted.facts == ()
    assert all("says nothing of that kind" in i.reason for i in vetted.invalid)


@pytest.mark.parametrize(
    ("evidence", "value"),
    [
        ("Je travaille comme infirmière à Lyon.", "infirmière"),
        ("Je suis infirmière.", "infirmière"),
        ("Ich arbeite als Datenanalystin bei einer Bank.", "Datenanalystin"),
        ("Ich bin Krankenschwester.", "Krankenschwester"),
        ("Trabajo como analista de datos.", "analista de datos"),
        ("Soy enfermera.", "enfermera"),
    ],
)
def test_a_job_said_in_another_language_is_kept(evidence: str, value: str) -> None:
    assert unsupported_relation("works_as", value, evidence) is None


@pytest.mark.parametrize(
    ("evidence", "value", "want"),
    [
        ("J'évite Docker sur mon portable, il vide la batterie.", "Docker", "avoids_tool"),
        ("Ich benutze Docker nicht mehr, es ist zu langsam.", "Docker", "avoids_tool"),
        ("Evito Docker en mi portátil porque agota la batería.", "Docker", "avoids_tool"),
    ],
)
def test_avoiding_is_not_using(evidence: str, value: str, want: str) -> None:
    assert polarity("uses_tool", value, evidence)[0] == want


@pytest.mark.parametrize(
    ("evidence", "value", "want"),
    [
        ("Je suis revenu à vim, emacs était trop lent.", "vim", "uses_tool"),
        ("Ich nutze vim wieder, emacs war zu langsam.", "vim", "uses_tool"),
        ("Volví a usar vim porque emacs era demasiado lento en mi portátil.", "vim", "uses_tool"),
    ],
)
def test_using_again_is_not_avoiding(evidence: str, value: str, want: str) -> None:
    assert polarity("avoids_tool", value, evidence)[0] == want


@pytest.mark.parametrize(
    "evidence",
    [
        "Je suis à l'aéroport, j'attends mon vol.",
        "Ich bin gerade am Flughafen und warte auf meinen Flug.",
        "Estoy en el aeropuerto esperando mi vuelo.",
    ],
)
def test_where_the_person_is_for_now_is_transient(evidence: str) -> None:
    assert transient_place("located_at", evidence)


# ---- episodes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "due", "evidence", "want_kind", "want_due"),
    [
        # A kind the evidence does not support, a due date on something done:
        ("commitment", "2024-05-09", "J'ai déménagé à Porto la semaine dernière.", "interaction",
         None),
        ("failure", None, "Ich bin letzte Woche nach Porto gezogen.", "interaction", None),
        ("commitment", "2024-05-09", "Me mudé a Oporto la semana pasada.", "interaction", None),
        # A kind that does not fit, replaced by the one that does:
        ("outcome", None, "J'ai corrigé le test instable en ajoutant une relance.", "fix", None),
        ("outcome", None, "Der Build ist wieder fehlgeschlagen.", "failure", None),
        ("outcome", None, "Le déploiement a échoué hier soir.", "failure", None),
        ("outcome", None, "El despliegue falló anoche.", "failure", None),
        ("outcome", None, "Ich habe den Fehler im Test behoben.", "fix", None),
        ("outcome", None, "Arreglé el test inestable añadiendo un reintento.", "fix", None),
        ("failure", None, "Al final aprobé el examen de conducir.", "outcome", None),
        ("interaction", "2024-05-09", "Prometí enviar el informe mañana.", "commitment",
         "2024-05-07"),
        ("interaction", "2024-05-09", "J'ai promis d'envoyer le rapport demain.", "commitment",
         "2024-05-07"),
        ("interaction", "2024-05-09", "Ich muss morgen den Bericht abschicken.", "commitment",
         "2024-05-07"),
        # A due date on a commitment that names no time:
        ("commitment", "2024-05-09", "Je dois appeler Anne pour son anniversaire.",
         "commitment", None),
        ("commitment", "2024-05-09", "Ich muss Anna anrufen.", "commitment", None),
        ("commitment", "2024-05-09", "Tengo que llamar a Ana.", "commitment", None),
        # The date the evidence names, counted from its own day (a Monday):
        ("commitment", "2024-05-09", "Je passe chez le dentiste demain à 15h.", "commitment",
         "2024-05-07"),
        ("commitment", "2024-05-07", "Ich habe übermorgen einen Zahnarzttermin.", "commitment",
         "2024-05-08"),
        ("commitment", "2024-05-07", "Tengo cita con el dentista el viernes por la mañana.",
         "commitment", "2024-05-10"),
    ],
)  # fmt: skip
def test_episode_kinds_and_due_dates_follow_the_evidence(
    kind: str, due: str | None, evidence: str, want_kind: str, want_due: str | None
) -> None:
    item = EpisodeItem(kind, "x", due)  # type: ignore[arg-type]
    checked, _ = checked_episode(item, evidence, MONDAY)
    assert (checked.kind, checked.due) == (want_kind, want_due)


@pytest.mark.parametrize(
    ("evidence", "due"),
    [
        ("Aujourd'hui j'ai promis d'envoyer le rapport.", "2024-05-06"),
        ("J'envoie le rapport après-demain.", "2024-05-08"),
        ("Heute Morgen habe ich versprochen, den Bericht zu schicken.", None),  # this morning
        ("Esta mañana prometí enviar el informe.", None),  # this morning, not tomorrow
        ("Mañana por la mañana envío el informe.", "2024-05-07"),
    ],
)
def test_days_named_in_the_evidence(evidence: str, due: str | None) -> None:
    assert resolve_due(evidence, MONDAY) == due


# ---- grounding and statements -----------------------------------------------------------------


def test_function_words_do_not_ground_a_value() -> None:
    assert not object_grounded("des chats", "J'ai des chiens.")
    assert object_grounded("des chiens", "J'ai des chiens.")
    assert object_grounded("Zürich", "Ich wohne seit Mai in Zürich.")
    assert not object_grounded("Genf", "Ich wohne seit Mai in Zürich.")


@pytest.mark.parametrize(
    "text",
    [
        "Mon propriétaire me dit que je lui dois 500 euros.",
        "Mi madre me dijo que de niño era alérgico al marisco.",
        "Ich habe einen Hund.",
    ],
)
def test_a_statement_in_another_language_is_left_as_written(text: str) -> None:
    """The third person is English grammar: "me" in French is not "the user"."""
    assert third_person(text) == text


# ---- what no rule can read --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("evidence", "value"),
    [
        ("私は看護師として働いています。", "看護師"),
        ("Я работаю медсестрой в больнице.", "медсестра"),
        ("Da gennaio lavoro come infermiera in un ospedale di Milano.", "infermiera"),
    ],
)
def test_a_language_without_rules_is_not_judged_by_their_absence(evidence: str, value: str) -> None:
    """Rules that judge by absence (a job needs words of work) stand aside: a fact they cannot
    read is kept, not dropped."""
    vetted = vet(
        [fact("works_as", value)],
        [EpisodeItem("failure", evidence, None)],
        evidence=evidence,
    )
    assert [f.relation for f in vetted.facts] == ["works_as"]
    assert [e.kind for e in vetted.episodes] == ["failure"]


# ---- the table itself -------------------------------------------------------------------------

COVERED = tuple(rules.REPORTED_SPEECH)
TABLES = {
    **{f"episode kind {k}": m for k, m in rules.EPISODE_KINDS.items()},
    **{f"relation {r}": m for r, m in rules.RELATIONS.items()},
    "names a time": rules.NAMES_A_TIME,
    "transient place": rules.TRANSIENT_PLACE,
    "avoiding": rules.AVOIDING,
    "using": rules.USING,
}


def test_every_covered_language_has_every_rule() -> None:
    assert COVERED == ("en", "fr", "de", "es")
    assert set(rules.DAYS) == set(COVERED)
    for name, markers in TABLES.items():
        assert markers.reason.strip(), name
        assert set(markers.words) == set(COVERED), name
    for code, language in languages.LANGUAGES.items():
        words = language.function_words | language.frequent_words
        assert all(w == w.casefold() for w in words), code
        assert all(w.casefold() == w for w in language.self_words), code


def test_every_marker_is_a_pattern() -> None:
    for name, markers in TABLES.items():
        for code, words in markers.words.items():
            for word in (*markers.common, *words):
                assert re.compile(word, re.I), (name, code, word)
