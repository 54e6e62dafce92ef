"""What the fleet's Redis users share: the failures a Redis call can end in, and a bound
on one call's time."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable
from typing import Any

__all__ = ["bounded", "redis_failures"]


def redis_failures() -> tuple[type[BaseException], ...]:
    """The exceptions of a Redis call that mean "Redis cannot be asked now".

    ValueError and RecursionError: redis-py's pure-Python parser on a malformed or endlessly
    nested reply. Only the kind of failure is ever kept by the callers: Redis's text may
    hold its URL, password included, and no exception of ours chains it.
    """
    from redis.exceptions import RedisError

    return (asyncio.TimeoutError, OSError, RedisError, ValueError, RecursionError)


async def bounded(command: Awaitable[Any], seconds: float) -> Any:
    """``await command``, at most ``seconds`` (asyncio.TimeoutError past them)."""
    if sys.version_info >= (3, 11):
        # asyncio.timeout runs the call in this task; wait_for makes a task of it, which
        # costs about 0.05 ms a call, a tenth of a claim on loopback
        async with asyncio.timeout(seconds):
            return await command
    return await asyncio.wait_for(command, seconds)
