"""Dated chat histories read into messages with their own times (veil.memory.transcripts)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.conftest import SHARED
from veil.memory.transcripts import TranscriptError, authors, read_transcript


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_jsonl_times_roles_and_text_parts(tmp_path: Path) -> None:
    lines = [
        {"role": "human", "content": "line\u2028separator inside", "at": "2024-01-01T10:00:00Z"},
        {"role": "ai", "text": "ok", "timestamp": 1_704_103_200_000},  # milliseconds
        {"role": "tool", "content": [{"type": "text", "text": "a"}, {"type": "image"},
                                     {"type": "text", "text": "b"}], "time": 1_704_103_260},
    ]  # fmt: skip
    path = write(tmp_path / "c.jsonl", "\n".join(json.dumps(x, ensure_ascii=False) for x in lines))
    transcript = read_transcript(path)
    assert transcript.shape == "jsonl" and transcript.me is None
    assert [m.text for m in transcript.messages] == ["line\u2028separator inside", "ok", "a\nb"]
    assert [m.author for m in transcript.messages] == ["user", "assistant", "tool"]
    assert [m.at for m in transcript.messages] == [
        datetime(2024, 1, 1, 10, 0, tzinfo=UTC),
        datetime(2024, 1, 1, 10, 0, tzinfo=UTC),
        datetime(2024, 1, 1, 10, 1, tzinfo=UTC),
    ]


def test_speakers_are_prefixed_and_me_is_the_user(tmp_path: Path) -> None:
    turns = [
        {"speaker": "Ana", "text": "I moved.", "date": "2024-03-01 09:00"},
        {"speaker": "ben", "text": "Where to?", "date": "2024-03-01 09:01"},
    ]
    path = write(tmp_path / "c.json", json.dumps(turns))
    paris = timezone(timedelta(hours=1))
    first = read_transcript(path, timezone=paris)
    assert first.shape == "json" and first.me == "Ana"
    assert [(m.text, m.author) for m in first.messages] == [
        ("Ana: I moved.", "user"),
        ("ben: Where to?", "third_party"),
    ]
    assert first.messages[0].at == datetime(2024, 3, 1, 8, 0, tzinfo=UTC)
    as_ben = read_transcript(path, timezone=paris, me="Ben")  # names compare without case
    assert [m.author for m in as_ben.messages] == ["third_party", "user"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty: no messages to import"),
        ('"just a string"', "a JSON str, not a chat history"),
        ('[{"text": "a"}]', "message 1: no time: give each message one of at, timestamp"),
        ('[{"at": "2024-01-01T00:00:00Z"}]', "message 1: no text"),
        ('[{"text": "a", "at": "soon"}]', "time 'soon' is neither ISO-8601"),
        ('[{"text": "a", "at": "2024-01-01T00:00:00"}]', "has no timezone; say which"),
        ('[{"text": "a", "at": true}]', "time True is not a time"),
        ('[{"text": "a", "at": 1e30}]', "is out of range"),
        ('[{"text": "a", "at": 1, "role": "robot"}]', "role 'robot' is not one of"),
        ('{"text": "a", "at": 1}\n[1]', "line 2: a JSON list, not a message object"),
        ('{"conversation": {"speaker_a": "A"}}', "conversation has no session_<n> lists"),
        ('{"conversation": {"session_1": []}}', "session_1 has no session_1_date_time"),
    ],
)
def test_each_mistake_is_one_line_naming_the_place(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path / "c.json", text)
    with pytest.raises(TranscriptError) as caught:
        read_transcript(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and problem in message and "\n" not in message


def test_the_published_locomo_file(tmp_path: Path) -> None:
    """LoCoMo as published (shared/data/locomo10.json, CC BY-NC 4.0): ten conversations, so one
    is chosen; its speaker_a is the user; each turn takes its session's time."""
    locomo = SHARED / "data" / "locomo10.json"
    with pytest.raises(
        TranscriptError, match=r"holds 10 conversations .* choose one with --sample"
    ):
        read_transcript(locomo, timezone=UTC)
    data = json.loads(locomo.read_text())
    sample = data[1]
    conversation = sample["conversation"]
    transcript = read_transcript(locomo, timezone=UTC, sample=sample["sample_id"])
    assert transcript == read_transcript(locomo, timezone=UTC, sample="2")
    assert transcript.shape == "locomo" and transcript.me == conversation["speaker_a"]
    turns = [
        (key, turn)
        for key in sorted(
            (k for k in conversation if k.startswith("session_") and k[8:].isdigit()),
            key=lambda k: int(k[8:]),
        )
        for turn in conversation[key]
    ]
    assert len(transcript.messages) == len(turns)
    for message, (key, turn) in zip(transcript.messages, turns, strict=True):
        assert message.speaker == turn["speaker"]
        assert message.text.startswith(f"{turn['speaker']}: {turn['text'].strip()}")
        assert message.at.replace(tzinfo=None) == datetime.strptime(
            conversation[f"{key}_date_time"], "%I:%M %p on %d %B, %Y"
        )
    counts = authors(transcript.messages)
    mine = sum(1 for _, t in turns if t["speaker"] == conversation["speaker_a"])
    assert counts == {"user": mine, "third_party": len(turns) - mine}
    with pytest.raises(TranscriptError, match="no conversation 'conv-0'"):
        read_transcript(locomo, timezone=UTC, sample="conv-0")
