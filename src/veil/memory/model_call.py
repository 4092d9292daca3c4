"""Calling the user's ``complete`` with a timeout, sync or async, whatever it is."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

from veil.memory.extraction import EXTRACTION_SCHEMA

Complete = Callable[..., "str | Awaitable[str]"]
"""``complete(messages: list[dict], *, json_schema: dict | None) -> str`` (sync or async)."""


def call_sync(
    complete: Complete,
    messages: Sequence[dict[str, str]],
    timeout: float,
    *,
    schema: dict[str, Any] | None = None,
) -> str:
    """Run ``complete`` in a worker thread and give up after ``timeout`` seconds (the thread
    is abandoned, its eventual answer ignored); an awaitable result is awaited."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="veil-complete")
    try:
        future = pool.submit(
            complete, messages, json_schema=EXTRACTION_SCHEMA if schema is None else schema
        )
        result: Any = future.result(timeout=timeout)
        if inspect.isawaitable(result):
            result = asyncio.run(_await(result, timeout))
    except concurrent.futures.TimeoutError:
        raise TimeoutError(f"the model did not answer within {timeout:g} s") from None
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return cast(str, result)


async def call_async(complete: Complete, messages: Sequence[dict[str, str]], timeout: float) -> str:
    try:
        if inspect.iscoroutinefunction(complete) or inspect.iscoroutinefunction(
            getattr(complete, "__call__", None)  # noqa: B004 - async __call__ objects
        ):
            pending: Any = complete(messages, json_schema=EXTRACTION_SCHEMA)
            result: Any = await asyncio.wait_for(pending, timeout)
        else:
            result = await asyncio.wait_for(
                asyncio.to_thread(complete, messages, json_schema=EXTRACTION_SCHEMA), timeout
            )
            if inspect.isawaitable(result):
                result = await asyncio.wait_for(result, timeout)
    except TimeoutError:
        raise TimeoutError(f"the model did not answer within {timeout:g} s") from None
    return cast(str, result)


async def _await(awaitable: Awaitable[Any], timeout: float) -> Any:
    return await asyncio.wait_for(awaitable, timeout)
