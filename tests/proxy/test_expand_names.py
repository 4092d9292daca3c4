"""The name a stub gives Veil's expand is the one the request offers the model
(:func:`veil.hosts.expand_offered`): a stub must never name a tool the model lacks."""

from __future__ import annotations

from veil.hosts import expand_offered


def test_the_offered_name_is_named() -> None:
    assert expand_offered(["Read", "mcp__veil__expand"], "") == "mcp__veil__expand"
    assert expand_offered(["mcp__plugin_veil_veil__expand"], "") == "mcp__plugin_veil_veil__expand"
    assert expand_offered(["mcp_veil_expand"], "") == "mcp_veil_expand"  # Gemini CLI
    assert expand_offered(["veil_expand"], "") == "veil_expand"  # opencode, pi, the adapters


def test_a_namespaced_tool_is_named_as_the_model_calls_it() -> None:
    assert expand_offered(["mcp__veil.expand"], "") == "mcp__veil__expand"  # Codex


def test_a_deferred_tool_is_found_in_the_first_messages() -> None:
    plugin = "deferred tools:\\n- mcp__plugin_veil_veil__expand\\n"
    assert expand_offered(["ToolSearch"], plugin) == "mcp__plugin_veil_veil__expand"
    assert expand_offered(["ToolSearch"], "- mcp__veil__expand\n") == "mcp__veil__expand"
    assert expand_offered(["tool_search"], "namespaces:\n- mcp__veil\n") == "mcp__veil__expand"


def test_no_expand_offered_is_none() -> None:
    assert expand_offered(["Read", "Bash"], "nothing of Veil's here") is None
    assert expand_offered([], "") is None
