"""Nothing secret is kept (issue 25), through every entry point as a user meets it — `veil -p`
against a model server on 127.0.0.1, Claude Code's hook, `veil memory remember` and `import`,
`veil serve`'s `remember` — then a byte scan of every file under `.veil/` (databases, WAL,
shared memory, vector sidecars), of the trace and of an export: no canary anywhere. While a
result is live the model still sees what it asked for (the request prefix does not change);
once it leaves the window, its stub, expansion and every stored copy carry the placeholder.
Purge (`veil sessions rm`, `veil admin purge --match`) and retention are tested the same way.

The canaries are made up here at random in each format; none is a real credential."""

from __future__ import annotations

import json
import os
import random
import string
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.agent.test_cli_use import GIT_ENV, repo
from tests.server.test_commands import fact, start_serve, stop_serve
from veil.agent.project import project_scope
from veil.context import ContextEngine
from veil.llm.scripted_server import ScriptedServer
from veil.tape import open_store
from veil.testing import HashEmbedder

__all__ = ["repo"]

VEIL = [sys.executable, "-m", "veil.cli.main"]
RNG = random.Random(25)


def _chars(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


UPPER = string.ascii_uppercase + string.digits
ALNUM = string.ascii_letters + string.digits
CANARIES = {
    "aws-access-key": "AKIA" + _chars(UPPER, 16),
    "aws-secret-key": _chars(ALNUM + "/+", 40),
    "github-token": "ghp_" + _chars(ALNUM, 36),
    "openai-key": "sk-proj-" + _chars(ALNUM, 48),
    "anthropic-key": "sk-ant-api03-" + _chars(ALNUM, 86),
    "stripe-key": "sk_live_" + _chars(ALNUM, 24),
    "url-password": _chars(ALNUM, 18),
    "env-password": _chars(ALNUM, 22),
}
ENV_FILE = (
    f"AWS_ACCESS_KEY_ID={CANARIES['aws-access-key']}\n"
    f"AWS_SECRET_ACCESS_KEY={CANARIES['aws-secret-key']}\n"
    f"GITHUB_TOKEN={CANARIES['github-token']}\n"
    f"OPENAI_API_KEY={CANARIES['openai-key']}\n"
    f"ANTHROPIC_API_KEY={CANARIES['anthropic-key']}\n"
    f"STRIPE_SECRET_KEY={CANARIES['stripe-key']}\n"
    f"DATABASE_URL=postgres://app:{CANARIES['url-password']}@db.internal:5432/app\n"
    f"ADMIN_PASSWORD={CANARIES['env-password']}\n"
)


def leaks(*roots: Path) -> dict[str, list[str]]:
    """Every canary found in the bytes of any file under ``roots``: {kind: [file, …]}."""
    found: dict[str, list[str]] = {}
    for root in roots:
        files = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
        for path in files:
            data = path.read_bytes()
            for kind, secret in CANARIES.items():
                if secret.encode() in data:
                    found.setdefault(kind, []).append(str(path))
    return found


def env_for(url: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("VEIL_", "ANTHROPIC_"))}
    return base | GIT_ENV | {"VEIL_BASE_URL": f"{url}/v1", "VEIL_API_KEY": "test-key"}


def test_veil_p_keeps_no_secret_and_the_live_result_is_what_the_model_asked_for(
    repo: Path,
) -> None:
    (repo / ".env").write_text(ENV_FILE)
    for n in range(6):  # enough to push the .env results out of a small window
        (repo / f"m{n}.py").write_text(
            "".join(f"def f{n}_{i}(v):\n    return v\n" for i in range(120))
        )
    turns = [
        {"content": "", "tool_calls": [{"name": "bash", "arguments": {"command": "cat .env"}}]},
        {"content": "", "tool_calls": [{"name": "read", "arguments": {"path": ".env"}}]},
        *(
            {"content": "", "tool_calls": [{"name": "read", "arguments": {"path": f"m{n}.py"}}]}
            for n in range(6)
        ),
        {"content": "", "tool_calls": [
            {"name": "veil_expand", "arguments": {"pointer": "call_scripted_1_1"}},
        ]},
        {"content": "The .env holds keys for AWS, GitHub, OpenAI, Anthropic and Stripe."},
    ]  # fmt: skip
    trace = repo / "trace.jsonl"
    with ScriptedServer(turns) as server:
        done = subprocess.run(
            [*VEIL, "-p", f"review the m modules (my token is {CANARIES['github-token']})",
             "--model", "openai-compatible:m", "--approve", "auto", "--window", "7000",
             "--trace", str(trace)],
            cwd=repo, env=env_for(server.url), capture_output=True, text=True, timeout=120,
            check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    sent = [json.dumps(r.body) for r in server.model_requests]
    # live: the model was given the file it asked for, exactly (the prefix does not change)
    assert CANARIES["aws-access-key"] in sent[1] and CANARIES["aws-access-key"] in sent[2]
    # expanded (what Veil stored and re-sends): the placeholder, never the key; the key is only
    # where a result is still shown as the model was given it
    last = server.model_requests[-1].body["messages"]
    results = {m.get("tool_call_id"): str(m.get("content")) for m in last if m["role"] == "tool"}
    expanded = results["call_scripted_9_1"]
    if "is shown in full above" in expanded:  # Veil kept it live: restore it from the store
        store = open_store(f"sqlite:///{repo / '.veil' / 'context.db'}", embedder=HashEmbedder())
        engine = ContextEngine(
            store, session_id="verify", scope=project_scope(repo), embedder=HashEmbedder()
        )
        pointer = expanded.rsplit("; ", 1)[1].rstrip("]")
        expanded = engine.expand(pointer).content
        store.close()
    assert "[secret:aws-access-key" in expanded and CANARIES["aws-access-key"] not in expanded
    holding = {c for c, text in results.items() if CANARIES["aws-access-key"] in text}
    assert holding <= {"call_scripted_1_1", "call_scripted_2_1"}
    first = {
        m.get("tool_call_id"): m.get("content")
        for m in server.model_requests[2].body["messages"]
        if m["role"] == "tool"
    }
    for call in holding:  # shown as recorded while live: the prefix never changes under it
        assert results[call] == first[call]
    assert leaks(repo / ".veil", trace) == {}
    assert "[secret:" in (repo / "trace.jsonl").read_text()


def test_the_claude_code_hook_keeps_no_secret(repo: Path) -> None:
    payload = {
        "session_id": "cc-1",
        "transcript_path": str(repo / "t.jsonl"),
        "cwd": str(repo),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"curl -H 'Authorization: Bearer {CANARIES['openai-key']}' x"},
        "tool_response": {"stdout": ENV_FILE, "stderr": "", "interrupted": False},
        "tool_use_id": "toolu_1",
    }
    prompt = {
        "session_id": "cc-1",
        "transcript_path": str(repo / "t.jsonl"),
        "cwd": str(repo),
        "hook_event_name": "UserPromptSubmit",
        "prompt": f"deploy with STRIPE_SECRET_KEY={CANARIES['stripe-key']}",
    }
    env = {**os.environ, **GIT_ENV, "CLAUDE_PROJECT_DIR": str(repo)}
    for event, data in (("UserPromptSubmit", prompt), ("PostToolUse", payload)):
        done = subprocess.run(
            [*VEIL, "hook", "claude-code", event], input=json.dumps(data), cwd=repo, env=env,
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0 and "internal error" not in done.stderr, done.stderr
    assert (repo / ".veil").exists() and leaks(repo / ".veil") == {}


def test_memory_remember_import_export_keep_no_secret(repo: Path, tmp_path: Path) -> None:
    db = tmp_path / ".veil" / "memory.db"
    leaky = {  # a model that copies the key into a fact: refused, reported
        "facts": [
            fact("user", "uses_tool", "aws",
                 f"The user's AWS key is {CANARIES['aws-access-key']}."),
            fact("user", "prefers", "vim", "The user prefers vim."),
        ],
        "episodes": [],
    }  # fmt: skip
    script = tmp_path / "extract.json"
    script.write_text(json.dumps({"turns": [{"content": json.dumps(leaky)}]}))
    said = f"I prefer vim. My AWS key is {CANARIES['aws-access-key']}, keep it safe."
    done = subprocess.run(
        [*VEIL, "memory", "remember", said, "--db", str(db), "--model", f"scripted:{script}",
         "--embedder", "hash", "--json"],
        cwd=repo, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert len(report["facts"]) == 1  # vim; the fact that copied the key is refused:
    assert [i["reason"] for i in report["invalid"]] == ["fact: holds a secret (aws-access-key)"]
    assert CANARIES["aws-access-key"] not in done.stdout
    export = tmp_path / "export.jsonl"
    subprocess.run(
        [*VEIL, "memory", "export", str(export), "--db", str(db), "--embedder", "hash"],
        cwd=repo, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    # an older export (or another tool's) that holds a secret, imported
    foreign = tmp_path / "foreign.jsonl"
    lines = export.read_text().splitlines()
    evidence = json.loads(lines[1])
    assert evidence["kind"] == "memory.evidence"
    evidence["id"] += "x"
    evidence["payload"]["text"] = f"deploy token {CANARIES['github-token']}"
    foreign.write_text("\n".join([*lines, json.dumps(evidence)]) + "\n")
    imported = subprocess.run(
        [*VEIL, "memory", "import", str(foreign), "--db", str(tmp_path / ".veil" / "copy.db"),
         "--embedder", "hash"],
        cwd=repo, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    assert holds(tmp_path / ".veil", "[secret:github-token")  # the event was imported, redacted
    # a dispute's reason (veil memory dispute, a catalogue verb) that quotes a key
    fact_id = report["facts"][0]
    disputed = subprocess.run(
        [*VEIL, "memory", "dispute", fact_id, f"it was {CANARIES['anthropic-key']}", "--db",
         str(db), "--embedder", "hash", "--json"],
        cwd=repo, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert disputed.returncode == 0, disputed.stderr
    assert json.loads(disputed.stdout)["status"] == "disputed"
    assert CANARIES["anthropic-key"] not in disputed.stdout
    assert leaks(tmp_path / ".veil", export) == {}


def test_http_remember_keeps_no_secret(tmp_path: Path) -> None:
    db = str(tmp_path / ".veil" / "memory.db")
    keys = subprocess.run(
        [*VEIL, "keys", "create", "--db", db, "--scope", "user:a"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    token = keys.stdout.strip()
    script = tmp_path / "extract.json"
    script.write_text(
        json.dumps({"turns": [{"content": json.dumps({"facts": [], "episodes": []})}]})
    )
    proc, url = start_serve("--db", db, "--model", f"scripted:{script}", "--embedder", "hash")
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as c:
            said = f"the staging password is ADMIN_PASSWORD={CANARIES['env-password']}"
            assert c.post("/v1/scopes/user:a/remember", json={"text": said}).status_code == 200
            recall = c.post("/v1/scopes/user:a/recall", json={"query": "staging password"})
            assert CANARIES["env-password"] not in recall.text
    finally:
        stop_serve(proc)
    assert leaks(tmp_path / ".veil") == {}


@pytest.fixture
def session_repo(repo: Path) -> Path:
    """A project with two sessions, the first of which printed a canary."""
    marker = "CANARY-" + _chars(UPPER, 12)  # not a secret format: only a purge removes it
    (repo / "notes.txt").write_text(f"remember {marker}\n")
    for task, path in (("read the notes", "notes.txt"), ("read calc", "calc.py")):
        script = repo / "s.json"
        script.write_text(json.dumps({"turns": [
            {"content": "", "tool_calls": [{"name": "read", "arguments": {"path": path}}]},
            {"content": "Done."},
        ]}))  # fmt: skip
        subprocess.run(
            [*VEIL, "-p", task, "--model", f"scripted:{script}", "--approve", "auto"],
            cwd=repo, env={**os.environ, **GIT_ENV}, capture_output=True, text=True,
            timeout=120, check=True,
        )  # fmt: skip
    (repo / "marker").write_text(marker)
    return repo


def veil_in(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*VEIL, *args], cwd=repo, env={**os.environ, **GIT_ENV}, capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip


def holds(root: Path, text: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def test_sessions_rm_and_purge_match_leave_no_copy(session_repo: Path) -> None:
    marker = (session_repo / "marker").read_text()
    listing = veil_in(session_repo, "sessions").stdout.splitlines()
    assert listing[0].startswith("SESSION") and len(listing) == 3
    first, second = listing[2].split()[0], listing[1].split()[0]  # newest first
    assert holds(session_repo / ".veil", marker)
    assert veil_in(session_repo, "admin", "purge", "--match", marker).returncode == 2  # no tty
    gone = veil_in(session_repo, "admin", "purge", "--match", "CANARY-[A-Z0-9]+", "--yes")
    assert gone.returncode == 0 and "removed" in gone.stdout and marker not in gone.stdout
    assert holds(session_repo / ".veil", marker) == []
    assert veil_in(session_repo, "admin", "check").returncode == 0
    removed = veil_in(session_repo, "sessions", "rm", first)
    assert removed.returncode == 0, removed.stderr
    left = veil_in(session_repo, "sessions").stdout
    assert first not in left and second in left
    assert veil_in(session_repo, "sessions", "rm", "s_nope").returncode == 2
    assert veil_in(session_repo, "admin", "check").returncode == 0
