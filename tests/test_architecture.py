"""The layer rule of docs/architecture.md, checked on the real import graph of ``src/veil``.

Every import counts: absolute and relative, at module level or inside a function (a lazy import
is still a dependency). Each unit — a package under ``src/veil`` or a top-level module — may
import only the units :data:`ALLOWED` lists for it; nothing lists ``testing`` (no production
code imports the shipped fakes) or ``integrations`` (only its own modules import it). Module
level imports may not form a cycle. LLM SDKs are imported only by ``llm``, agent frameworks
only by ``integrations``. The table in docs/architecture.md is rendered from :data:`ALLOWED`
and must match it. The self-tests feed the checks a violating tree and see each one fail.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "veil"
DOC = ROOT / "docs" / "architecture.md"

LOWEST = {"clock", "tokens", "extras"}
ALLOWED: dict[str, set[str]] = {
    "veil": {"memory"},  # the package root re-exports Memory lazily
    "clock": set(),
    "tokens": set(),
    "redaction": set(),
    "config_file": set(),
    "dialects": set(),
    "hosts": LOWEST | {"llm", "context"},
    "extras": set(),
    "embed": {"extras"},
    "tape": {"clock", "embed", "redaction", "config_file", "extras"},
    "memory": LOWEST | {"embed", "tape", "redaction"},
    "context": LOWEST | {"embed", "tape"},
    "convergence": LOWEST | {"tape"},
    "llm": LOWEST | {"dialects"},
    "verbs": LOWEST | {"tape", "memory", "context", "convergence"},
    "agent": LOWEST
    | {"embed", "tape", "memory", "context", "convergence", "llm", "verbs", "dialects"},
    "tui": LOWEST | {"embed", "tape", "memory", "context", "convergence", "llm", "agent"},
    "server": LOWEST
    | {
        "veil",
        "embed",
        "tape",
        "memory",
        "context",
        "convergence",
        "llm",
        "agent",
        "clients",
        "verbs",
    },
    "clients": LOWEST | {"embed", "tape", "memory", "context", "convergence", "agent", "hosts"},
    "integrations": LOWEST | {"embed", "tape", "memory", "context", "convergence", "verbs"},
    "proxy": LOWEST | {"embed", "tape", "context", "redaction", "dialects", "llm", "hosts"},
    "replay": LOWEST | {"embed", "tape", "context", "proxy", "hosts"},
    "launch": LOWEST | {"hosts", "clients", "llm", "context"},
    "cli": LOWEST
    | {
        "config_file",
        "veil",
        "embed",
        "tape",
        "memory",
        "context",
        "convergence",
        "llm",
        "agent",
        "tui",
        "server",
        "clients",
        "proxy",
        "replay",
        "verbs",
        "hosts",
        "launch",
    },
    "testing": LOWEST | {"embed", "tape", "llm"},
}
"""unit → the units it may import (besides itself)."""

LLM_SDKS = {"openai", "anthropic", "ollama", "litellm", "google", "mistralai", "cohere"}
FRAMEWORKS = {"pydantic_ai", "agents"}
EXTERNAL_OWNERS: dict[str, set[str]] = {"llm": LLM_SDKS, "integrations": FRAMEWORKS}


def module_name(src: Path, path: Path) -> str:
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def unit_of(module: str) -> str:
    """``veil.memory.recall`` → ``memory``; ``veil.clock`` → ``clock``; ``veil`` → ``veil``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _top_level(tree: ast.Module) -> Iterable[ast.AST]:
    """Nodes executed at import time: not function bodies, not ``if TYPE_CHECKING``."""
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def import_graph(src: Path, *, module_level: bool = False) -> dict[str, dict[str, str]]:
    """module → {imported name: how}, where a Veil import is resolved to the module it names
    (``from veil.tape import Event`` → ``veil.tape``; ``from . import x`` → the sibling module
    ``x`` when it is one) and other imports keep their top-level name."""
    files = {module_name(src, p): p for p in sorted(src.rglob("*.py"))}
    root = src.name
    graph: dict[str, dict[str, str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        nodes = _top_level(tree) if module_level else ast.walk(tree)
        found: dict[str, str] = {}
        for node in nodes:
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                targets = [
                    f"{target}.{alias.name}" if f"{target}.{alias.name}" in files else target
                    for alias in node.names
                ]
            else:
                continue
            line = f"{path.relative_to(src.parent)}:{node.lineno}"
            for target_name in targets:
                if target_name == root or target_name.startswith(root + "."):
                    name = target_name
                    while name not in files and "." in name:
                        name = name.rpartition(".")[0]
                    if name != module:
                        found.setdefault(name, line)
                else:
                    found.setdefault(target_name.split(".")[0], line)
        graph[module] = found
    return graph


def violations(
    graph: Mapping[str, Mapping[str, str]],
    allowed: Mapping[str, set[str]],
    *,
    root: str = "veil",
) -> list[str]:
    """Every import a unit's rule does not allow, as ``file:line: a imports b (unit)``."""
    out: list[str] = []
    owned = {lib: owner for owner, libs in EXTERNAL_OWNERS.items() for lib in libs}
    for module, imported in sorted(graph.items()):
        unit = unit_of(module)
        if unit not in allowed:
            out.append(f"{module}: unit {unit!r} has no rule in ALLOWED")
            continue
        for name, where in sorted(imported.items()):
            if name == root or name.startswith(root + "."):
                target = unit_of(name)
                if target != unit and target not in allowed[unit]:
                    out.append(f"{where}: {module} imports {name} ({unit} → {target})")
            elif name in owned and owned[name] != unit:
                out.append(f"{where}: {module} imports {name} (only {owned[name]} may)")
    return out


def cycles(graph: Mapping[str, Mapping[str, str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(start, iter(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next((c for c in children if c in graph), None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def rule_table(allowed: Mapping[str, set[str]]) -> str:
    lines = ["| unit | may import |", "| --- | --- |"]
    for unit in sorted(allowed):
        deps = ", ".join(f"`{d}`" for d in sorted(allowed[unit])) or "nothing of Veil"
        lines.append(f"| `{unit}` | {deps} |")
    return "\n".join(lines)


BEGIN, END = "<!-- rule:begin -->", "<!-- rule:end -->"


# ---- the real tree ---------------------------------------------------------------------


def test_every_import_follows_the_layer_rule() -> None:
    assert violations(import_graph(SRC), ALLOWED) == []


def test_no_module_level_import_cycle() -> None:
    assert cycles(import_graph(SRC, module_level=True)) == []


def test_every_unit_has_a_rule() -> None:
    units = {unit_of(m) for m in import_graph(SRC)}
    assert units == set(ALLOWED), units ^ set(ALLOWED)


def test_the_documented_rule_is_the_checked_rule() -> None:
    text = DOC.read_text()
    assert BEGIN in text and END in text, f"{DOC} lost its rule markers"
    documented = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert documented == rule_table(ALLOWED), (
        "docs/architecture.md's table differs from ALLOWED; paste:\n" + rule_table(ALLOWED)
    )


def test_package_code_never_reads_shared_data() -> None:
    for path in SRC.rglob("*.py"):
        assert "shared/data" not in path.read_text(), path


# ---- the checks fail on a violating tree -------------------------------------------------


def write(root: Path, files: Mapping[str, str]) -> Path:
    src = root / "veil"
    for name, body in files.items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    return src


@pytest.fixture
def bad_tree(tmp_path: Path) -> Path:
    return write(
        tmp_path,
        {
            "__init__.py": "",
            "clock.py": "",
            "context/__init__.py": "",
            "context/engine.py": "from ..agent import harness\n",  # relative, upward
            "context/lazy.py": "def f():\n    import veil.testing\n",  # lazy, production→fakes
            "agent/__init__.py": "",
            "agent/harness.py": "import openai\nfrom veil.context import engine\n",
            "tui/__init__.py": "",
            "tui/app.py": "from veil.cli.main import main\n",
            "cli/__init__.py": "",
            "cli/main.py": "from veil.integrations.pydantic_ai import x\n",
            "integrations/__init__.py": "",
            "integrations/pydantic_ai.py": "import pydantic_ai\n",
            "testing.py": "",
            "a.py": "from veil import b\n",
            "b.py": "import veil.a\n",
        },
    )


RULES_FOR_BAD_TREE: dict[str, set[str]] = {
    "veil": set(),
    "clock": set(),
    "context": {"clock"},
    "agent": {"context", "llm"},
    "tui": {"agent"},
    "cli": {"agent", "tui"},
    "integrations": {"context"},
    "testing": set(),
    "a": {"b"},
    "b": set(),
}


def test_the_rule_catches_relative_lazy_sdk_and_framework_imports(bad_tree: Path) -> None:
    found = violations(import_graph(bad_tree), RULES_FOR_BAD_TREE)
    text = "\n".join(found)
    assert "veil.context.engine imports veil.agent.harness (context → agent)" in text
    assert "veil.context.lazy imports veil.testing (context → testing)" in text
    assert "veil.agent.harness imports openai (only llm may)" in text
    assert "veil.tui.app imports veil.cli.main (tui → cli)" in text
    assert "veil.cli.main imports veil.integrations.pydantic_ai (cli → integrations)" in text
    assert "veil.b imports veil.a (b → a)" in text
    assert not any("pydantic_ai (only" in line for line in found)  # its owner may
    assert len(found) == 6, found


def test_an_empty_rule_set_is_itself_a_violation(bad_tree: Path) -> None:
    assert violations(import_graph(bad_tree), {}) != []


def test_the_cycle_check_finds_a_cycle(bad_tree: Path) -> None:
    found = sorted(cycles(import_graph(bad_tree, module_level=True)))
    assert found == [["veil.a", "veil.b"], ["veil.agent.harness", "veil.context.engine"]]
    assert cycles({"x": {}, "y": {"x": ""}}) == []


def test_a_function_body_import_breaks_no_cycle_rule(tmp_path: Path) -> None:
    src = write(
        tmp_path,
        {"__init__.py": "", "a.py": "import veil.b\n", "b.py": "def f():\n    import veil.a\n"},
    )
    assert cycles(import_graph(src, module_level=True)) == []
    assert "veil.a" in import_graph(src)["veil.b"]  # but it is still a dependency


if __name__ == "__main__":  # print the table for docs/architecture.md
    sys.stdout.write(rule_table(ALLOWED) + "\n")
