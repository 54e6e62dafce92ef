"""What every request of a client passes before it is sent: the client-wide 429 pause."""

from __future__ import annotations

import logging

from ._clock import SYSTEM_CLOCK, Clock

__all__ = ["LocalGate"]

logger = logging.getLogger("payroll_async")


class LocalGate:
    """The 429 pause of one process: ``acquire()`` waits while a pause is in force.

    ``pause(seconds)`` holds back every request through this gate until then; a later
    pause can only extend it, never shorten it.
    """

    def __init__(self, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._resume_at = 0.0

    def is_open(self) -> bool:
        """Whether a request may be sent now."""
        return self._resume_at <= self._clock.now()

    async def acquire(self) -> None:
        """Wait until no pause is in force."""
        while True:
            target = self._resume_at
            delay = target - self._clock.now()
            if delay <= 0:
                return
            await self._clock.sleep(delay)
            if self._resume_at == target:  # not extended by another 429 meanwhile
                return

    async def pause(self, seconds: float) -> None:
        """No request through this gate for ``seconds`` from now."""
        resume_at = self._clock.now() + seconds
        if resume_at > self._resume_at:
            self._resume_at = resume_at
            logger.info("rate limited: pausing all requests for %.2fs", seconds)
