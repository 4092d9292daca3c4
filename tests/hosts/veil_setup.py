"""Veil installed into the real agents the way a person installs it: ``veil install`` run as a
subprocess in the repository, on the agent's private home; then what a person does once
(accept Claude Code's workspace trust dialog). Shared by the Claude Code and Codex tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from veil.agent.project import project_root, project_scope

VEIL_BIN = Path(sys.executable).with_name("veil")
FAILING_TEST = "python3 -c 'import sys; print(\"FAILED test_total: assert 4 == 5\"); sys.exit(1)'"
"""A command that fails like a test run (Veil records it as a ``command`` attempt)."""
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider test_total.py"
"""A real test run (a ``test`` attempt: what decides whether an edit before it worked)."""
TEST_TOTAL = "from calc import total\n\n\ndef test_total():\n    assert total(2, 3) == 5\n"


def install(agent: str, repo: Path, home: Path, state: Path, *, portable: bool = False,
            env: dict[str, str] | None = None, uninstall: bool = False) -> str:  # fmt: skip
    """Run ``veil install AGENT`` in ``repo`` with ``HOME=home``; ``portable``: ``veil`` on
    PATH (the committed-files install), else this machine's path to it. Returns stdout."""
    environ = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")}
    environ.update({"HOME": str(home), "VEIL_STATE_DIR": str(state), **(env or {})})
    if portable:
        environ["PATH"] = f"{VEIL_BIN.parent}{os.pathsep}{environ.get('PATH', '')}"
    command = ["--command", "veil"] if portable else ["--command", str(VEIL_BIN)]
    args = [str(VEIL_BIN), "install", agent, *command]
    if uninstall:
        args.append("--uninstall")
    done = subprocess.run(args, cwd=repo, env=environ, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def trust_workspace(home: Path, repo: Path) -> None:
    """What a person does on Claude Code's first start in a repository: accept the trust
    dialog (project settings and ``.mcp.json`` servers apply only then)."""
    path = home / ".claude.json"
    data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    project = data.setdefault("projects", {}).setdefault(str(repo), {})
    project["hasTrustDialogAccepted"] = True
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


def seed_memory(repo: Path, facts: list[tuple[str, str, str]]) -> None:
    """Facts in the project's long-term memory, through the public API (the model's answer is
    scripted; nothing else is faked)."""
    from veil.memory import Memory

    root = project_root(repo)
    answer = json.dumps(
        {
            "facts": [
                {"subject": s, "relation": r, "object": o, "confidence": 0.9} for s, r, o in facts
            ]
        }
    )

    def complete(messages: object, **_: object) -> str:
        return answer

    (root / ".veil").mkdir(exist_ok=True)
    with Memory(root / ".veil" / "memory.db", complete=complete) as memory:
        report = memory.remember(
            ". ".join(f"{s} {r} {o}" for s, r, o in facts), user_id=project_scope(root)
        )
    assert report.error is None and len(report.facts) == len(facts), report


def tape_kinds(repo: Path) -> dict[str, int]:
    """Event kind → count on the project's ``.veil/context.db``."""
    import sqlite3

    db = repo / ".veil" / "context.db"
    if not db.exists():
        return {}
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT kind, count(*) FROM tape_events GROUP BY kind").fetchall()
    return {str(k): int(n) for k, n in rows}
