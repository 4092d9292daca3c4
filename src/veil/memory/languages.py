"""The languages the guardrails know (:mod:`veil.memory.guardrail_rules`): per language, the
function words that recognise it, its alphabet, the words that start a clause and what the user
may be called. A language here with no markers in a rule table is recognised but not judged by
that rule (docs/memory.md, "Guardrails and languages").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True)
class Language:
    """What tells a text's language, and what its words are made of."""

    name: str
    function_words: frozenset[str]
    """Grammatical words, casefolded: they carry no meaning for grounding (dropped from a
    text's content words) and they tell which language a text is in."""
    frequent_words: frozenset[str] = frozenset()
    """More words that tell the language, kept as content words."""
    capitals: str = "A-ZÀ-ÖØ-Þ"
    """The alphabet's capital letters, as a regular-expression class's ranges (names)."""
    small: str = "a-zß-öø-ÿœ"
    """Its small letters (words of a reporter's description)."""
    clause_breaks: tuple[str, ...] = ()
    """Words that start another clause: polarity reads the clause that names the tool."""
    self_words: frozenset[str] = frozenset()
    """What the person whose memory it is may be called: never a reporter."""


ENGLISH: Final = "en"
"""The language every Latin-script text is also read in (the default)."""

LANGUAGES: Final[Mapping[str, Language]] = {
    "en": Language(
        "English",
        words(
            "a an the of to in on at for from by with and or but not no is are was were be "
            "been am my our your his her their its i me we you he she they it this that these "
            "those there user users very really just also now then than as into onto out up "
            "down off over about after before again new old some any all one more most"
        ),
        frequent_words=words(
            "will would can could should have has had do does did what when where how why who "
            "so if yes yeah got get like don didn doesn isn wasn im ive s m d t ll ve re um uh "
            "oh ok okay hey hi wow"
        ),
        capitals="A-Z",
        small="a-z",
        clause_breaks=("but", "and"),
        self_words=words("i user"),
    ),
    "fr": Language(
        "French",
        words(
            "le la les l un une des du de d et est sont a as ai avons avez ont été était "
            "étais dans en avec sur sous chez sans pour par mon ma mes ton ta tes son sa ses "
            "notre nos votre vos leur leurs je tu il elle on nous vous ils elles me m te se s "
            "lui y que qu qui quoi pas ne n au aux ce cet cette ces ça mais ou où donc très "
            "aussi suis es toujours jamais parce quand comme"
        ),
        frequent_words=words(
            "aujourd hui hier demain après avant bien fait faire être avoir vais va peu tout "
            "tous toute rien"
        ),
        clause_breaks=("mais", "et"),
        self_words=words("je utilisateur"),
    ),
    "de": Language(
        "German",
        words(
            "der die das den dem des ein eine einen einem einer eines und ist sind war waren "
            "bin bist hat habe hast haben ich du er sie es wir ihr mein meine meinen meinem "
            "meiner dein deine unser unsere sein seine ihre ihren nicht kein keine mit auf für "
            "von zu zum zur im in an am um aus bei nach über unter aber oder auch also noch "
            "schon sehr dass wie wenn weil mich mir dich dir uns euch was wer wo jetzt so als"
        ),
        frequent_words=words("heute morgen gestern wieder immer nie"),
        clause_breaks=("aber", "und"),
        self_words=words("ich nutzer benutzer"),
    ),
    "es": Language(
        "Spanish",
        words(
            "a el la los las lo un una unos unas del al de y e o u en que es son está están "
            "estoy estás soy eres era fue por para con sin mi mis tu tus su sus nuestro "
            "nuestra yo él ella nosotros ellos ellas me te se le les nos pero muy más también "
            "no ha he han tengo tiene como cuando donde porque sobre hasta desde"
        ),
        frequent_words=words("hoy ayer vez otra otro"),
        clause_breaks=("pero", "y"),
        self_words=words("yo usuario"),
    ),
    # Recognised, no rules yet: the guardrails that judge by absence stand aside for them.
    "it": Language(
        "Italian",
        words(
            "il la gli le un una di del della dei delle da dal dalla e è che non sono "
            "siamo ho hai ha abbiamo mio mia miei mie anche più molto questo questa quello "
            "quella ci si ti io tu lui lei noi voi loro"
        ),
    ),
    "pt": Language(
        "Portuguese",
        words(
            "o a os as uma de do da dos das no na nos nas que é são está estou por para com "
            "não eu meu minha meus minhas seu sua mas muito mais também já tenho tem ele ela "
            "nós eles elas você isso este esta"
        ),
    ),
    "nl": Language(
        "Dutch",
        words(
            "de het een en ik je jij niet dat is te voor mijn maar ook zijn was aan bij nog wel "
            "naar heb heeft hebben bent wij zij hij haar ons uit als"
        ),
    ),
}
"""Every language the guardrails recognise, English first."""


# ---- claims: reported speech ------------------------------------------------------------------
