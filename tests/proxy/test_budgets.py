"""The budget the proxy keeps, per host and model (``veil.hosts``), against the hosts' own rules
as observed on the pinned binaries: just below where the host compacts, never into a dearer
long-context price tier, moved by the host's own settings; and the model table behind it."""

from __future__ import annotations

import pytest

from veil.context.budget import reply_reserve, request_budget
from veil.hosts import HOSTS
from veil.hosts.claude_code import compaction as claude_compaction
from veil.llm.catalog import CATALOG, Catalog, cost_usd

CLAUDE, CODEX = HOSTS["claude"], HOSTS["codex"]


@pytest.mark.parametrize(
    ("env", "threshold"),
    [
        ({}, 967_000),  # Claude Code 2.1.332 on claude-opus-5-5 (1M): what its /context shows
        ({"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "200000"}, 167_000),
        ({"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "200k"}, 167_000),
        ({"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "50000"}, 67_000),  # raised to 100k
        ({"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}, 490_000),
        ({"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "99"}, 967_000),  # can only lower it
        ({"CLAUDE_CODE_DISABLE_1M_CONTEXT": "1"}, 167_000),
        ({"DISABLE_AUTO_COMPACT": "1"}, None),
        ({"DISABLE_COMPACT": "true"}, None),
    ],
)
def test_where_claude_code_compacts(env: dict[str, str], threshold: int | None) -> None:
    model = "claude-opus-5-5"
    window = CLAUDE.window(model, CATALOG.lookup(model).context_window, env)  # type: ignore[union-attr]
    assert claude_compaction(model, window, env) == threshold


def test_the_budget_is_just_below_the_hosts_compaction() -> None:
    assert CLAUDE.budget("claude-opus-5-5", {}, CATALOG) == 967_000 - reply_reserve(1_000_000)
    # Codex compacts at 90% of its window: gpt-5.5 has 272k; gpt-6.2-sol's 1.05M window is
    # billed at twice the input rate above 272k input tokens, so its budget stops there
    assert CODEX.budget("gpt-5.5", {}, CATALOG) == 244_800 - reply_reserve(272_000)
    assert CODEX.budget("gpt-6.2-sol", {}, CATALOG) == 272_000
    limited = {"CODEX_AUTO_COMPACT_TOKEN_LIMIT": "100000"}
    assert CODEX.budget("gpt-5.5", limited, CATALOG) == 100_000 - reply_reserve(272_000)


def test_never_into_a_dearer_long_context_tier() -> None:
    """Sonnet 4.5 with its 1M beta is billed at the long-context rates above 200k input."""
    big = {"claude-sonnet-4-5": {"window": 1_000_000}}
    assert CLAUDE.budget("claude-sonnet-4-5-20250929", {}, Catalog(big)) == 200_000
    price = cost_usd("claude-sonnet-4-5-20250929", 250_000, 0)
    assert price == pytest.approx(250_000 * 6.0 / 1e6)  # the whole request at the long rate


def test_a_model_the_table_does_not_name_is_priced_by_its_family() -> None:
    info = CATALOG.lookup("claude-opus-9-9")
    assert info is not None and info.by_family and info.name == "claude-opus"
    default = CATALOG.lookup("claude-opus-5-5")  # the pinned Claude Code's default, by name
    assert default is not None and not default.by_family and default.cache_read == 0.2
    named = CATALOG.lookup("claude-haiku-4-5-20251001")
    assert named is not None and not named.by_family


def test_window_and_reserve_make_the_budget() -> None:
    assert request_budget(50_000) == 40_000
    assert request_budget(1_000_000) == 1_000_000 - 16_000


def test_an_override_needs_known_keys() -> None:
    with pytest.raises(ValueError, match="unknown key 'inptu'"):
        Catalog({"gpt-5": {"inptu": 1.0}})
    assert Catalog({"gpt-5": {"input": 9.0}}).lookup("gpt-5").input_usd_per_mtok == 9.0  # type: ignore[union-attr]
