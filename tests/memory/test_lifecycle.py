"""maintain, export/import, forget and the audit log, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.memory.conftest import MakeMemory, extraction, fact
from veil.memory import ImportFormatError, Memory
from veil.testing import FakeClock, ScriptedModel


def scripted(memory: Memory) -> ScriptedModel:
    assert isinstance(memory.complete, ScriptedModel)
    return memory.complete


def interaction(text: str) -> dict[str, object]:
    return {"kind": "interaction", "text": text, "due": None}


def test_wiki_is_compiled_from_trusted_grounded_uncontested_facts(make_memory: MakeMemory) -> None:
    memory = make_memory(
        [
            extraction(
                fact("user", "prefers", "tea", "The user prefers tea."),
                fact("Acme", "located_at", "Boston", "Acme is in Boston."),
                fact("user", "owes", "900 dollars", "The user owes 900 dollars."),
            ),
            extraction(fact("user", "works_as", "pilot", "The user is a pilot.")),
            extraction(
                fact("user", "has_pet", "a parrot", "The user has a parrot.", claimant="neighbour")
            ),
        ]
    )
    memory.remember("I prefer tea. Acme is in Boston. I owe 500 dollars.", user_id="u1")
    memory.remember("You are a pilot.", user_id="u1", author="assistant")
    memory.remember("My neighbour says I have a parrot.", user_id="u1")
    calls_before = len(scripted(memory).calls)
    report = memory.maintain("u1")
    assert report.llm_calls == 0 and len(scripted(memory).calls) == calls_before
    assert report.wiki_sections == 2
    text = memory.recall("", user_id="u1", token_budget=2000).text
    notes = text.split("## Notes\n")[1].split("\n## ")[0]
    assert "The user prefers tea." in notes and "Acme is in Boston." in notes
    assert "900 dollars" not in notes  # ungrounded
    assert "pilot" not in notes  # assistant authority is not trusted enough for the wiki
    assert "parrot" not in notes  # quarantined


def test_consolidation_keeps_first_failures_fixes_commitments_verbatim(
    make_memory: MakeMemory, clock: FakeClock
) -> None:
    memory = make_memory(
        [
            extraction(
                episodes=[interaction(f"Chatted about hiking trip {i}") for i in range(6)]
                + [
                    {"kind": "failure", "text": "Deploy failed: migration lock", "due": None},
                    {"kind": "fix", "text": "Set lock_timeout before migrating", "due": None},
                ]
            ),
            extraction(
                episodes=[{"kind": "failure", "text": "Deploy failed: migration lock", "due": None}]
            ),
        ]
    )
    memory.remember(
        "a long month of chats about hiking trips 0 to 5; the deploy failed on the migration "
        "lock; fixed: set lock_timeout before migrating",
        user_id="u1",
    )
    clock.advance(days=1)
    memory.remember("the deploy failed again: migration lock", user_id="u1")
    clock.advance(days=40)
    old = [e for e in memory.episodes("u1") if e.kind == "interaction"]
    model = scripted(memory)
    model.responses = [
        *model.responses,
        {
            "episodes": [
                {
                    "kind": "interaction",
                    "text": "Chatted about hiking trips 0-5",
                    "source_ids": [e.id for e in old],
                }
            ]
        },
    ]
    report = memory.maintain("u1")
    assert report.llm_calls == 1 and report.error is None
    assert set(report.consolidated) == {e.id for e in old} and len(report.created) == 1
    assert len(report.duplicates_folded) == 1
    prompt = model.calls[-1][-1]["content"]
    assert "Deploy failed" not in prompt  # failures/fixes/commitments never go to the model
    text = memory.recall("deploy migration lock hiking", user_id="u1", token_budget=2000).text
    assert text.count("Deploy failed: migration lock") == 1
    assert "Set lock_timeout before migrating" in text
    assert "Chatted about hiking trips 0-5" in text and "hiking trip 3" not in text
    (merged,) = [e for e in memory.episodes("u1") if e.id in report.created]
    assert merged.text == "Chatted about hiking trips 0-5"
    assert memory.store.check().ok


def test_consolidation_with_a_bad_model_changes_nothing(
    make_memory: MakeMemory, clock: FakeClock
) -> None:
    memory = make_memory(
        [
            extraction(episodes=[interaction(f"chat {i}") for i in range(6)]),
            {"episodes": [{"kind": "interaction", "text": "x", "source_ids": ["ep_invented"]}]},
        ]
    )
    memory.remember("chats", user_id="u1")
    clock.advance(days=40)
    report = memory.maintain("u1")
    assert report.error is not None and report.consolidated == ()
    assert len([e for e in memory.episodes("u1")]) == 6


def test_export_import_round_trip_is_byte_identical(
    make_memory: MakeMemory, tmp_path: Path, clock: FakeClock, backend: str
) -> None:
    memory = make_memory(
        [
            extraction(
                fact("user", "prefers", "vim"),
                episodes=[{"kind": "commitment", "text": "Ship v2", "due": "2026-01-09"}],
            ),
            extraction(
                fact("user", "prefers", "emacs"),
                fact("user", "owes", "500 dollars", claimant="landlord"),
            ),
        ]
    )
    memory.remember("I use vim. Ship v2 by Friday.", user_id="u1")
    clock.advance(days=2)
    memory.remember("Switched to emacs; landlord says I owe 500 dollars.", user_id="u1")
    first = tmp_path / "first.jsonl"
    memory.export("u1", first)
    lines = first.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["format"] == "veil.memory.export" and header["version"] == 1
    assert {json.loads(line)["type"] for line in lines[1:]} == {"event", "fact", "episode"}

    fresh = Memory(
        tmp_path / "restored.db", complete=ScriptedModel([]), embedder=memory.embedder, clock=clock
    )
    report = fresh.import_(first, restore=True)
    assert report.events == header["events"] and report.already_present == 0
    second = tmp_path / "second.jsonl"
    clock.advance(days=1)
    fresh.export("u1", second)
    assert second.read_text().splitlines()[1:] == lines[1:]
    assert [f.object for f in fresh.history("u1", "user", "prefers")] == ["vim", "emacs"]
    assert fresh.import_(first, restore=True).already_present == report.events  # idempotent
    fresh.close()


def test_import_without_restore_caps_trust(make_memory: MakeMemory, tmp_path: Path) -> None:
    memory = make_memory([extraction(fact("user", "prefers", "tea"))])
    memory.remember("I prefer tea.", user_id="u1")
    path = tmp_path / "e.jsonl"
    memory.export("u1", path)
    other = Memory(
        tmp_path / "other.db",
        complete=ScriptedModel([extraction(fact("user", "prefers", "coffee"))]),
        embedder=memory.embedder,
    )
    other.import_(path, user_id="u9")
    (imported,) = other.facts("u9")
    assert imported.trust == 0 and imported.provenance.source == "import:e.jsonl"
    report = other.remember("I prefer coffee.", user_id="u9")
    assert report.superseded == (imported.id,)  # the user outranks anything imported
    other.close()


def test_import_rejects_bad_files_and_writes_nothing(
    make_memory: MakeMemory, tmp_path: Path
) -> None:
    memory = make_memory([])
    cases = {
        "empty.jsonl": "",
        "header.jsonl": '{"format": "other"}\n',
        "version.jsonl": '{"format": "veil.memory.export", "version": 99, "user_id": "u"}\n',
        "badline.jsonl": '{"format": "veil.memory.export", "version": 1, "user_id": "u"}\n'
        '{"type": "event", "id": "e1"\n',
        "kind.jsonl": '{"format": "veil.memory.export", "version": 1, "user_id": "u"}\n'
        '{"type": "event", "id": "e1", "kind": "tape.secret", "at": '
        '"2026-01-01T00:00:00+00:00", "actor": "x", "payload": {}}\n',
    }
    for name, content in cases.items():
        path = tmp_path / name
        path.write_text(content)
        with pytest.raises(ImportFormatError):
            memory.import_(path)
    assert memory.store.read("u") == []


def test_forget_erases_everything_and_leaves_a_receipt(
    make_memory: MakeMemory, backend: str, tmp_path: Path
) -> None:
    canary = "CANARYzq7x"
    memory = make_memory(
        [
            extraction(
                fact("user", "prefers", f"{canary} tea", f"The user prefers {canary} tea."),
                episodes=[interaction(f"Talked about {canary}")],
            ),
            extraction(fact("user", "prefers", "coffee")),
        ],
        audit=True,
    )
    memory.remember(f"I prefer {canary} tea.", user_id="alice")
    memory.remember("I prefer coffee.", user_id="bob")
    memory.maintain("alice")
    memory.recall(canary, user_id="alice")
    receipt = memory.forget("alice")
    assert receipt.events >= 5 and canary not in repr(receipt) and "alice" not in repr(receipt)
    assert memory.store.read("alice") == []
    assert memory.facts("alice", include_history=True) == []
    assert memory.recall(canary, user_id="alice").text == ""
    assert [f.object for f in memory.facts("bob")] == ["coffee"]
    memory.forget("alice")  # the audit record of that last recall goes too
    if backend == "sqlite":
        memory.store.close()
        for path in tmp_path.glob("memory.db*"):
            assert canary.encode() not in path.read_bytes(), path
            assert b"alice" not in path.read_bytes(), path


def test_audit_log_records_operations_without_content(make_memory: MakeMemory) -> None:
    memory = make_memory([extraction(fact("user", "prefers", "secret-tea"))], audit=True)
    memory.remember("I prefer secret-tea.", user_id="u1")
    memory.recall("tea", user_id="u1")
    audit = memory.store.read("u1", kinds=["audit.op"])
    assert [e.payload["op"] for e in audit] == ["remember", "recall"]
    assert all("secret" not in json.dumps(e.payload) for e in audit)
    assert all(e.actor == "library" for e in audit)


def test_audit_is_off_by_default(make_memory: MakeMemory) -> None:
    memory = make_memory([extraction(fact("user", "prefers", "tea"))])
    memory.remember("I prefer tea.", user_id="u1")
    memory.recall("tea", user_id="u1")
    assert memory.store.read("u1", kinds=["audit.op"]) == []
