"""How long the provider keeps a request's cached prefix, read from the raw body (the proxy
uses it to tell a cold cache, where a batch is nearly free, from a warm one)."""

from __future__ import annotations

import json
from typing import Any

from veil.proxy.wire import CACHE_TTL_S, cache_ttl


def ttl(body: dict[str, Any], api: Any = "anthropic") -> float:
    raw = json.dumps(body).encode()
    return cache_ttl(api, json.loads(raw), raw)


def test_no_marker_is_the_default_five_minutes() -> None:
    body = {"messages": [{"role": "user", "content": "hi"}]}
    assert ttl(body) == CACHE_TTL_S == 300


def test_the_longest_marker_counts() -> None:
    one_hour = {"type": "ephemeral", "ttl": "1h"}
    body = {
        "system": [{"type": "text", "text": "s", "cache_control": one_hour}],
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
        ]}],
    }  # fmt: skip
    assert ttl(body) == 3600
    compact = json.dumps(body, separators=(",", ":")).encode()
    assert cache_ttl("anthropic", body, compact) == 3600


def test_a_marker_written_inside_a_text_is_not_one() -> None:
    quoted = json.dumps({"cache_control": {"type": "ephemeral", "ttl": "1h"}})
    body = {"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": quoted},
    ]}]}  # fmt: skip
    assert ttl(body) == 300


def test_openai_asks_for_its_retention_in_the_body() -> None:
    assert ttl({"input": [], "prompt_cache_retention": "24h"}, "responses") == 86_400
    assert ttl({"input": []}, "responses") == 300
