"""Provider failures: classify them (retry, context overflow, give up) and retry with backoff.

Both SDK providers turn their SDK's exceptions into a :class:`Failure` and hand a stream factory to
:func:`stream_with_retries`, so the policy lives in one place:

- a retryable failure (HTTP 408/409/429/5xx, a dropped connection, a timeout) is retried with
  exponential backoff — but only while nothing has been yielded yet: once a delta has reached the
  caller, replaying the request would show it twice, so a mid-stream failure is raised instead;
- the total is bounded: at most ``1 + max_retries`` attempts and ``max_retries`` sleeps of at
  most ``max_delay_s`` each (a server's ``Retry-After`` is honoured up to that cap);
- a context overflow becomes :class:`ContextOverflow` at once (retrying the same request cannot
  help; the loop evicts and tries again); anything else becomes a :class:`ProviderError`.

The SDKs' own retries are switched off (``max_retries=0``) so the bound is ours and testable: the
sleep function is injectable and tests pass one that records instead of sleeping.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from veil.dialects.overflow import is_overflow_text
from veil.llm.messages import ContextOverflow, ProviderError, StreamEvent

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


@dataclass(frozen=True)
class Failure:
    """One failed attempt, classified. ``retry_after_s`` is the server's hint, if it gave one."""

    message: str
    retryable: bool
    overflow: bool = False
    retry_after_s: float | None = None


def status_failure(
    label: str,
    status: int | None,
    message: str,
    *,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Failure:
    """Classify an HTTP error (``status`` None or < 400: an error event inside a 200 stream)."""
    if status is not None and status < 400:
        status = None
    text = f"{label}: HTTP {status}: {message}" if status else f"{label}: {message}"
    server_side = status is not None and (status == 429 or status >= 500)
    if not server_side and is_overflow_text(f"{code or ''} {message}"):
        return Failure(text, retryable=False, overflow=True)
    retryable = status in RETRYABLE_STATUS or (
        status is None and is_transient_text(f"{code or ''} {message}")
    )
    return Failure(text, retryable=retryable, retry_after_s=retry_after(headers or {}))


def is_transient_text(message: str) -> bool:
    """Stream error events carry no status; these words mean "try again later"."""
    return bool(re.search(r"overloaded|rate.?limit|temporar|unavailable|try again", message, re.I))


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or a numeric ``retry-after`` header; None otherwise."""
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return max(0.0, float(ms) / 1000)
        if (s := headers.get("retry-after")) is not None:
            return max(0.0, float(s))
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff
    return None


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff: attempt ``n`` (0-based) waits ``base * 2**n``, capped."""

    max_retries: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)

    def delay(self, attempt: int, hint_s: float | None = None) -> float:
        """The wait before retry ``attempt``: the server's hint if given, else our backoff."""
        own = self.base_delay_s * (2**attempt)
        return min(self.max_delay_s, hint_s if hint_s is not None else own)


def stream_with_retries(
    open_stream: Callable[[], Iterator[StreamEvent]],
    classify: Callable[[Exception], Failure | None],
    policy: RetryPolicy,
) -> Iterator[StreamEvent]:
    """Yield ``open_stream()``'s events, retrying retryable failures before the first event.

    ``classify`` returns None for exceptions it does not recognise; those propagate unchanged
    (they are bugs, not provider failures).
    """
    attempt = 0
    while True:
        started = False
        try:
            for event in open_stream():
                started = True
                yield event
            return
        except ProviderError:
            raise
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            if failure.overflow:
                raise ContextOverflow(failure.message) from exc
            if failure.retryable and not started and attempt < policy.max_retries:
                policy.sleep(policy.delay(attempt, failure.retry_after_s))
                attempt += 1
                continue
            suffix = f" (after {attempt + 1} attempts)" if attempt else ""
            raise ProviderError(failure.message + suffix, retryable=failure.retryable) from exc
