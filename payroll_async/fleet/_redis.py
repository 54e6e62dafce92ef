"""What the fleet's Redis users share: the failures a Redis call can end in (a call's time
is bounded by ``_core._clock.bounded``)."""

from __future__ import annotations

import asyncio

__all__ = ["redis_failures"]


def redis_failures() -> tuple[type[BaseException], ...]:
    """The exceptions of a Redis call that mean "Redis cannot be asked now".

    ValueError and RecursionError: redis-py's pure-Python parser on a malformed or endlessly
    nested reply. Only the kind of failure is ever kept by the callers: Redis's text may
    hold its URL, password included, and no exception of ours chains it.
    """
    from redis.exceptions import RedisError

    return (asyncio.TimeoutError, OSError, RedisError, ValueError, RecursionError)
