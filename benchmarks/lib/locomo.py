"""LoCoMo (``locomo10.json``), parsed: conversations, their turns in order, the questions.

LoCoMo (Maharana et al., ACL 2024) is CC BY-NC 4.0 and is read from the shared data folder
(:data:`benchmarks.lib.paths.LOCOMO`: ``$VEIL_SHARED_DIR/data/locomo10.json``); it is never
copied into the repository. Questions of categories 1-4 are kept, with their evidence
normalised as shared/data/README.md says ("Evidence quirks": ``D:?(\\d+):(\\d+)`` matches,
unknown turn ids dropped); category 5 (adversarial) is left out.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str

    @property
    def indexed(self) -> str:
        """The text every retriever indexes: ``"{speaker}: {text}"``."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Question:
    text: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def load_locomo(path: Path) -> list[Conversation]:
    """Conversations with turns in order and category 1-4 questions with normalised evidence;
    an image turn's text ends in ``[shares a photo of <blip_caption>]``."""
    samples: list[dict[str, Any]] = json.loads(path.read_text())
    out: list[Conversation] = []
    for sample in samples:
        conv: dict[str, Any] = sample["conversation"]
        sessions = sorted(
            (int(key.split("_")[1]), key) for key in conv if re.fullmatch(r"session_\d+", key)
        )
        turns: list[Turn] = []
        for _, key in sessions:
            for raw in conv[key]:
                text = str(raw["text"])
                if raw.get("blip_caption"):
                    text = f"{text} [shares a photo of {raw['blip_caption']}]"
                turns.append(Turn(str(raw["dia_id"]), str(raw["speaker"]), text))
        known = {t.dia_id for t in turns}
        questions: list[Question] = []
        for qa in sample["qa"]:
            category = int(qa["category"])
            if category not in (1, 2, 3, 4):
                continue
            evidence = {
                f"D{int(a)}:{int(b)}"
                for item in qa.get("evidence", [])
                for a, b in _EVIDENCE.findall(str(item))
            } & known
            if evidence:
                questions.append(Question(str(qa["question"]), category, frozenset(evidence)))
        out.append(Conversation(str(sample["sample_id"]), tuple(turns), tuple(questions)))
    return out


def session_dates(path: Path) -> dict[str, dict[int, datetime]]:
    """``{sample_id: {session number: datetime}}`` from ``session_<n>_date_time`` (as UTC)."""
    samples: list[dict[str, Any]] = json.loads(path.read_text())
    out: dict[str, dict[int, datetime]] = {}
    for sample in samples:
        conv: dict[str, Any] = sample["conversation"]
        dates: dict[int, datetime] = {}
        for key, value in conv.items():
            match = re.fullmatch(r"session_(\d+)_date_time", key)
            if match:
                parsed = datetime.strptime(str(value), "%I:%M %p on %d %B, %Y")
                dates[int(match.group(1))] = parsed.replace(tzinfo=UTC)
        out[str(sample["sample_id"])] = dates
    return out
