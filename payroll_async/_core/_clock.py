"""The time source of retry waits and pauses: the loop's monotonic clock, or a test's."""

from __future__ import annotations

import asyncio
import time

__all__ = ["SYSTEM_CLOCK", "Clock"]


class Clock:
    """Monotonic seconds and an async sleep.

    The SDK asks its clock for every wait it makes (retry backoff, Retry-After, the 429
    pause), so a test can pass one whose time moves only when the code sleeps.

    ```pycon
    >>> class Instant(Clock):
    ...     def __init__(self): self.t = 0.0
    ...     def now(self): return self.t
    ...     async def sleep(self, seconds): self.t += seconds
    >>> client = PayrollClient(url, token, clock=Instant())  # no real waits
    ```
    """

    def now(self) -> float:
        """Monotonic seconds."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        await asyncio.sleep(seconds)


SYSTEM_CLOCK = Clock()
