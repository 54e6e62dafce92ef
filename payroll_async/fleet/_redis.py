"""What the fleet's Redis users share: the failures a Redis call can end in (a call's time
is bounded by ``_core._clock.bounded``), and how an outage is told and waited out."""

from __future__ import annotations

import asyncio
import logging

from .._core._clock import Clock

__all__ = ["Outage", "redis_failures"]

logger: logging.Logger = logging.getLogger("payroll_async")

RETRY_REDIS_AFTER = 1.0
"""Seconds between tries of a Redis that is down: one that hangs costs one timeout a
second, not one per request or notification."""


def redis_failures() -> tuple[type[BaseException], ...]:
    """The exceptions of a Redis call that mean "Redis cannot be asked now".

    ValueError and RecursionError: redis-py's pure-Python parser on a malformed or endlessly
    nested reply. Only the kind of failure is ever kept by the callers: Redis's text may
    hold its URL, password included, and no exception of ours chains it.
    """
    from redis.exceptions import RedisError

    return (asyncio.TimeoutError, OSError, RedisError, ValueError, RecursionError)


class Outage:
    """One Redis user's outages: a WARNING when one starts, an INFO when Redis answers
    again, and Redis asked at most once every ``RETRY_REDIS_AFTER`` seconds meanwhile."""

    def __init__(self, clock: Clock, what: str) -> None:
        self._clock = clock
        self._what = what  # who is down, as the log says it: "the fleet's gate 'k'"
        self.down = False
        self._retry_at = 0.0  # while down: when Redis is asked again

    def waiting(self) -> bool:
        """Down, and too soon to ask Redis again."""
        return self.down and self._clock.now() < self._retry_at

    def failed(self, problem: str, reason: str, meanwhile: str) -> None:
        """Redis failed (``problem``, for ``reason``); ``meanwhile`` is what happens now."""
        self._retry_at = self._clock.now() + RETRY_REDIS_AFTER
        if not self.down:
            self.down = True
            logger.warning(
                "%s %s (%s): %s until it answers again", self._what, problem, reason, meanwhile
            )

    def answered(self) -> None:
        """Redis gave an answer that can be used."""
        if self.down:
            self.down = False
            logger.info("Redis answers again: %s is shared again", self._what)
