"""Steps that left the prompt whole (the assistant turn and every result of its calls) render as
one note per run of them, like truncation but addressable: the request stays a valid
conversation (no tool result without its call, no call without its result), the note names the
steps' pointers, and each pointer restores the original output."""

from __future__ import annotations

import re
from pathlib import Path

from tests.agent.test_cache_prefix import run, wire
from veil.context import ContextEngine
from veil.llm.openai_provider import OpenAIProvider
from veil.tape.sqlite import SQLiteStore
from veil.testing import HashEmbedder

POINTER = re.compile(r"veil://(?:warm|cold)/ci_[0-9a-f]+")


def test_whole_steps_collapse_into_a_note_and_the_request_stays_valid(tmp_path: Path) -> None:
    requests = run(tmp_path, window=4_300, files=10)  # ~1,300 tokens beside the tool schemas
    notes: list[str] = []
    for request in requests:
        messages = OpenAIProvider.wire_messages(request)
        open_calls: set[str] = set()
        for message in messages:
            if message["role"] == "assistant":
                assert not open_calls, "a call was left without its result"
                open_calls = {c["id"] for c in message.get("tool_calls") or []}
            elif message["role"] == "tool":
                assert message["tool_call_id"] in open_calls, "a result without its call"
                open_calls.discard(message["tool_call_id"])
            elif message["role"] == "system" and "earlier step" in str(message["content"]):
                assert not open_calls
                notes.append(str(message["content"]))
        assert len(wire(request)) >= 2
    assert notes, "no run of whole steps was collapsed"
    last = [m for m in OpenAIProvider.wire_messages(requests[-1]) if m["role"] == "system"]
    assert any("earlier step" in str(m["content"]) for m in last)
    # Every pointer a note names restores a file that was read, byte for byte.
    store = SQLiteStore(tmp_path / "context.db", embedder=HashEmbedder())
    engine = ContextEngine(
        store, session_id="check", scope="project:cache", embedder=HashEmbedder()
    )
    files = {p.read_text() for p in tmp_path.glob("f*.py")}
    pointers = {p for note in notes for p in POINTER.findall(note)}
    assert pointers
    for pointer in pointers:
        content = engine.expand(pointer).content
        assert any(text in content or content in text for text in files), pointer
    store.close()
