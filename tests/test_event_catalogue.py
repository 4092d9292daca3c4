"""The catalogue of event kinds: every kind Veil appends is declared by its layer's events
module (a ``Literal`` of names, one frozen payload dataclass per kind) and registered with the
tape on import. ``python tests/test_event_catalogue.py`` prints the table docs/architecture.md
carries ("Event catalogue")."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from veil.tape.codec import NoPayload
from veil.tape.kinds import EventKind, registry

DECLARED_IN = {
    "veil.memory.events": "memory",
    "veil.context.events": "context",
    "veil.convergence.events": "convergence",
    "veil.agent.sessions": "agent",
    "veil.clients.claude_code_state": "clients",
    "veil.proxy.events": "proxy",
    "veil.server.keys": "server",
    "veil.integrations.openai_agents": "integrations",
}
"""The module that declares each layer's kinds (its ``KINDS``)."""


def catalogue() -> list[tuple[str, str, str, EventKind[Any]]]:
    """(layer, module, name, kind) for every kind Veil declares, in declaration order."""
    out: list[tuple[str, str, str, EventKind[Any]]] = []
    for module, layer in DECLARED_IN.items():
        kinds: tuple[EventKind[Any], ...] = importlib.import_module(module).KINDS
        out.extend((layer, module, kind.name, kind) for kind in kinds)
    return out


def test_every_kind_is_declared_once_frozen_and_registered() -> None:
    found = catalogue()
    names = [name for _, _, name, _ in found]
    assert len(names) == len(set(names)) == 41
    known = registry()
    for _, _, name, kind in found:
        assert known[name] is kind
        params = getattr(kind.payload_type, "__dataclass_params__", None)
        assert dataclasses.is_dataclass(kind.payload_type) and params is not None and params.frozen
    # Whatever else is registered is a test's or a benchmark's own (the contract's note.*, a
    # test's test.*, bench.ping): no kind of Veil's own code escapes the catalogue.
    for name in set(known) - set(names):
        module = known[name].payload_type.__module__
        generic = known[name].payload_type is NoPayload  # a test's bare kind (probe.write)
        own = module.startswith("veil.") and module != "veil.tape.contract_notes"
        own = own and not generic
        assert not own, f"{name} ({module}) is registered but not in the catalogue"


def test_a_stored_payload_is_read_whatever_it_lacks() -> None:
    """Reading never validates: an old payload missing every key still decodes."""
    for _, _, _, kind in catalogue():
        kind.decode({})
        kind.decode({"a_key_no_version_wrote": 1})


def table() -> str:
    lines = ["| kind | layer | payload |", "| --- | --- | --- |"]
    for layer, _, name, kind in catalogue():
        cls = kind.payload_type
        keep = " (keeps other keys)" if kind.extra == "keep" else ""
        lines.append(f"| `{name}` | {layer} | `{cls.__module__}.{cls.__qualname__}`{keep} |")
    return "\n".join(lines)


def test_docs_architecture_shows_this_catalogue() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text()
    assert table() in doc, "docs/architecture.md's event table is stale; paste:\n" + table()


if __name__ == "__main__":
    print(table())
