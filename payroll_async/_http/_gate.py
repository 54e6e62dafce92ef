"""What every request passes before it is sent: the 429 pause and an optional request budget.

A [`Gate`][payroll_async.Gate] is anything with ``acquire()`` and ``pause(seconds)``.
[`LocalGate`][payroll_async.LocalGate]
is one process's gate; ``payroll_async.fleet.RedisGate`` shares one pause and one budget
across every process that uses the same Redis key.
"""

from __future__ import annotations

import logging
import math
from typing import Protocol, runtime_checkable

from .._core._clock import SYSTEM_CLOCK, Clock
from .._core._exceptions import InvalidArgumentError

__all__ = ["Gate", "GateClosed", "LocalGate"]

logger: logging.Logger = logging.getLogger("payroll_async")


@runtime_checkable
class Gate(Protocol):
    """What a client's requests pass before they are sent, and what a 429 is reported to.

    ```pycon
    >>> class Quiet:
    ...     async def acquire(self) -> None: ...  # until a request may go
    ...     async def pause(self, seconds: float) -> None: ...  # none till then
    ```
    """

    async def acquire(self) -> None:
        """Wait until a request may be sent."""

    async def pause(self, seconds: float) -> None:
        """No request through this gate for ``seconds`` from now (a 429's Retry-After)."""


def check_rate(rate: float | None) -> float | None:
    """Requests per second: a finite number > 0, or None for no budget."""
    if rate is None:
        return None
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate):
        raise InvalidArgumentError(f"rate must be requests per second > 0 or None, got {rate!r}")
    if rate <= 0:
        raise InvalidArgumentError(f"rate must be requests per second > 0 or None, got {rate!r}")
    return float(rate)


class LocalGate:
    """The gate of one process: the 429 pause, and at most ``rate`` requests per second.

    ``pause(seconds)`` holds back every request through this gate until then; a later
    pause can only extend it. With ``rate``, requests are spread evenly, one every
    ``1/rate`` seconds (no burst). Every client of the process that is given the same
    LocalGate shares both.

    ```pycon
    >>> gate = LocalGate(rate=20)
    >>> a = PayrollClient(..., gate=gate)
    >>> b = PayrollClient(..., gate=gate)   # a and b: at most 20 requests/s in all
    ```
    """

    def __init__(self, rate: float | None = None, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.rate: float | None = check_rate(rate)
        """At most this many requests per second (None: no limit of its own)."""
        self._interval = 0.0 if self.rate is None else 1.0 / self.rate
        self._clock = clock
        self._resume_at = 0.0
        """When the pause ends, on the clock (0: never paused)."""
        self._next_slot = 0.0

    def __repr__(self) -> str:
        return f"<LocalGate rate={self.rate}>"

    def is_open(self) -> bool:
        """Whether no pause is in force now."""
        return not self._resume_at or self._resume_at <= self._clock.now()

    def open_now(self) -> bool:
        """Whether ``acquire()`` would return at once and take nothing: no rate, no pause."""
        return not self._interval and self.is_open()

    async def acquire(self) -> None:
        """Wait until no pause is in force and, with a rate, until this request's slot."""
        clock = self._clock
        while True:
            now = clock.now()
            target = max(self._resume_at, now)
            paused_until = self._resume_at
            if self._interval:
                target = max(self._next_slot, target)
                self._next_slot = target + self._interval  # this request's slot is taken
            delay = target - now
            if delay <= 0:
                return
            await clock.sleep(delay)
            if self._resume_at == paused_until:  # not extended by another 429 meanwhile
                return

    async def pause(self, seconds: float) -> None:
        """No request through this gate for ``seconds`` from now."""
        resume_at = self._clock.now() + seconds
        if resume_at > self._resume_at:
            self._resume_at = resume_at
            logger.info("rate limited: pausing all requests for %.2fs", seconds)


class GateClosed(Exception):
    """A pause began while this request waited for a connection: it was not sent."""
