"""Which relations a recall query asks about, from its words alone."""

from __future__ import annotations

import pytest

from veil.memory.asked import relations_asked, stem
from veil.memory.config import BUILTIN_RELATIONS


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("where do I live?", ("located_at",)),
        ("what do I prefer", ("prefers",)),
        ("who is Ada's partner?", ("partner_of",)),
        ("does Ada have any pets?", ("has_pet",)),
        ("what is my job", ("works_as",)),
        ("what are my deadlines", ("deadline",)),
        ("tell me about Ada Abara", ()),
        ("where is acme?", ()),
        ("", ()),
    ],
)
def test_relations_asked(query: str, expected: tuple[str, ...]) -> None:
    assert relations_asked(query, BUILTIN_RELATIONS) == expected


def test_stem_agrees_across_forms() -> None:
    assert stem("lives") == stem("live") == stem("living")
    assert stem("works") == stem("working") == stem("work")
    assert stem("prefers") == stem("prefer")
