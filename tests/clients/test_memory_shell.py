"""``veil memory ACTION`` as a subprocess in a temporary git project, as a person or a script
runs it; the extraction model is a ``scripted:FILE`` of replies."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.clients.conftest import VEIL
from veil.agent.project import project_scope


def extraction(subject: str, relation: str, value: str, statement: str) -> dict[str, Any]:
    fact = {"subject": subject, "relation": relation, "object": value, "statement": statement,
            "volatility": "durable", "claimant": "user", "supersedes": None}  # fmt: skip
    return {"facts": [fact], "episodes": []}


NOTHING: dict[str, Any] = {"facts": [], "episodes": []}


def script(path: Path, *replies: dict[str, Any]) -> str:
    path.write_text(json.dumps({"turns": [{"content": json.dumps(r)} for r in replies]}))
    return f"scripted:{path}"


def memory(
    *args: str, cwd: Path, stdin: str | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "VEIL_MODEL"}
    environ.update(env)
    return subprocess.run([*VEIL, "memory", *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=120, check=False, env=environ)  # fmt: skip


def one_line_error(done: subprocess.CompletedProcess[str], status: int = 2) -> str:
    assert done.returncode == status, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def test_remember_recall_facts_history_in_the_projects_store(project: Path, tmp_path: Path) -> None:
    # a scripted model replays its file from the start in every process: one file per run
    model = script(
        tmp_path / "1.json", extraction("user", "prefers", "vim", "The user prefers vim.")
    )
    first = memory("remember", "I use vim for everything.", "--model", model,
                   "--at", "2024-01-10T09:00:00+00:00", cwd=project / "tests")  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[0].endswith(": 1 fact")
    assert "  stored: The user prefers vim. (f_" in first.stdout
    # the project's store, found from a subdirectory, created with its .gitignore
    assert (project / ".veil" / "memory.db").exists()
    assert (project / ".veil" / ".gitignore").exists()

    # `-` reads the evidence from stdin; the model comes from $VEIL_MODEL as everywhere else
    model = script(
        tmp_path / "2.json", extraction("user", "prefers", "emacs", "The user prefers emacs.")
    )
    second = memory("remember", "-", "--json", cwd=project, stdin="I switched to emacs.\n",
                    VEIL_MODEL=model)  # fmt: skip
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert len(report["facts"]) == 1 and len(report["superseded"]) == 1 and report["error"] is None

    facts = memory("facts", cwd=project)
    assert facts.returncode == 0, facts.stderr
    header, *rows = facts.stdout.splitlines()
    assert header.split() == ["ID", "STATUS", "SUBJECT", "RELATION", "STATEMENT"]
    assert len(rows) == 1 and rows[0].endswith("The user prefers emacs.")
    listed = json.loads(memory("facts", "--all", "--json", cwd=project).stdout)["facts"]
    assert [f["statement"] for f in listed] == ["The user prefers vim.", "The user prefers emacs."]
    assert listed[0]["status"] == "superseded"

    recall = memory("recall", "which editor", "--budget", "200", cwd=project)
    assert recall.returncode == 0 and "The user prefers emacs." in recall.stdout
    assert "vim" not in recall.stdout
    before = memory("recall", "which editor", "--as-of", "2024-01-11", "--json", cwd=project)
    answer = json.loads(before.stdout)
    assert [f["statement"] for f in answer["facts"]] == ["The user prefers vim."]
    assert answer["tokens"] <= 200

    history = memory("history", "user", "prefers", cwd=project)
    assert history.returncode == 0, history.stderr
    lines = history.stdout.splitlines()
    assert lines[0].split()[:3] == ["VALID", "FROM", "(UTC)"]
    assert lines[1].startswith("2024-01-10 09:00") and "superseded" in lines[1]
    assert lines[2].endswith("The user prefers emacs.")

    # another user's memory in the same store sees none of it
    other = memory("facts", "--user", "someone-else", "--json", cwd=project)
    assert other.returncode == 0 and json.loads(other.stdout)["facts"] == []


def test_without_a_model_remember_says_how_and_reads_still_work(
    project: Path, tmp_path: Path
) -> None:
    refused = memory("remember", "I prefer vim.", cwd=project)
    line = one_line_error(refused)
    assert line.startswith("veil memory remember: no model configured;") and "VEIL_MODEL" in line
    assert not (project / ".veil").exists()  # nothing was done
    assert "no store at nope.db (check --db)" in one_line_error(
        memory("facts", "--db", "nope.db", cwd=project)
    )
    missing = one_line_error(memory("facts", cwd=project))
    assert missing == (
        f"veil memory facts: no store at {project / '.veil' / 'memory.db'} (remember something "
        "first, or pass --db)"
    )
    db = tmp_path / "m.db"
    model = script(
        tmp_path / "s.json", extraction("user", "prefers", "vim", "The user prefers vim.")
    )
    assert memory("remember", "I prefer vim.", "--db", str(db), "--model", model,
                  cwd=project).returncode == 0  # fmt: skip
    for args in (["recall", "editor"], ["facts"], ["history", "user", "prefers"],
                 ["export", str(tmp_path / "out.jsonl")]):  # fmt: skip
        done = memory(*args, "--db", str(db), cwd=project)
        assert done.returncode == 0 and done.stderr == "", (args, done.stderr)
    unusable = memory("remember", "x", "--db", str(db), "--model", "openai:gpt-4.1-mini",
                      cwd=project, OPENAI_API_KEY="")  # fmt: skip
    assert "needs OPENAI_API_KEY" in one_line_error(unusable)


def test_import_of_a_dated_chat_history_keeps_each_messages_time(
    project: Path, tmp_path: Path
) -> None:
    chat = tmp_path / "chat.jsonl"
    lines = [
        {"role": "user", "content": "I moved to Lisbon.", "timestamp": "2023-03-04T10:00:00Z"},
        {"role": "assistant", "content": "Do you like it?", "timestamp": "2023-03-04T10:00:05Z"},
        {"role": "user", "content": [{"type": "text", "text": "I live in Porto now."}],
         "at": 1693562400},
    ]  # fmt: skip
    chat.write_text("".join(json.dumps(line) + "\n" for line in lines))
    model = script(
        tmp_path / "s.json",
        extraction("user", "located_at", "Lisbon", "The user lives in Lisbon."),
        NOTHING,
        extraction("user", "located_at", "Porto", "The user lives in Porto."),
    )
    done = memory("import", str(chat), "--model", model, cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"imported 3 of 3 messages from {chat} (jsonl) into {project_scope(project)}: 2 by user, "
        "1 by assistant; dated 2023-03-04 10:00 .. 2023-09-01 10:00 UTC; 2 facts, 1 superseded"
    )
    history = json.loads(memory("history", "user", "located_at", "--json", cwd=project).stdout)
    windows = [(f["valid_from"], f["valid_to"]) for f in history["facts"]]
    assert windows == [
        ("2023-03-04T10:00:00Z", "2023-09-01T10:00:00Z"),
        ("2023-09-01T10:00:00Z", None),
    ]
    then = memory("recall", "where do I live", "--as-of", "2023-06-01", "--json", cwd=project)
    assert [f["object"] for f in json.loads(then.stdout)["facts"]] == ["Lisbon"]


def locomo(path: Path) -> Path:
    """A LoCoMo-shaped conversation (invented text, the benchmark's field names)."""
    conversation = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "I just started pottery classes!"},
            {
                "speaker": "Ben",
                "dia_id": "D1:2",
                "text": "Cool. I run every morning.",
                "img_url": ["x"],
                "blip_caption": "a photo of running shoes",
            },
        ],
        "session_2_date_time": "7:30 pm on 2 June, 2023",
        "session_2": [{"speaker": "Ana", "dia_id": "D2:1", "text": "I gave up pottery."}],
    }
    path.write_text(json.dumps([{"sample_id": "conv-x", "conversation": conversation, "qa": []}]))
    return path


def test_import_of_a_locomo_conversation(project: Path, tmp_path: Path) -> None:
    conversation = locomo(tmp_path / "locomo.json")
    model = script(tmp_path / "s.json", NOTHING, NOTHING, NOTHING)
    naive = memory("import", str(conversation), "--model", model, cwd=project)
    assert one_line_error(naive) == (
        f"veil memory import: {conversation}: session_1 turn 1: time '1:56 pm on 8 May, 2023' "
        "has no timezone; say which with --timezone (e.g. --timezone UTC or --timezone "
        "Europe/Paris)"
    )
    done = memory("import", str(conversation), "--model", model, "--timezone", "+02:00",
                  "--json", cwd=project)  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["format"] == "locomo" and summary["me"] == "Ana"
    assert summary["authors"] == {"user": 2, "third_party": 1}
    assert summary["from"] == "2023-05-08T11:56:00+00:00"
    assert summary["to"] == "2023-06-02T17:30:00+00:00"
    # what the model was asked to read: the speaker's name, the image's caption, the time
    export = tmp_path / "out.jsonl"
    assert memory("export", str(export), cwd=project).returncode == 0
    events = [json.loads(line) for line in export.read_text().splitlines()[1:]]
    evidence = [e for e in events if e.get("type") == "event" and e["kind"] == "memory.evidence"]
    may, june = datetime(2023, 5, 8, 11, 56, tzinfo=UTC), datetime(2023, 6, 2, 17, 30, tzinfo=UTC)
    assert [datetime.fromisoformat(e["at"]) for e in evidence] == [may, may, june]
    texts = json.dumps([e["payload"] for e in evidence])
    assert "Ben: Cool. I run every morning. [shares an image: a photo of running shoes]" in texts
    wrong = memory("import", str(conversation), "--model", model, "--me", "Carl",
                   "--timezone", "UTC", cwd=project)  # fmt: skip
    assert "no speaker is called 'Carl' (the speakers are Ana, Ben)" in one_line_error(wrong)


def test_an_import_that_stops_says_where_and_goes_on_with_start(
    project: Path, tmp_path: Path
) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": [
        {"role": "user", "text": f"Note {n}.", "at": f"2024-02-0{n}T08:00:00+01:00"}
        for n in (1, 2, 3)
    ]}))  # fmt: skip
    short = script(tmp_path / "short.json", NOTHING)  # one reply for three messages
    stopped = memory("import", str(chat), "--model", short, cwd=project)
    line = one_line_error(stopped, status=1)
    assert line.startswith("veil memory import: message 2 (message 2): nothing extracted (")
    assert line.endswith("messages 1..1 were imported; continue with --start 2")
    assert stopped.stdout.startswith("imported 1 of 3 messages")
    rest = script(tmp_path / "rest.json", NOTHING, NOTHING)
    resumed = memory("import", str(chat), "--model", rest, "--start", "2", cwd=project)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.startswith("imported 2 of 3 messages")


def test_export_forget_and_import_of_an_export(project: Path, tmp_path: Path) -> None:
    model = script(
        tmp_path / "s.json", extraction("user", "prefers", "tea", "The user prefers tea.")
    )
    assert memory("remember", "I prefer tea.", "--model", model, cwd=project).returncode == 0
    export = tmp_path / "backup.jsonl"
    done = memory("export", str(export), cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"exported the memory of {project_scope(project)} (1 fact) to {export}"
    )
    piped = memory("export", "-", cwd=project)
    assert piped.returncode == 0  # the same lines, after a header with the export's own time
    assert piped.stdout.splitlines()[1:] == export.read_text().splitlines()[1:]
    refused = one_line_error(memory("forget", cwd=project))
    assert refused.endswith("for good; run again with --yes")
    assert json.loads(memory("facts", "--json", cwd=project).stdout)["facts"]  # still there
    erased = memory("forget", "--yes", "--json", cwd=project)
    assert erased.returncode == 0 and json.loads(erased.stdout)["events"] > 0
    assert json.loads(memory("facts", "--json", cwd=project).stdout)["facts"] == []

    restored = memory("import", str(export), "--restore", cwd=project)  # no model needed
    assert restored.returncode == 0, restored.stderr
    assert restored.stdout.startswith("imported ") and "exactly (--restore)" in restored.stdout
    facts = json.loads(memory("facts", "--json", cwd=project).stdout)["facts"]
    assert [f["statement"] for f in facts] == ["The user prefers tea."]
    again = memory("import", str(export), "--restore", "--json", cwd=project)
    report = json.loads(again.stdout)
    assert report["already_present"] == report["events"]  # idempotent


def test_mistakes_are_one_line_and_status_2(project: Path, tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    model = script(tmp_path / "s.json", NOTHING)
    assert (
        memory("remember", "hello", "--db", str(db), "--model", model, cwd=project).returncode == 0
    )
    bad_line = tmp_path / "bad.jsonl"
    bad_line.write_text('{"text": "a", "at": "2024-01-01T00:00:00Z"}\n{"text": \n')
    cases = {
        ("recall", "x", "--as-of", "last tuesday"): "--as-of 'last tuesday': not an ISO-8601 time",
        ("recall", "x", "--as-of", "2024-01-01T10:00"): "needs a timezone offset",
        ("remember", "   ", "--model", model): "nothing to remember: the text is empty",
        ("remember", "x", "--at", "noon", "--model", model): "--at 'noon': not an ISO-8601",
        ("import", str(tmp_path / "nope.jsonl")): "no such file",
        ("import", str(bad_line), "--model", model): "line 2 is not JSON",
        ("import", str(bad_line), "--timezone", "Mars/Olympus", "--model", model):
            "--timezone 'Mars/Olympus': not a timezone",
        ("facts", "--user", " "): "--user ' ': scope must be a non-empty string",
    }  # fmt: skip
    for args, expected in cases.items():
        assert expected in one_line_error(memory(*args, "--db", str(db), cwd=project)), args
    undated = tmp_path / "undated.jsonl"
    undated.write_text('{"text": "hi"}\n')
    assert "line 1: no time: give each message one of at, timestamp" in one_line_error(
        memory("import", str(undated), "--db", str(db), "--model", model, cwd=project)
    )
    # argparse's own mistakes: status 2 and a usage line, as everywhere in the CLI
    usage = memory("recall", "x", "--budget", "-1", cwd=project)
    assert usage.returncode == 2 and "must not be negative" in usage.stderr


def test_dispute_and_confirm_from_the_shell(project: Path, tmp_path: Path) -> None:
    """The catalogue's dispute and confirm as ``veil memory`` actions: the fact leaves recall
    and stays in history, comes back when confirmed; a bad id or an empty reason is one line."""
    model = script(
        tmp_path / "1.json", extraction("user", "prefers", "vim", "The user prefers vim.")
    )
    assert memory("remember", "I use vim.", "--model", model, cwd=project).returncode == 0
    (fact,) = json.loads(memory("facts", "--json", cwd=project).stdout)["facts"]
    disputed = memory("dispute", fact["id"], "it was a joke", cwd=project)
    assert disputed.returncode == 0, disputed.stderr
    assert disputed.stdout.strip() == f"{fact['id']} is now disputed: The user prefers vim."
    assert json.loads(memory("facts", "--json", cwd=project).stdout)["facts"] == []
    assert "vim" not in memory("recall", "which editor?", cwd=project).stdout
    listed = json.loads(memory("facts", "--all", "--json", cwd=project).stdout)["facts"]
    assert [f["status"] for f in listed] == ["disputed"]
    confirmed = memory("confirm", fact["id"], cwd=project)
    assert confirmed.stdout.strip() == f"{fact['id']} is now current: The user prefers vim."
    assert "The user prefers vim." in memory("recall", "which editor?", cwd=project).stdout
    assert "no fact 'f_nope'" in one_line_error(memory("confirm", "f_nope", cwd=project))
    assert "reason must not be empty" in one_line_error(
        memory("dispute", fact["id"], "  ", cwd=project)
    )
