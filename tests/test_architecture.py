"""The one-way dependency rule of docs/architecture.md, checked on the source tree.

memory/, context/ and convergence/ never import agent/, cli/, tui/, server/ or an LLM SDK;
tape/ and embed/ import nothing above them; the installed package never needs shared/ data.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "veil"
LLM_SDKS = {"openai", "anthropic", "ollama", "litellm", "google", "mistralai", "cohere"}
UPPER = {
    "veil.agent",
    "veil.cli",
    "veil.tui",
    "veil.server",
    "veil.llm",
    "veil.clients",
    "veil.integrations",
}
RULES: dict[str, set[str]] = {
    "memory": UPPER,
    "context": UPPER,
    "convergence": UPPER,
    "tape": UPPER | {"veil.memory", "veil.context", "veil.convergence"},
    "embed": UPPER | {"veil.memory", "veil.context", "veil.convergence", "veil.tape"},
    "llm": {
        "veil.agent",
        "veil.cli",
        "veil.tui",
        "veil.server",
        "veil.memory",
        "veil.context",
        "veil.convergence",
    },
    "agent": {"veil.cli", "veil.tui", "veil.server", "veil.clients", "veil.integrations"},
    "clients": {"veil.cli", "veil.tui", "veil.server", "veil.integrations"},
    "server": {"veil.cli", "veil.tui", "veil.integrations"},
    "integrations": {"veil.cli", "veil.tui", "veil.server", "veil.clients", "veil.agent"},
}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def violations(package: str, banned: set[str]) -> list[str]:
    out: list[str] = []
    for path in sorted((SRC / package).rglob("*.py")):
        for name in imports_of(path):
            top = name.split(".")[0]
            sdk = top in LLM_SDKS and package != "llm"
            if sdk or any(name == b or name.startswith(b + ".") for b in banned):
                out.append(f"{path.relative_to(SRC)} imports {name}")
    return out


@pytest.mark.parametrize("package", sorted(RULES))
def test_lower_layers_do_not_import_upper_layers(package: str) -> None:
    assert violations(package, RULES[package]) == []


FRAMEWORKS = {"pydantic_ai", "agents"}
"""The agent frameworks the adapters wrap (extras ``veil[pydantic-ai]``, ``veil[agents]``)."""


def test_only_the_adapters_import_the_frameworks_and_nothing_imports_the_adapters() -> None:
    found: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        inside = path.relative_to(SRC).parts[0] == "integrations"
        for name in imports_of(path):
            if not inside and (name.split(".")[0] in FRAMEWORKS or name.startswith("veil.integ")):
                found.append(f"{path.relative_to(SRC)} imports {name}")
    assert found == []


def test_the_rule_detects_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import openai\nfrom veil.agent.loop import run\n")
    assert imports_of(bad) == {"openai", "veil.agent.loop"}


def test_package_code_never_reads_shared_data() -> None:
    for path in SRC.rglob("*.py"):
        assert "shared/data" not in path.read_text(), path
