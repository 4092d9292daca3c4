"""The proxy's figures from its ``proxy.request`` events (``veil.proxy.ledger``) and the exit
summary made of them: tokens as the agent sent them and as forwarded, the provider's cache as it
reported it, and the cost with and without Veil priced so that the provider's caching is never
counted as Veil's saving."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from veil.cli.stats import parse_since, summary
from veil.llm.catalog import Catalog
from veil.proxy.ledger import as_json, conversations, total

T0 = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


def event(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "conversation": "proxy-aaaa",
        "tokens_before": 1000,
        "tokens_sent": 1000,
        "stubbed": 0,
        "evicted": 0,
        "exact": True,
        "overhead_ms": 1.0,
        "model": "claude-sonnet-4-5",
        "host": "claude",
        "results": 2,
    }
    return base | kw


def growing(
    n: int, *, batch_at: int | None = None, shadow: bool = False, measured: bool = True
) -> list[tuple[datetime, dict[str, Any]]]:
    """``n`` requests of a conversation growing by 2,000 tokens each; from ``batch_at`` on Veil
    sends 40% of it (a batch there, the prefix kept after)."""
    out: list[tuple[datetime, dict[str, Any]]] = []
    for k in range(n):
        agent = 10_000 + 2_000 * k
        veil = agent if batch_at is None or k < batch_at else int(0.4 * agent)
        batch = batch_at is not None and k == batch_at
        agent_cached = 0 if k == 0 else agent - 2_000
        sent_cached = 0 if k == 0 or batch else veil - (2_000 if veil == agent else 800)
        forwarded = agent if shadow else veil
        cached = agent_cached if shadow else sent_cached
        usage = {
            "input_tokens": forwarded,
            "cache_read": cached,
            "cache_write": forwarded - cached,
            "output_tokens": 200,
        }
        out.append(
            (
                T0 + timedelta(seconds=k),
                event(
                    tokens_before=agent,
                    tokens_sent=veil,
                    agent_cached=agent_cached,
                    sent_cached=sent_cached,
                    batch=batch,
                    stubbed=3 if batch_at is not None and k >= batch_at else 0,
                    shadow=shadow,
                    usage=usage if measured else None,
                ),
            )
        )
    return out


def test_a_conversation_veil_never_changed_costs_the_same_with_and_without_it() -> None:
    # the provider cached more than the simulation would (say, a second breakpoint): the saving
    # is still exactly nothing
    events = growing(6)
    for _, e in events[1:]:
        e["usage"]["cache_read"] += 500
        e["usage"]["cache_write"] -= 500
    (c,) = conversations(events)
    assert c.tokens_agent == c.tokens_sent == sum(e["tokens_before"] for _, e in events)
    assert c.cost_estimated == pytest.approx(c.cost_without_veil_estimated)
    assert c.cost_estimated > 0


def test_the_forwarded_side_is_the_providers_count_and_the_agents_is_scaled_by_it() -> None:
    events = growing(8, batch_at=4)
    for _, e in events:  # the provider counts 10% more than Veil's estimate
        e["usage"] = {k: int(v * 1.1) for k, v in e["usage"].items()}
    (c,) = conversations(events)
    reported = sum(e["usage"]["input_tokens"] for _, e in events)
    assert c.tokens_sent == reported
    assert c.tokens_agent == pytest.approx(1.1 * sum(e["tokens_before"] for _, e in events), 1e-3)
    assert c.cache_read == sum(e["usage"]["cache_read"] for _, e in events)
    assert c.batches == 1 and c.stubs == 3 and c.requests == 8 and c.measured == 8


def test_a_deep_batch_on_a_long_conversation_costs_less_than_keeping_everything() -> None:
    (c,) = conversations(growing(30, batch_at=10))
    assert c.tokens_sent < 0.6 * c.tokens_agent
    assert c.cost_estimated < c.cost_without_veil_estimated


def test_shadow_mode_prices_what_veil_would_have_sent_against_the_real_bill() -> None:
    events = growing(30, batch_at=10, shadow=True)
    (c,) = conversations(events)
    assert c.shadow
    assert c.tokens_agent == sum(e["usage"]["input_tokens"] for _, e in events)  # measured
    assert c.tokens_sent < c.tokens_agent  # what Veil would have sent
    assert c.cost_estimated < c.cost_without_veil_estimated
    # the real bill is the side that was sent: the agent's
    live = conversations(growing(30, batch_at=10))[0]
    assert c.cost_without_veil_estimated == pytest.approx(live.cost_without_veil_estimated, 0.02)


def test_without_usage_the_figures_are_veils_estimates_and_said_to_be() -> None:
    (c,) = conversations(growing(5, measured=False))
    assert c.measured == 0 and c.tokens_sent == sum(10_000 + 2_000 * k for k in range(5))
    text = "\n".join(summary([c], command="claude", prices_date="2026-12-07"))
    assert "5 requests without usage (Veil's estimate)" in text


def test_a_model_priced_by_its_family_says_so_and_an_unknown_one_is_not_priced() -> None:
    family = conversations([(T0, event(model="claude-opus-9-9", usage={"input_tokens": 1000}))])
    assert family[0].priced_by == {"claude-opus (by family)"}
    unknown = conversations([(T0, event(model="mystery-1", usage={"input_tokens": 1000}))])
    assert unknown[0].unpriced == {"mystery-1"} and unknown[0].cost_estimated == 0
    text = "\n".join(summary(unknown, command="claude", prices_date="2026-12-07"))
    assert "not estimated: no price for mystery-1" in text


def test_an_override_in_the_projects_config_changes_the_price() -> None:
    events = growing(3)
    base = conversations(events)[0].cost_estimated
    prices = {"input": 6.0, "output": 30.0, "cache_write_5m": 7.5, "cache_read": 0.6}
    doubled = Catalog({"claude-sonnet-4-5": prices})
    assert conversations(events, doubled)[0].cost_estimated == pytest.approx(2 * base)


def test_a_request_past_the_long_context_threshold_is_billed_at_the_long_rates() -> None:
    catalog = Catalog({"tiered": {"input": 1.0, "output": 1.0, "long_context_above": 100_000,
                                  "long_input": 2.0, "long_output": 2.0}})  # fmt: skip
    small = event(model="tiered", usage={"input_tokens": 100_000})
    large = event(model="tiered", usage={"input_tokens": 100_001})
    cost = [conversations([(T0, e)], catalog)[0].cost_estimated for e in (small, large)]
    assert cost[1] == pytest.approx(2 * cost[0], 1e-4)


def test_the_summary_says_what_veil_did_and_how_to_resume_through_it() -> None:
    events = growing(12, batch_at=6)
    events[7][1]["expands"] = 1
    events[9][1]["rereads"] = 2
    events[11][1]["compaction"] = True
    events[11][1]["agent_session"] = "0b9c-resume-me"
    lines = summary(conversations(events), command="claude", prices_date="2026-12-07")
    text = "\n".join(lines)
    assert lines[0].startswith("veil claude: 12 requests in 1 conversation, 2 tool results")
    assert "Claude Code sent" in text and "Veil forwarded" in text and "fewer" in text
    assert "1 batch;" in text and "3 results out of the prompt" in text
    assert "1 expanded by the model" in text and "2 re-read or re-run after eviction" in text
    assert "1 compaction by Claude Code" in text
    assert "estimated, list prices of 2026-12-07: claude-sonnet-4" in text
    assert lines[-1] == "  resume  veil claude -- --resume 0b9c-resume-me"


def test_no_tool_result_recognised_is_said_plainly() -> None:
    events = [(T0, event(results=0, usage={"input_tokens": 900}))]
    text = "\n".join(summary(conversations(events), command="codex", prices_date="d"))
    assert "1 requests, 0 tool results recognised" in text


def test_a_subscription_login_makes_the_cost_notional() -> None:
    events = growing(20, batch_at=8)
    for _, e in events:
        e["billing"] = "subscription"
    text = "\n".join(summary(conversations(events), command="claude", prices_date="d"))
    assert "not billed per token, so the cost is notional" in text
    assert "% of tokens" in text


def test_the_json_has_the_same_keys_in_total_and_per_conversation() -> None:
    events = growing(4) + [
        (T0 + timedelta(minutes=1), {**e, "conversation": "proxy-bbbb"}) for _, e in growing(3)
    ]
    found = conversations(events)
    data = as_json(found, "2026-12-07")
    keys = {"requests", "tokens_agent", "tokens_sent", "cache_read", "cache_write", "stubs",
            "expands", "batches", "cost_estimated", "cost_without_veil_estimated"}  # fmt: skip
    assert keys <= set(data["total"])
    assert [c["id"] for c in data["conversations"]] == ["proxy-aaaa", "proxy-bbbb"]
    assert all(keys | {"id", "host", "model", "shadow"} <= set(c) for c in data["conversations"])
    assert data["total"]["requests"] == 7 == total(found).requests
    assert data["total"]["tokens_sent"] == sum(c["tokens_sent"] for c in data["conversations"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [("7d", T0 - timedelta(days=7)), ("24h", T0 - timedelta(hours=24)),
     ("30m", T0 - timedelta(minutes=30)), ("2w", T0 - timedelta(weeks=2)),
     ("2026-12-01", datetime(2026, 12, 1, tzinfo=UTC))],
)  # fmt: skip
def test_since_takes_a_span_or_a_date(text: str, expected: datetime) -> None:
    assert parse_since(text, T0) == expected


def test_since_refuses_what_it_cannot_read_with_one_line() -> None:
    with pytest.raises(ValueError, match="neither a span"):
        parse_since("last tuesday", T0)
