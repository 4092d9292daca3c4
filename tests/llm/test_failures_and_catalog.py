"""The retry policy, failure classification and the model catalog, without a server."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.llm.conftest import Sleeps
from veil.dialects.overflow import is_overflow_text
from veil.llm import catalog
from veil.llm.failures import (
    Failure,
    RetryPolicy,
    retry_after,
    status_failure,
    stream_with_retries,
)
from veil.llm.messages import ContextOverflow, ProviderError, StreamEvent, TextDelta
from veil.llm.tool_arguments import decode_arguments


class Flaky(Exception):
    pass


def flaky_stream(
    failures: int, *, after_first_event: bool = False
) -> tuple[list[int], Callable[[], Iterator[StreamEvent]]]:
    calls: list[int] = []

    def open_stream() -> Iterator[StreamEvent]:
        calls.append(1)
        if after_first_event:
            yield TextDelta("partial")
        if len(calls) <= failures:
            raise Flaky("try later")
        yield TextDelta("ok")

    return calls, open_stream


def classify(exc: Exception) -> Failure | None:
    return Failure(str(exc), retryable=True) if isinstance(exc, Flaky) else None


def test_backoff_doubles_and_is_capped() -> None:
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=3.0)
    assert [policy.delay(n) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert policy.delay(0, hint_s=2.5) == 2.5 and policy.delay(0, hint_s=99) == 3.0


def test_retries_until_success_within_the_bound(sleeps: Sleeps) -> None:
    calls, open_stream = flaky_stream(2)
    events = list(stream_with_retries(open_stream, classify, RetryPolicy(2, sleep=sleeps)))
    assert events == [TextDelta("ok")] and len(calls) == 3 and len(sleeps.waits) == 2


def test_gives_up_after_max_retries(sleeps: Sleeps) -> None:
    calls, open_stream = flaky_stream(10)
    with pytest.raises(ProviderError, match="after 3 attempts") as info:
        list(stream_with_retries(open_stream, classify, RetryPolicy(2, sleep=sleeps)))
    assert info.value.retryable and len(calls) == 3


def test_never_retries_once_something_was_yielded(sleeps: Sleeps) -> None:
    calls, open_stream = flaky_stream(1, after_first_event=True)
    seen: list[StreamEvent] = []
    with pytest.raises(ProviderError):
        seen.extend(stream_with_retries(open_stream, classify, RetryPolicy(5, sleep=sleeps)))
    assert seen == [TextDelta("partial")] and len(calls) == 1 and sleeps.waits == []


def test_unrecognised_exceptions_propagate_unchanged(sleeps: Sleeps) -> None:
    def broken() -> Iterator[StreamEvent]:
        raise KeyError("bug")
        yield TextDelta("unreachable")

    with pytest.raises(KeyError):
        list(stream_with_retries(broken, classify, RetryPolicy(5, sleep=sleeps)))
    assert sleeps.waits == []


def test_classification() -> None:
    assert status_failure("x", 429, "slow").retryable
    assert status_failure("x", 503, "busy").retryable
    assert not status_failure("x", 400, "bad").retryable
    overflow = status_failure("x", 400, "bad", code="context_length_exceeded")
    assert overflow.overflow and not overflow.retryable
    # A 5xx that mentions the context is a server problem, not an overflow.
    assert not status_failure("x", 500, "context window cache failed").overflow
    assert status_failure("x", None, "Overloaded").retryable
    assert status_failure("x", 200, "rate limit hit").retryable  # an error event in a stream
    assert status_failure("x", 429, "", headers={"retry-after": "7"}).retry_after_s == 7.0


def test_retry_after_forms() -> None:
    assert retry_after({"retry-after-ms": "1500"}) == 1.5
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None
    assert retry_after({}) is None


@pytest.mark.parametrize(
    "text",
    [
        "This model's maximum context length is 8192 tokens",
        "The decoder prompt (length 9000) is longer than the maximum model length of 8192.",
        "the request exceeds the available context size, try increasing it",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 1 + 2 > 2",
    ],
)
def test_overflow_texts(text: str) -> None:
    assert is_overflow_text(text)


def test_overflow_in_the_retry_loop_raises_context_overflow(sleeps: Sleeps) -> None:
    def overflowing() -> Iterator[StreamEvent]:
        raise Flaky("too big")
        yield TextDelta("unreachable")

    def as_overflow(exc: Exception) -> Failure:
        return Failure(str(exc), retryable=False, overflow=True)

    with pytest.raises(ContextOverflow, match="too big"):
        list(stream_with_retries(overflowing, as_overflow, RetryPolicy(5, sleep=sleeps)))
    assert sleeps.waits == []


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gpt-4.1-mini-2025-04-14", 1_047_576),
        ("gpt-4o-2024-08-06", 128_000),
        ("o4-mini", 200_000),
        ("claude-sonnet-4-6", 1_000_000),
        ("claude-sonnet-4-5-20250929", 200_000),
        ("claude-opus-5-5", 1_000_000),
        ("qwen2.5-coder:7b", 32_768),
        ("Qwen/Qwen2.5-7B-Instruct", 32_768),
        ("meta-llama/llama-3.1-70b-instruct", 131_072),
        ("llama3:8b", 8_192),
        ("my-own-finetune", catalog.DEFAULT_CONTEXT_WINDOW),
    ],
)
def test_context_windows(model: str, window: int) -> None:
    assert catalog.context_window(model) == window


def test_prices() -> None:
    assert catalog.cost_usd("gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert catalog.cost_usd("gpt-4o", 1_000_000, 0) == pytest.approx(2.5)  # not gpt-4's price
    assert catalog.cost_usd("qwen2.5:7b", 10**6, 10**6) == 0.0
    assert catalog.cost_usd("claude-haiku-4-5", 0, 0, cache_read_tokens=10**6) == pytest.approx(0.1)
    assert catalog.max_output_tokens("claude-3-haiku-20240307") == 4_096


def test_decode_arguments() -> None:
    assert decode_arguments('{"a": 1}') == {"a": 1}
    assert decode_arguments("  ") == {}
    assert decode_arguments("[1]") == {"_raw": "[1]"}
    assert decode_arguments('{"a": ') == {"_raw": '{"a": '}
